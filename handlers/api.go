package handlers

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"myco.dev/agent/model"
	"myco.dev/api"
	"myco.dev/internal/web"
	"myco.dev/sessions"
)

// The JSON action API under /profiles/NAME/api/: agents (a parent's bash tool, with curl)
// create hidden child sessions, hand them work, and poll or stream until it is done. See
// docs/browser.md.

// maxAPIBody bounds a request body of the API.
const maxAPIBody = 1 << 20

// apiPing is the interval of /api/events' ping event.
const apiPing = 15 * time.Second

// api adapts an API handler that takes the query parameters params: a request with
// another parameter is refused (see [checkQuery]); the handler's result is written as JSON
// with status 200 (or the status withStatus gives it), and its error in the error
// envelope.
func (s *server) api(params []apiParam, f func(w http.ResponseWriter, r *http.Request) (any, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := checkQuery(params, r.URL.Query()); err != nil {
			web.WriteError(w, s.errors.Answer(r, err))
			return
		}
		out, err := f(w, r)
		if err != nil {
			web.WriteError(w, s.errors.Answer(r, err))
			return
		}
		if out == nil {
			return // a stream, or text, already written
		}
		status := http.StatusOK
		if sr, ok := out.(statusResult); ok {
			status, out = sr.status, sr.v
		}
		web.WriteJSON(w, status, out)
	}
}

type statusResult struct {
	status int
	v      any
}

// withStatus makes a result answer status instead of 200.
func withStatus(status int, v any) any { return statusResult{status, v} }

// apiError is an answer of the API without a cause: a request it refuses.
func apiError(status int, code, msg string) error { return web.NewError(status, code, msg) }

// decode reads a JSON request body into v (see [web.DecodeJSON]), at most maxAPIBody bytes.
func decode(w http.ResponseWriter, r *http.Request, v any) error {
	return web.DecodeJSON(w, r, v, maxAPIBody)
}

func missing(field string) error { return web.MissingField(field) }

// --- Sessions ---------------------------------------------------------------------------

// apiCreate creates a session (a hidden child when parent_session is set; a fork of it
// with fork: true), idempotent by request_id, also across a restart.
func (s *server) apiCreate(w http.ResponseWriter, r *http.Request) (any, error) {
	var req api.CreateRequest
	if err := decode(w, r, &req); err != nil {
		return nil, err
	}
	if err := s.configured(); err != nil {
		return nil, err
	}
	if req.Fork && req.ParentSession == "" {
		return nil, apiError(http.StatusBadRequest, "invalid_field", "fork: true needs parent_session")
	}
	if req.Model != "" && !s.known(req.Model) {
		return nil, apiError(http.StatusBadRequest, "unknown_model", "no model "+strconv.Quote(req.Model)+" in the catalog; the models are "+strings.Join(s.modelKeys(), ", "))
	}
	id, created, err := s.Sessions.CreateRequest(r.Context(), req.RequestID, sessions.CreateOptions{Model: req.Model, Title: req.Title,
		Parent: req.ParentSession, Hidden: req.ParentSession != "", Fork: req.Fork, Cwd: req.Cwd, MaxCost: req.MaxCost})
	if err != nil {
		return nil, err
	}
	out := api.CreateAnswer{SessionID: id, RequestID: req.RequestID, Created: created,
		URL: s.sessionURL(id), APIURL: s.base + "/api/sessions/" + id, ParentSession: req.ParentSession}
	if created {
		return withStatus(http.StatusCreated, out), nil
	}
	return out, nil
}

