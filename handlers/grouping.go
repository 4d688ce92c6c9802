package handlers

import (
	"cmp"
	"net/url"
	"slices"
	"strconv"
	"time"

	"myco.dev/sessions"
	"myco.dev/views"
)

// The sessions page's grouping and paging: a page renders a bounded number of rows
// whatever the number of sessions, so that 10,000 of them load as fast as 60.
const (
	groupFold     = 5   // a project's rows shown before "N more in this project"
	groupsPerPage = 30  // project groups on one page
	rowsPerPage   = 100 // rows on one page of the by-date view, or of one project
)

// byActivity orders sessions by their last activity, newest first, then by id.
func byActivity(list []sessions.Listed) {
	slices.SortStableFunc(list, func(a, b sessions.Listed) int {
		if c := b.Modified.Compare(a.Modified); c != 0 {
			return c
		}
		return cmp.Compare(b.ID, a.ID)
	})
}

// listPage is one page of the sessions page: its groups, and the pages around it.
type listPage struct {
	groups     []views.SessionGroup
	prev, next int // page numbers; 0 for none
}

// projectGroups groups list (ordered by activity) by project, the group of the most recent
// activity first; each group shows its groupFold most recent rows and links to the rest.
// link makes the URL of a page of the list with extra query parameters.
func (s *server) projectGroups(list []sessions.Listed, page int, link func(url.Values) string) listPage {
	var order []string
	by := map[string][]int{} // project -> its rows' indices in list
	for i := range list {
		p := cmp.Or(list[i].Project, list[i].Cwd)
		if _, ok := by[p]; !ok {
			order = append(order, p)
		}
		by[p] = append(by[p], i)
	}
	var out listPage
	first := (page - 1) * groupsPerPage
	if first >= len(order) && page > 1 {
		first = max(0, len(order)-groupsPerPage)
	}
	last := min(len(order), first+groupsPerPage)
	if first > 0 {
		out.prev = page - 1
	}
	if last < len(order) {
		out.next = page + 1
	}
	for _, p := range order[first:last] {
		idx := by[p]
		g := views.SessionGroup{Title: shortDir(p, s.Home), Path: p, Count: len(idx)}
		if p == "" {
			g.Title = "Sessions that cannot be opened"
		}
		if len(idx) > groupFold {
			g.More = len(idx) - groupFold
			g.MoreURL = link(url.Values{"project": {p}})
			idx = idx[:groupFold]
		}
		rows := make([]sessions.Listed, len(idx))
		for k, i := range idx {
			rows[k] = list[i]
		}
		g.Rows = s.rows(rows, "")
		out.groups = append(out.groups, g)
	}
	return out
}

// flatGroups pages list (ordered by activity) rowsPerPage rows at a time; by date, each
// page's rows are grouped Today, Yesterday, This week and Older, else they are one group
// titled title.
func (s *server) flatGroups(list []sessions.Listed, page int, byDate bool, title string, now time.Time) listPage {
	var out listPage
	first := (page - 1) * rowsPerPage
	if first >= len(list) && page > 1 {
		first = max(0, len(list)-rowsPerPage)
	}
	last := min(len(list), first+rowsPerPage)
	if first > 0 {
		out.prev = page - 1
	}
	if last < len(list) {
		out.next = page + 1
	}
	rows := list[first:last]
	if !byDate {
		if len(rows) > 0 {
			out.groups = []views.SessionGroup{{Title: title, Count: len(list), Rows: s.rows(rows, "")}}
		}
		return out
	}
	for _, l := range rows {
		name := dateGroup(l.Modified, now)
		if n := len(out.groups); n == 0 || out.groups[n-1].Title != name {
			out.groups = append(out.groups, views.SessionGroup{Title: name})
		}
		g := &out.groups[len(out.groups)-1]
		g.Rows = append(g.Rows, s.rows([]sessions.Listed{l}, "")...)
		g.Count++
	}
	return out
}

// dateGroup names the group of a session last active at t: Today, Yesterday, This week
// (the seven days before) or Older, in local time.
func dateGroup(t, now time.Time) string {
	t, now = t.Local(), now.Local()
	day := func(x time.Time) time.Time { return time.Date(x.Year(), x.Month(), x.Day(), 0, 0, 0, 0, x.Location()) }
	today := day(now)
	switch d := day(t); {
	case !d.Before(today):
		return "Today"
	case !d.Before(today.AddDate(0, 0, -1)):
		return "Yesterday"
	case !d.Before(today.AddDate(0, 0, -7)):
		return "This week"
	}
	return "Older"
}

// The sidebar's rows: those of the open session's project first, then the others.
const (
	sidebarProject = 40
	sidebarOthers  = 20
)

// sidebar is the session page's sidebar: the sessions of project (the open session's)
// first, by last activity, then the most recent others, each part bounded; the open
// session is always among them (the page scrolls it into view).
func (s *server) sidebar(list []sessions.Listed, current, project string) []views.SessionRow {
	byActivity(list)
	var mine, others []sessions.Listed
	for _, l := range list {
		switch {
		case l.Project == project && (len(mine) < sidebarProject || l.ID == current):
			mine = append(mine, l)
		case l.Project != project && len(others) < sidebarOthers:
			others = append(others, l)
		}
	}
	out := s.rows(mine, current)
	if len(out) > 0 {
		out[0].GroupStart = "This project"
	}
	rest := s.rows(others, current)
	if len(rest) > 0 {
		rest[0].GroupStart = "Other projects"
	}
	return append(out, rest...)
}

// pageParam reads ?page=, 1 when absent.
func pageParam(v string) (int, bool) {
	if v == "" {
		return 1, true
	}
	n, err := strconv.Atoi(v)
	return n, err == nil && n >= 1 && n <= 1_000_000
}
