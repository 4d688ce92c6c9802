package handlers

import (
	"cmp"
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"

	"myco.dev/agent/model"
	"myco.dev/hosts/tools"
	"myco.dev/internal/humanize"
	"myco.dev/search"
	"myco.dev/sessions"
	"myco.dev/static"
	"myco.dev/views"
)

// pageMessages bounds the messages a session page renders; older ones load on demand.
const pageMessages = 300

func (s *server) chrome(title, nav string) views.Chrome {
	c := views.Chrome{Title: title, Profile: s.Profile, Base: s.base, Nav: nav}
	for _, n := range []string{static.AppCSS, static.SyntaxCSS} {
		if u := s.Assets.URL(n); u != "" {
			c.CSS = append(c.CSS, u)
		}
	}
	for _, n := range []string{static.HTMX, static.SSE, static.AppJS, static.NotifyJS} {
		if u := s.Assets.URL(n); u != "" {
			c.JS = append(c.JS, u)
		}
	}
	c.MissingAssets = s.Assets.Missing(static.HTMX, static.SSE)
	c.ThemeJS = s.Assets.URL(static.ThemeJS)
	c.Warning = s.Warning
	if s.ConfigError != "" {
		c.Warning = configMessage(s.ConfigError)
	}
	c.EventsWorker = s.Assets.URL(static.EventsWorker)
	if s.Profiles != nil {
		c.Profiles = s.Profiles()
	}
	return c
}

func (s *server) sessionURL(id string) string { return s.base + "/s/" + id + "/" }