// apiList lists sessions newest first, a page of ?limit= at a time from ?cursor=:
// ?include_hidden=true adds children, ?archived=true lists the archived ones, ?archived=all
// both, ?parent=ID one session's children, ?cwd=DIR those that work in DIR, ?q= those whose
// title or id has it, ?state=needs_you,failed those in one of the states, ?project=DIR
// those of one project (a git root, else a directory).
func (s *server) apiList(w http.ResponseWriter, r *http.Request) (any, error) {
	q := r.URL.Query()
	o := sessions.ListOptions{Query: q.Get("q"), Parent: q.Get("parent"), Cwd: q.Get("cwd"), Project: q.Get("project")}
	if o.Cwd != "" && !filepath.IsAbs(o.Cwd) {
		return nil, apiError(http.StatusBadRequest, "invalid_field", "cwd "+strconv.Quote(o.Cwd)+" is not an absolute path")
	}
	switch q.Get("include_hidden") {
	case "", "false", "0":
	case "true", "1":
		o.IncludeHidden = true
	default:
		return nil, apiError(http.StatusBadRequest, "invalid_field", "include_hidden must be true or false")
	}
	switch q.Get("archived") {
	case "", "false", "0":
	case "true", "1":
		o.Archived = true
	case "all":
		o.All = true
	default:
		return nil, apiError(http.StatusBadRequest, "invalid_field", "archived must be true, false or all")
	}
	if v := q.Get("state"); v != "" {
		for st := range strings.SplitSeq(v, ",") {
			if !slices.Contains(sessions.States, st) {
				return nil, apiError(http.StatusBadRequest, "invalid_field", "state must be one or more of "+strings.Join(sessions.States, ", ")+", separated by commas")
			}
			o.States = append(o.States, st)
		}
	}
	limit, err := intParam(q.Get("limit"), listDefault, 1, listMax, "limit")
	if err != nil {
		return nil, err
	}
	after, err := parseCursor(q.Get("cursor"))
	if err != nil {
		return nil, err
	}
	list, err := s.Sessions.List(r.Context(), o)
	if err != nil {
		return nil, err
	}
	// Newest first, and by id among sessions created at the same time, so that a cursor
	// (the last row's place in that order) pages without a gap or a repeat.
	slices.SortStableFunc(list, func(a, b sessions.Listed) int { return listOrder(a.Created, a.ID, b.Created, b.ID) })
	out := api.ListAnswer{Sessions: []api.ListedSession{}}
	for _, l := range list {
		if after != nil && listOrder(l.Created, l.ID, after.created, after.id) <= 0 {
			continue
		}
		if len(out.Sessions) == limit {
			last := out.Sessions[len(out.Sessions)-1]
			out.NextCursor = listCursor{last.Created, last.SessionID}.String()
			break
		}
		row := api.ListedSession{SessionID: l.ID, Title: l.Title, Model: l.Model, Created: l.Created,
			Modified: l.Modified, Busy: l.Busy, Archived: l.Archived, Hidden: l.Hidden, Cwd: l.Cwd, ParentSession: l.Parent, Problem: l.Problem,
			State: l.State, Project: l.Project, Turns: l.Turns, Preview: l.Preview}
		if l.Problem == "" {
			c := l.Cost.API()
			row.Cost = &c
		}
		out.Sessions = append(out.Sessions, row)
	}
	return out, nil
}

// listOrder orders sessions newest first, then by id, descending.
func listOrder(ac time.Time, aid string, bc time.Time, bid string) int {
	if c := bc.Compare(ac); c != 0 {
		return c
	}
	return strings.Compare(bid, aid)
}

// listCursor is a place in the listing: after the session created at created with id.
type listCursor struct {
	created time.Time
	id      string
}

// String is the cursor as clients get it: opaque to them.
func (c listCursor) String() string {
	return strconv.FormatInt(c.created.UnixNano(), 10) + "." + c.id
}

func parseCursor(v string) (*listCursor, error) {
	if v == "" {
		return nil, nil
	}
	ns, id, ok := strings.Cut(v, ".")
	n, err := strconv.ParseInt(ns, 10, 64)
	if !ok || err != nil || id == "" {
		return nil, apiError(http.StatusBadRequest, "invalid_field", "cursor is not a next_cursor this server gave")
	}
	return &listCursor{time.Unix(0, n), id}, nil
}

// --- Snapshot ---------------------------------------------------------------------------

