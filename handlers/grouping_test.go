package handlers

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"myco.dev/internal/fakemodel"
)

// TestSessionsGrouped (issue 32): the sessions page groups by project (the git root of a
// session's directory, else the directory), the most recently active project first, its
// sessions by last activity and folded beyond five with a link to the rest; by date it
// groups Today, Yesterday, This week and Older; both page; the API's rows carry the
// project, the state, the turns and the last answer's first line.
func TestSessionsGrouped(t *testing.T) {
	ts := newTestServer(t, fakemodel.Turn{Text: "The lexer is fine.\nMore below."})
	repo := filepath.Join(ts.dir, "repo")
	for _, d := range []string{filepath.Join(repo, ".git"), filepath.Join(repo, "cmd", "tool"), filepath.Join(ts.dir, "notes")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	mk := func(title, cwd string, age time.Duration) string {
		_, c := ts.call(t, "POST", "/sessions", map[string]any{"request_id": title, "title": title, "cwd": cwd})
		id := c["session_id"].(string)
		at := time.Now().Add(-age)
		if err := os.Chtimes(ts.mgr.Store().Path(id), at, at); err != nil {
			t.Fatal(err)
		}
		return id
	}
	answered := mk("answered", filepath.Join(repo, "cmd", "tool"), 0)
	ts.call(t, "POST", "/sessions/"+answered+"/actions", map[string]any{"request_id": "go", "action": "submit", "text": "check the lexer"})
	ts.waitAPIIdle(t, answered)
	for i := 1; i <= 6; i++ {
		mk(fmt.Sprintf("repo-%d", i), repo, time.Duration(i)*time.Minute)
	}
	mk("notes", filepath.Join(ts.dir, "notes"), 30*time.Hour)
	mk("old", filepath.Join(ts.dir, "notes"), 40*24*time.Hour)
	mk("lastweek", filepath.Join(ts.dir, "notes"), 4*24*time.Hour+time.Hour)

	_, page := ts.do(t, "GET", "/profiles/default/", nil, nil)
	heads := regexp.MustCompile(`<h2 title="([^"]*)">`).FindAllStringSubmatch(page, -1)
	if len(heads) != 2 || heads[0][1] != repo || heads[1][1] != filepath.Join(ts.dir, "notes") {
		t.Fatalf("project groups = %v, want %s then %s/notes", heads, repo, ts.dir)
	}
	repoPart := page[strings.Index(page, heads[0][0]):strings.Index(page, heads[1][0])]
	titles := regexp.MustCompile(`class="title" href="[^"]*">([^<]*)</a>`).FindAllStringSubmatch(repoPart, -1)
	var got []string
	for _, m := range titles {
		got = append(got, m[1])
	}
	if strings.Join(got, " ") != "answered repo-1 repo-2 repo-3 repo-4" {
		t.Errorf("the repo's rows = %v, want the five most recent, newest first", got)
	}
	if !strings.Contains(repoPart, "2 more in") || !strings.Contains(repoPart, "7 sessions") {
		t.Errorf("the repo's group does not fold its two oldest sessions")
	}
	for _, want := range []string{"The lexer is fine.", "1 turn", `class="state done"`} {
		if !strings.Contains(repoPart, want) {
			t.Errorf("the answered row lacks %q", want)
		}
	}
	_, all := ts.do(t, "GET", "/profiles/default/?project="+repo, nil, nil)
	if n := strings.Count(all, `class="session-row`); n != 7 {
		t.Errorf("the repo's page lists %d sessions, want 7", n)
	}

	_, byDate := ts.do(t, "GET", "/profiles/default/?view=date", nil, nil)
	dates := regexp.MustCompile(`<h2 title="">([^<]*)</h2>`).FindAllStringSubmatch(byDate, -1)
	var names []string
	for _, m := range dates {
		names = append(names, m[1])
	}
	if strings.Join(names, ",") != "Today,Yesterday,This week,Older" && strings.Join(names, ",") != "Today,This week,Older" {
		t.Errorf("date groups = %v, want Today, Yesterday, This week, Older", names)
	}

	_, list := ts.call(t, "GET", "/sessions?project="+repo, nil)
	rows := list["sessions"].([]any)
	if len(rows) != 7 {
		t.Fatalf("?project= lists %d, want 7", len(rows))
	}
	for _, r := range rows {
		row := r.(map[string]any)
		if row["project"] != repo {
			t.Errorf("row %v: project %v, want %s", row["title"], row["project"], repo)
		}
		if row["title"] == "answered" && (row["turns"] != float64(1) || row["preview"] != "The lexer is fine." || row["state"] != "done") {
			t.Errorf("the answered row = %v", row)
		}
	}

	// The sidebar: the open session's project first, the open one among them.
	notes := rows[0].(map[string]any)["session_id"].(string) // any repo session
	_, sp := ts.do(t, "GET", "/profiles/default/s/"+notes+"/", nil, nil)
	side := sp[strings.Index(sp, `<aside class="sidebar"`):strings.Index(sp, `</aside>`)]
	if !strings.Contains(side, "This project</li>") || !strings.Contains(side, `id="side-`+notes+`" class="current`) ||
		strings.Index(side, "repo-") > strings.Index(side, "Other projects") || strings.Index(side, ">notes<") < strings.Index(side, "Other projects") {
		t.Errorf("the sidebar does not list the open session's project first:\n%s", side)
	}

	// Paging: a page holds at most rowsPerPage rows, and links to the next.
	for i := 0; i < rowsPerPage; i++ {
		mk(fmt.Sprintf("many-%d", i), ts.dir, time.Duration(i+10)*time.Minute)
	}
	_, first := ts.do(t, "GET", "/profiles/default/?view=date", nil, nil)
	if n := strings.Count(first, `class="session-row`); n != rowsPerPage || !strings.Contains(first, `rel="next"`) {
		t.Errorf("the first page of %d sessions has %d rows (want %d) and a next link %v", rowsPerPage+10, n, rowsPerPage, strings.Contains(first, `rel="next"`))
	}
	_, second := ts.do(t, "GET", "/profiles/default/?view=date&page=2", nil, nil)
	if n := strings.Count(second, `class="session-row`); n != 10 || !strings.Contains(second, `rel="prev"`) {
		t.Errorf("the second page has %d rows, want 10, and a link back", n)
	}
}