// sessionsPage lists the sessions: ?filter=active|archived|all, ?q= searches titles, ?cwd=
// keeps those of one directory. An htmx request (the search box, the directory filter)
// gets the list alone.
func (s *server) sessionsPage(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	filter := q.Get("filter")
	o := sessions.ListOptions{Query: q.Get("q"), Cwd: q.Get("cwd"), Project: q.Get("project")}
	if o.Cwd != "" && !filepath.IsAbs(o.Cwd) {
		return httpError(http.StatusBadRequest, "The directory to list must be an absolute path, not "+quote(o.Cwd)+".")
	}
	if o.Project != "" && !filepath.IsAbs(o.Project) {
		return httpError(http.StatusBadRequest, "The project to list must be an absolute path, not "+quote(o.Project)+".")
	}
	view := q.Get("view")
	switch view {
	case "", "project":
		view = "project"
	case "date":
	default:
		return httpError(http.StatusBadRequest, "The view must be project or date, not "+strconv.Quote(view)+".")
	}
	page, ok := pageParam(q.Get("page"))
	if !ok {
		return httpError(http.StatusBadRequest, "The page must be a whole number from 1.")
	}
	switch filter {
	case "archived":
		o.Archived = true
	case "all":
		o.All = true
	case "", "active":
		filter = "active"
	default:
		return httpError(http.StatusBadRequest, "The filter must be active, archived or all, not "+strconv.Quote(filter)+".")
	}
	// One listing of every session serves the rows and the directories to filter by.
	every, err := s.Sessions.List(r.Context(), sessions.ListOptions{All: true, IncludeHidden: true})
	if err != nil {
		return err
	}
	list := sessions.Filter(every, o)
	if o.Cwd != "" {
		o.Cwd = filepath.Clean(o.Cwd)
	}
	if o.Project != "" {
		o.Project = filepath.Clean(o.Project)
	}
	byActivity(list)
	link := func(extra url.Values) string {
		v := url.Values{}
		for k, val := range map[string]string{"filter": filter, "q": o.Query, "cwd": o.Cwd, "project": o.Project} {
			if val != "" && val != "active" {
				v.Set(k, val)
			}
		}
		if view != "project" {
			v.Set("view", view)
		}
		for k, val := range extra {
			v[k] = val
		}
		return s.base + "/?" + v.Encode()
	}
	var lp listPage
	switch {
	case o.Project != "":
		lp = s.flatGroups(list, page, false, shortDir(o.Project, s.Home), time.Now())
	case view == "date":
		lp = s.flatGroups(list, page, true, "", time.Now())
	default:
		lp = s.projectGroups(list, page, link)
	}
	v := views.SessionsView{Chrome: s.chrome("Sessions", "sessions"), Filter: filter, Query: o.Query,
		Models: s.modelKeys(), Model: s.Default, Cwd: o.Cwd, Dirs: s.dirsOf(every, o.Cwd),
		View: view, Project: o.Project, Groups: lp.groups}
	for _, g := range lp.groups {
		v.Rows = append(v.Rows, g.Rows...)
	}
	if page == 1 {
		v.Hits, v.SearchNote = s.contentHits(r.Context(), search.Query{Text: o.Query, Project: o.Project, Archived: filter != "active", Limit: 20})
	}
	if lp.prev > 0 {
		v.PrevURL = link(url.Values{"page": {strconv.Itoa(lp.prev)}})
	}
	if lp.next > 0 {
		v.NextURL = link(url.Values{"page": {strconv.Itoa(lp.next)}})
	}
	if msg := q.Get("msg"); msg != "" {
		v.Message = oneLine(msg, 200)
	}
	if n, ok := s.Sessions.SnapshotSize(); ok {
		v.SnapshotSpace = byteSize(int(n))
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if r.Header.Get("HX-Request") != "" {
		return views.SessionList(v).Render(r.Context(), w)
	}
	return views.SessionsPage(v).Render(r.Context(), w)
}

func (s *server) rows(list []sessions.Listed, current string) []views.SessionRow {
	out := make([]views.SessionRow, 0, len(list))
	for _, l := range list {
		if l.Problem != "" {
			l.Title = l.ID + ": " + l.Problem // a file this myco cannot open, listed rather than hidden
		}
		row := views.SessionRow{ID: l.ID, URL: s.sessionURL(l.ID), Title: l.Title, Model: l.Model,
			Activity: ago(l.Modified), ISOTime: l.Modified.Format(time.RFC3339), Busy: l.Busy, Archived: l.Archived,
			Current: l.ID == current, State: l.State, Turns: l.Turns, Preview: l.Preview}
		if l.WaitingBelow != "" {
			row.WaitingURL = s.sessionURL(l.WaitingBelow)
		}
		if l.Problem == "" && (l.Cost.Known || len(l.SpentBy) > 0) {
			row.Cost = humanize.Cost(l.Cost.Amount, l.Cost.Known)
		}
		if l.Cwd != "" {
			row.Cwd, row.CwdPath, row.CwdURL = tailDir(shortDir(l.Cwd, s.Home), rowDirRunes), l.Cwd, s.sessionsURL(l.Cwd)
		}
		out = append(out, row)
	}
	return out
}

func (s *server) modelKeys() []string {
	out := make([]string, 0, len(s.Models))
	for _, m := range s.Models {
		out = append(out, m.Key)
	}
	return out
}

func (s *server) model(key string) ModelInfo {
	for _, m := range s.Models {
		if m.Key == key {
			return m
		}
	}
	return ModelInfo{Key: key}
}

// ago says how long ago t was, the way a list says it.
func ago(t time.Time) string {
	d := time.Since(t)
	switch {
	case t.IsZero():
		return ""
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return strconv.Itoa(int(d.Minutes())) + " min ago"
	case d < 24*time.Hour:
		return strconv.Itoa(int(d.Hours())) + " h ago"
	case d < 7*24*time.Hour:
		return t.Local().Format("Mon 15:04")
	}
	return t.Local().Format("Jan 2, 2006")
}

// sessionPage shows the session's active thread.
func (s *server) sessionPage(w http.ResponseWriter, r *http.Request) error {
	return s.showThread(w, r, "")
}

// threadPage shows one thread of the session; an earlier thread is read-only.
func (s *server) threadPage(w http.ResponseWriter, r *http.Request) error {
	return s.showThread(w, r, chi.URLParam(r, "thread"))
}

func (s *server) showThread(w http.ResponseWriter, r *http.Request, threadID string) error {
	id := chi.URLParam(r, "id")
	cursor := s.Sessions.EventID() // before the snapshot: nothing after it is missed
	sess, st, err := s.Sessions.Snapshot(r.Context(), id)
	if err != nil {
		return err
	}
	v, err := s.sessionView(r.Context(), sess, st, threadID)
	if err != nil {
		return err
	}
	v.Approvals = s.approvals(r.Context(), sess, s.approver(r))
	if !v.ReadOnly {
		v.EventsURL = s.sessionURL(id) + "events?after=" + url.QueryEscape(cursor)
		s.withLive(&v, sess.Cwd, cursor) // what streamed before the cursor, at once
		// A first message the new-session page could not send comes back to the composer.
		if draft := r.URL.Query().Get("draft"); draft != "" && len(draft) <= maxForm {
			v.Composer.Text = draft
			v.Composer.Error = "The session was made, but its first message was not sent: " + oneLine(r.URL.Query().Get("why"), 300) + " Send it again when that is fixed."
		}
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	return views.SessionPage(v).Render(r.Context(), w)
}

// sessionView is the page of thread threadID of sess ("" for the active one).
func (s *server) sessionView(ctx context.Context, sess *sessions.Session, st sessions.Status, threadID string) (views.SessionView, error) {
	th := sess.Latest()
	if threadID != "" {
		if th = sess.Thread(threadID); th == nil {
			return views.SessionView{}, errNotFound
		}
	}
	v := views.SessionView{Chrome: s.chrome(views.TitlePrefix(s.Sessions.State(sess, st))+sessionTitle(sess.Title), "sessions"), ID: sess.ID, URL: s.sessionURL(sess.ID), Title: sess.Title,
		Archived: sess.Archived, Thread: th.ID, ReadOnly: th != sess.Latest(),
		Cwd: shortDir(sess.Cwd, s.Home), CwdPath: sess.Cwd, FilesURL: s.filesURL(sess.ID)}
	v.Chrome.Cwd, v.Chrome.Main = sess.Cwd, views.IDTranscript
	if sess.Parent != "" {
		v.Parent = &views.Link{Title: "the parent session", URL: s.sessionURL(sess.Parent)}
	}
	for i := len(sess.Threads) - 1; i >= 0; i-- {
		t := sess.Threads[i]
		label := fmt.Sprintf("%s · %s", t.ID, t.Created.Local().Format("Jan 2 15:04"))
		if t == sess.Latest() {
			label += " (active)"
		}
		tl := views.ThreadLink{ID: t.ID, URL: s.sessionURL(sess.ID) + "t/" + t.ID, Label: label, Current: t == th, Active: t == sess.Latest()}
		if t.Reason == "compaction" && len(t.Entries) > 0 {
			tl.Summary = s.md.render(t.Entries[0].Message.Text(), s.mdOptionsFor(sess.ID, sess.Cwd))
		}
		v.Threads = append(v.Threads, tl)
	}
	p := s.projector(sess.ID, th).state(sess, st)
	p.children, p.cwd = s.childIDs(ctx, sess.ID), sess.Cwd
	from := max(0, len(th.Entries)-pageMessages)
	v.Messages = p.messages(from, len(th.Entries))
	if from > 0 {
		v.Earlier = from
		v.EarlyURL = fmt.Sprintf("%searlier?thread=%s&before=%d", s.sessionURL(sess.ID), th.ID, from)
	}
	v.Live.Empty = len(v.Messages) == 0 && v.Earlier == 0 && !v.ReadOnly
	v.Status = s.status(sess, st)
	if !v.ReadOnly {
		v.Project = s.projectView(sess)
	}
	v.Cost = v.Status.Cost
	v.Composer = s.composer(sess, st, v.ReadOnly)
	v.Queue = s.queue(sess, st)
	// The sidebar and the tree of children are extras: the page shows without them, and
	// the log says why.
	if list, err := s.Sessions.List(ctx, sessions.ListOptions{}); err != nil {
		s.Log.Warn("list the sessions for the sidebar", "session_id", sess.ID, "err", err)
	} else {
		v.Sidebar = s.sidebar(list, sess.ID, s.Sessions.Project(sess.Cwd))
	}
	if tree, err := s.Sessions.Tree(ctx, sess.ID); err != nil {
		s.Log.Warn("read the tree of children", "session_id", sess.ID, "err", err)
	} else if len(tree.Children) > 0 {
		v.Tree = s.treeView(tree)
	}
	return v, nil
}

// sessionTitle is the page title of a session titled title.
func sessionTitle(title string) string {
	if title == "" {
		return "New session"
	}
	return title
}

func orUntitled(title, id string) string {
	if title == "" {
		return "Untitled " + id
	}
	return title
}

// compactHintAt is the share of the context window past which the status bar offers
// Compact, for a model without auto_compact_at.
const compactHintAt = 0.8

// status is the status bar of sess.
func (s *server) status(sess *sessions.Session, st sessions.Status) views.StatusView {
	v := views.StatusView{ID: sess.ID, StopURL: s.sessionURL(sess.ID) + "stop", Busy: st.Busy, Job: st.Job, JobID: st.JobID,
		Elsewhere: st.Elsewhere, Model: st.Model, Used: sess.Latest().ContextUsed(), Window: s.model(st.Model).ContextWindow,
		State: s.Sessions.State(sess, st)}
	if c := s.Sessions.CostOf(sess); c.Known || sess.Spent() != (model.Usage{}) {
		v.Cost = humanize.Cost(c.Amount, c.Known)
	}
	if st.Stopped != nil {
		v.Stopped = st.Stopped.Error()
	}
	if m := s.model(st.Model); !st.Busy && st.Elsewhere == "" && m.ContextWindow > 0 &&
		float64(v.Used) >= cmp.Or(m.AutoCompactAt, compactHintAt)*float64(m.ContextWindow) {
		v.CompactURL = s.sessionURL(sess.ID) + "compact"
	}
	if s.Hosts != nil {
		for _, h := range s.Hosts() {
			v.Hosts = append(v.Hosts, views.HostView{Name: h.Name, State: h.State, Error: h.Error})
		}
	}
	return v
}

// queue is the messages of sess that wait for the running turn to end.
func (s *server) queue(sess *sessions.Session, st sessions.Status) views.QueueView {
	var v views.QueueView
	base := s.sessionURL(sess.ID) + "queue/"
	for _, q := range sess.Queue {
		it := views.QueuedView{ID: q.ID, Text: q.Text(), EditURL: base + q.ID + "/edit", DeleteURL: base + q.ID + "/delete"}
		for _, p := range q.Parts {
			if p.Kind == model.KindImage || p.Name != "" {
				it.Files++
			}
		}
		v.Items = append(v.Items, it)
	}
	if len(v.Items) > 0 && !st.Busy && st.Elsewhere == "" {
		v.RunURL = base + "run"
	}
	return v
}

func (s *server) composer(sess *sessions.Session, st sessions.Status, readOnly bool) views.ComposerView {
	c := views.ComposerView{Action: s.sessionURL(sess.ID) + "submit", ModelURL: s.sessionURL(sess.ID) + "model", CompleteURL: s.sessionURL(sess.ID) + "complete",
		Models: s.modelKeys(), Model: st.Model, Disabled: readOnly}
	if !readOnly && !s.known(st.Model) && len(s.Models) > 0 {
		// The session's model left the catalog: the picker offers it first, as it is, and the
		// catalog's models to choose from.
		c.Models = append([]string{st.Model}, c.Models...)
		c.Error = "This session's model " + quote(st.Model) + " is no longer in the catalog: choose another model to go on."
	}
	return c
}

// earlier renders a page of older messages of a thread (?thread=, ?before=).
func (s *server) earlier(w http.ResponseWriter, r *http.Request) error {
	id := chi.URLParam(r, "id")
	sess, _, err := s.Sessions.Snapshot(r.Context(), id)
	if err != nil {
		return err
	}
	th := sess.Thread(r.URL.Query().Get("thread"))
	before, err := strconv.Atoi(r.URL.Query().Get("before"))
	if th == nil || err != nil || before < 0 || before > len(th.Entries) {
		return httpError(http.StatusBadRequest, "earlier needs a thread of the session and before, an entry number within it.")
	}
	from := max(0, before-pageMessages)
	more := ""
	if from > 0 {
		more = fmt.Sprintf("%searlier?thread=%s&before=%d", s.sessionURL(id), th.ID, from)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	p := s.projector(id, th)
	p.cwd = sess.Cwd
	return views.Earlier(from, more, p.messages(from, before)).Render(r.Context(), w)
}

// toolOutput renders the whole output of a tool call (the card's "show all").
func (s *server) toolOutput(w http.ResponseWriter, r *http.Request) error {
	sess, _, err := s.Sessions.Snapshot(r.Context(), chi.URLParam(r, "id"))
	if err != nil {
		return err
	}
	th := sess.Thread(chi.URLParam(r, "thread"))
	if th == nil {
		return errNotFound
	}
	res, ok := s.projector(sess.ID, th).results[chi.URLParam(r, "call")]
	if !ok {
		return errNotFound
	}
	text := res.res.Text
	if res.res.Stopped {
		text = sessions.PrintedBeforeStop(text)
	}
	if r.URL.Query().Get("format") == "text" { // Copy: the output as it was printed
		if c, ok := findCall(th, len(th.Entries), res.res.CallID); ok && c.Name == "bash" {
			text = withoutBashEnd(text)
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		_, err := w.Write([]byte(text))
		return err
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	return views.ToolOutput(text).Render(r.Context(), w)
}

// image serves an image of a message (an attachment) or of a tool result, with the type
// its magic number says, never sniffed by the browser.
func (s *server) image(w http.ResponseWriter, r *http.Request) error {
	sess, _, err := s.Sessions.Snapshot(r.Context(), chi.URLParam(r, "id"))
	if err != nil {
		return err
	}
	th := sess.Thread(chi.URLParam(r, "thread"))
	entry, err1 := strconv.Atoi(chi.URLParam(r, "entry"))
	part, err2 := strconv.Atoi(chi.URLParam(r, "part"))
	n, err3 := strconv.Atoi(chi.URLParam(r, "n"))
	if th == nil || err1 != nil || err2 != nil || err3 != nil || entry < 0 || entry >= len(th.Entries) {
		return errNotFound
	}
	parts := th.Entries[entry].Message.Parts
	if part < 0 || part >= len(parts) {
		return errNotFound
	}
	var img *model.Image
	switch p := parts[part]; {
	case p.Kind == model.KindImage && n == 0:
		img = p.Image
	case p.Kind == model.KindToolResult && p.ToolResult != nil && n >= 0 && n < len(p.ToolResult.Images):
		img = &p.ToolResult.Images[n]
	}
	if img == nil {
		return errNotFound
	}
	data, err := base64.StdEncoding.DecodeString(img.Data)
	if err != nil {
		return errNotFound
	}
	typ := tools.SniffImage(data)
	if typ == "" {
		return errNotFound
	}
	h := w.Header()
	h.Set("Content-Type", typ)
	h.Set("Cache-Control", "private, max-age=86400")
	h.Set("Content-Security-Policy", documentCSP)
	_, err = w.Write(data)
	return err
}

// mdOptions are the Markdown options of transcripts: workspace paths link to the viewer.
func (s *server) mdOptions() views.MarkdownOptions {
	return views.MarkdownOptions{WorkspaceDir: s.WorkspaceDir, WorkspaceURL: s.base + "/workspace/", WorkspaceRawQuery: "raw=1"}
}

// treeView is the page's roll-up of a session's descendants.
func (s *server) treeView(tree *sessions.TreeNode) *views.TreeView {
	t := tree.Totals()
	v := &views.TreeView{Sessions: t.Sessions, Busy: t.Busy, OpenCalls: t.OpenCalls,
		Tokens: humanize.Thousands(t.Spent.Input + t.Spent.Output), Cost: humanize.Cost(t.Cost.Amount, t.Cost.Known), Work: humanize.Duration(t.Work)}
	var walk func(n *sessions.TreeNode)
	walk = func(n *sessions.TreeNode) {
		for _, c := range n.Children {
			state := views.StateLabel(c.State)
			if c.LastTurn == "" || c.LastTurn == sessions.TurnNone {
				state = "not started"
			}
			ct := c.Totals().Cost
			row := views.TreeRow{Title: orUntitled(c.Title, c.ID), URL: s.sessionURL(c.ID), Model: c.Model,
				State: state, Cost: humanize.Cost(ct.Amount, ct.Known), Depth: c.Depth, Indent: "d" + strconv.Itoa(min(c.Depth, 6))}
			if s.Sessions.CapturesFiles() {
				// The child's changed files, loaded by the row: a capture of its directory.
				row.Changes = &views.TurnChangesView{DOMID: "changes-" + c.ID, URL: s.changesURL(c.ID, nil), SummaryURL: s.changesURL(c.ID, nil) + "?summary=1"}
			}
			v.Rows = append(v.Rows, row)
			walk(c)
		}
	}
	walk(tree)
	return v
}

// childIDs are the ids of session id's children, for the links of the calls that made them.
func (s *server) childIDs(ctx context.Context, id string) []string {
	list, err := s.Sessions.List(ctx, sessions.ListOptions{Parent: id, All: true})
	if err != nil {
		s.Log.Warn("list the children", "session_id", id, "err", err) // their links show as plain text
		return nil
	}
	out := make([]string, 0, len(list))
	for _, l := range list {
		out = append(out, l.ID)
	}
	return out
}

// withLive puts in v's live region what streamed before cursor and returns the renderer
// that carries on from there; cwd is the session's directory.
func (s *server) withLive(v *views.SessionView, cwd, cursor string) *views.LiveMarkdown {
	empty := v.Live.Empty
	var md *views.LiveMarkdown
	v.Live, md = s.live(v.ID, cwd, cursor)
	v.Live.Empty = empty && md == nil && v.Live.Thinking == ""
	return md
}

// live is the live region of session id's page whose stream starts after cursor: the
// response that streamed up to it, its settled Markdown rendered and its open end as shown,
// and the renderer that carries on from there (nil when nothing streams). cwd is the
// session's directory, which its links open.
func (s *server) live(id, cwd, cursor string) (views.LiveView, *views.LiveMarkdown) {
	text, thinking := s.Sessions.Streaming(id, cursor)
	v := views.LiveView{Thinking: thinking}
	if text == "" {
		return v, nil
	}
	md := views.NewLiveMarkdown(s.mdOptionsFor(id, cwd))
	md.Delta(text)
	v.Settled, v.Open = md.Settled(), md.Shown()
	return v, md
}