// apiSnapshot answers a session's state: busy (false marks the end of accepted work), the
// active thread, its newest messages (?limit=, default 20, at most 200; ?before=INDEX pages
// back), the context use, the model, the parent and children, and the tree roll-up, and
// event_id: the events after it are those the snapshot may not show yet.
func (s *server) apiSnapshot(w http.ResponseWriter, r *http.Request) (any, error) {
	id := chi.URLParam(r, "id")
	cursor := s.Sessions.EventID() // before the snapshot: nothing after it is missed
	sess, st, err := s.Sessions.Snapshot(r.Context(), id)
	if err != nil {
		return nil, err
	}
	q := r.URL.Query()
	limit, err := intParam(q.Get("limit"), snapshotDefault, 1, snapshotMax, "limit")
	if err != nil {
		return nil, err
	}
	th := sess.Latest()
	before, err := intParam(q.Get("before"), len(th.Entries), 0, len(th.Entries), "before")
	if err != nil {
		return nil, err
	}
	p := s.projector(id, th)
	msgs := []api.SnapshotMessage{}
	i := before - 1
	for ; i >= 0 && len(msgs) < limit; i-- {
		if m, ok := p.apiMessage(i); ok {
			msgs = append(msgs, m)
		}
	}
	for a, b := 0, len(msgs)-1; a < b; a, b = a+1, b-1 {
		msgs[a], msgs[b] = msgs[b], msgs[a]
	}
	window := s.model(st.Model).ContextWindow
	used := th.ContextUsed()
	out := api.SnapshotAnswer{
		SessionID: id, Title: sess.Title, Created: sess.Created, Model: st.Model, Cwd: sess.Cwd,
		Busy: st.Busy, BusyElsewhere: st.Elsewhere, ActiveThread: th.ID, LastTurn: st.LastTurn.Status, Archived: sess.Archived, Hidden: sess.Hidden,
		Usage:    api.SnapshotUsage{User: fmt.Sprintf("USER %d/%d", used, window), PromptTokens: used, ContextWindow: window, Spent: apiUsage(sess.Spent())},
		Messages: msgs, Answer: st.LastTurn.Answer, EventID: cursor, ParentSession: sess.Parent,
		Cost: s.Sessions.CostOf(sess).API(), State: s.Sessions.State(sess, st),
	}
	out.LastError = lastError(st.LastTurn)
	out.Mode, out.Sandbox = string(s.Sessions.Mode(sess)), s.Sessions.Guard().SandboxSupport()
	out.PendingApprovals = make([]api.Approval, 0, len(sess.Approvals))
	for _, a := range sess.Approvals {
		out.PendingApprovals = append(out.PendingApprovals, apiApprovalOf(a))
	}
	if st.Busy {
		out.Job, out.JobID = st.Job, st.JobID
	}
	if st.Stopped != nil {
		out.Stopped = st.Stopped.Error()
	}
	if i >= 0 {
		out.NextBefore = i + 1
	}
	if root, depth, err := s.Sessions.Lineage(r.Context(), id); err == nil {
		out.RootSession, out.Depth = root, &depth
	}
	tree, err := s.Sessions.Tree(r.Context(), id)
	if err != nil {
		return nil, err
	}
	out.Children = make([]api.ChildSession, 0, len(tree.Children))
	for _, c := range tree.Children {
		child := api.ChildSession{SessionID: c.ID, Title: c.Title, Model: c.Model, Busy: c.Busy, LastTurn: c.LastTurn,
			Cost: c.Totals().Cost.API(), State: c.State}
		if q.Get("changes") == "true" && s.Sessions.CapturesFiles() {
			if n, _, err := s.countChanges(r.Context(), c.ID, nil); err == nil {
				child.Changes = &n
			}
		}
		out.Children = append(out.Children, child)
	}
	t := tree.Totals()
	out.Tree = api.TreeTotals{Sessions: t.Sessions, Busy: t.Busy, OpenToolCalls: t.OpenCalls, Spent: apiUsage(t.Spent), Cost: t.Cost.API(), WorkSecs: t.Work.Seconds()}
	return out, nil
}

func intParam(v string, def, lo, hi int, name string) (int, error) {
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return 0, apiError(http.StatusBadRequest, "invalid_field", fmt.Sprintf("%s must be a whole number from %d to %d", name, lo, hi))
	}
	return n, nil
}

// apiMessage renders entry i for the API, or reports false for one that is only tool
// results (they show in their calls).
func (p *projector) apiMessage(i int) (api.SnapshotMessage, bool) {
	e := p.thread.Entries[i]
	m := api.SnapshotMessage{Index: i, Role: string(e.Message.Role), AcceptedAt: e.AcceptedAt, Text: e.Message.Text(), Rejected: e.Rejected}
	for _, part := range e.Message.Parts {
		switch {
		case part.Kind == model.KindImage:
			m.Images++
		case part.Kind == model.KindToolCall && part.ToolCall != nil:
			c := api.SnapshotToolCall{ID: part.ToolCall.ID, Name: part.ToolCall.Name, Input: part.ToolCall.Input, Status: "running"}
			if len(c.Input) == 0 {
				c.Input = json.RawMessage("{}")
			}
			if r, ok := p.results[c.ID]; ok {
				c.Status = "ok"
				switch {
				case r.res.Unknown:
					c.Status = "unknown"
				case r.res.IsError:
					c.Status = "error"
				}
				c.Output, _ = headTail(r.res.Text, 16<<10)
			} else if !p.open {
				c.Status = "unknown"
			}
			m.ToolCalls = append(m.ToolCalls, c)
		}
	}
	if m.Text == "" && len(m.ToolCalls) == 0 && m.Images == 0 {
		return m, false
	}
	return m, true
}

// --- Events -----------------------------------------------------------------------------

// apiEvents streams the profile's events as JSON, one per server-sent event, optionally
// only some sessions' (?session=ID,ID). Each event's id is its cursor; Last-Event-ID (or
// ?after=) replays exactly what was missed, or a reset event when that is no longer kept.
// A ping event comes every 15 s.
func (s *server) apiEvents(w http.ResponseWriter, r *http.Request) (any, error) {
	var ids []string
	if v := r.URL.Query().Get("session"); v != "" {
		for _, id := range strings.Split(v, ",") {
			if id = strings.TrimSpace(id); id != "" {
				if _, _, err := s.Sessions.Snapshot(r.Context(), id); err != nil {
					return nil, err
				}
				ids = append(ids, id)
			}
		}
	}
	after := r.Header.Get("Last-Event-ID")
	if after == "" {
		after = r.URL.Query().Get("after")
	}
	sub := s.Sessions.Subscribe(ids, after).Exact()
	defer sub.Close()
	defer s.streaming("api")()
	sse, err := web.StartSSE(w, r)
	if err != nil {
		return nil, nil
	}
	sse.Timeout = s.StreamWriteTimeout
	ctx := r.Context()
	ping := s.APIPing
	for {
		us, ok := nextOrPing(ctx, sub, ping, func() error {
			b, _ := json.Marshal(api.PingEvent{EventInfo: api.EventInfo{Type: api.EventPing, Time: time.Now().UTC()}})
			sse.AppendJSON("", "ping", b)
			return sse.Flush()
		})
		if !ok {
			return nil, nil
		}
		for _, u := range us {
			b, err := u.JSON()
			if err != nil {
				return nil, nil
			}
			sse.AppendJSON(sub.IDOf(u.Seq), u.Type, b)
		}
		if sse.Flush() != nil || !sse.Pace(ctx) {
			return nil, nil // the client is gone, or stopped reading
		}
	}
}

// apiUsage is u as the API says it.
func apiUsage(u model.Usage) api.Usage {
	return api.Usage{Input: u.Input, Output: u.Output, CacheRead: u.CacheRead, CacheWrite: u.CacheWrite, Reasoning: u.Reasoning}
}

// lastError is the last_error of a turn that ended as st says, nil for one with an answer.
func lastError(st sessions.TurnState) *api.LastError {
	if st.Code == "" {
		return nil
	}
	return &api.LastError{Code: st.Code, Message: st.Error, Detail: st.Detail, Retryable: sessions.Retryable(st.Code)}
}
