package handlers

import (
	_ "embed"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"

	"myco.dev/api"
	"myco.dev/hosts/proto"
)

// openAPIDocument is the OpenAPI 3.1 document of the API, generated from the types of
// package api and the operations below by TestOpenAPIDocument (-update writes it), which
// fails when it is stale.
//
//go:embed openapi.json
var openAPIDocument []byte

// apiOp is one operation of the JSON API: the one place that says what a route takes and
// answers. The router is built from it, its query parameters are checked against it, and
// the OpenAPI document is generated from it.
type apiOp struct {
	ID      string // the operationId
	Method  string
	Path    string // under /api, as chi routes it: /sessions/{id}
	Summary string
	// Origin puts the route behind the origin check: it changes state, or streams.
	Origin bool
	Query  []apiParam
	// Body is the request body's type (a zero value), or several for a body that is one of
	// them, the union Union names; nil for none. BodyOptional marks a body that may be left
	// out.
	Body         []any
	Union        apiUnion
	BodyOptional bool
	// Answers are the successful answers, by status.
	Answers []apiAnswer
	// Errors are the statuses of the error answers the operation gives for a client's
	// mistake (4xx); the server's own failures (5xx) are the document's default answer.
	Errors []int
	handle func(http.ResponseWriter, *http.Request) (any, error)
}

// apiParam is a query parameter.
type apiParam struct {
	Name, Doc string
	Type      string // "string", "integer" or "boolean"
	Enum      []string
	Min, Max  int // for an integer
	Default   string
}

// apiAnswer is a successful answer: its status, its type (a zero value; several for one
// of them, the union Union names), or a media type other than JSON; for an event stream,
// the types of its events' data.
type apiAnswer struct {
	Status int
	Doc    string
	Types  []any
	Union  apiUnion
	Media  string // "" for application/json
	// Headers are headers the answer carries, with what they say.
	Headers map[string]string
}

// apiUnion names a body or answer that is one of several types: the OpenAPI document has it
// as a schema of that name, a oneOf told apart by the field By (its discriminator), so
// that a generated client has one type for it and one per member.
type apiUnion struct{ Name, By string }

// actionBodies are the bodies of the actions, as api.NewAction makes them.
func actionBodies() []any {
	var out []any
	for _, name := range api.ActionNames() {
		a, _ := api.NewAction(name)
		out = append(out, reflect.ValueOf(a).Elem().Interface())
	}
	return out
}

// eventData are the data of the event stream's events, as api.NewEvent makes them.
func eventData() []any {
	var out []any
	for _, typ := range api.EventTypes() {
		ev, _ := api.NewEvent(typ)
		out = append(out, reflect.ValueOf(ev).Elem().Interface())
	}
	return out
}

// Paging bounds.
const (
	listDefault     = 100
	listMax         = 500
	snapshotDefault = 20
	snapshotMax     = 200
)

// apiOps is the JSON API, route by route.
func (s *server) apiOps() []apiOp {
	sessionErrors := []int{400, 403, 404, 409, 413, 415}
	ops := []apiOp{
		{ID: "createSession", Method: "POST", Path: "/sessions", Origin: true, handle: s.apiCreate,
			Summary: "Create a session: a hidden child with parent_session, a fork of its parent's conversation with fork. Idempotent by request_id.",
			Body:    []any{api.CreateRequest{}},
			Answers: []apiAnswer{{Status: 201, Doc: "The session was created.", Types: []any{api.CreateAnswer{}}},
				{Status: 200, Doc: "An earlier request with this request_id created it (created is false).", Types: []any{api.CreateAnswer{}}}},
			Errors: []int{400, 403, 404, 409, 413, 415}},
		{ID: "listSessions", Method: "GET", Path: "/sessions", handle: s.apiList,
			Summary: "List sessions, newest first, a page at a time.",
			Query: []apiParam{
				{Name: "include_hidden", Type: "boolean", Default: "false", Doc: "Lists children (hidden sessions) too."},
				{Name: "archived", Type: "string", Enum: []string{"false", "true", "all"}, Default: "false", Doc: "Active sessions (false), archived ones (true) or both (all)."},
				{Name: "parent", Type: "string", Doc: "Only the children of this session."},
				{Name: "cwd", Type: "string", Doc: "Only the sessions that work in this directory (absolute)."},
				{Name: "q", Type: "string", Doc: "Only sessions whose title or id contains this, in any case."},
				{Name: "state", Type: "string", Doc: "Only sessions in one of these states, separated by commas: working, needs_you, done, failed."},
				{Name: "project", Type: "string", Doc: "Only the sessions of this project: the git root of their directory, else the directory (a row's project)."},
				{Name: "limit", Type: "integer", Min: 1, Max: listMax, Default: strconv.Itoa(listDefault), Doc: "The most sessions in one answer."},
				{Name: "cursor", Type: "string", Doc: "Where the page starts: the next_cursor of the page before."},
			},
			Answers: []apiAnswer{{Status: 200, Types: []any{api.ListAnswer{}}}},
			Errors:  []int{400}},
		{ID: "getSession", Method: "GET", Path: "/sessions/{id}", handle: s.apiSnapshot,
			Summary: "A session's snapshot: its state, how its last turn ended, its answer, its newest messages (paged back with before), its children and the roll-up of its tree.",
			Query: []apiParam{
				{Name: "limit", Type: "integer", Min: 1, Max: snapshotMax, Default: strconv.Itoa(snapshotDefault), Doc: "The most messages in one answer."},
				{Name: "before", Type: "integer", Min: 0, Doc: "Only messages before this index: the next_before of the page after."},
				{Name: "changes", Type: "boolean", Default: "false", Doc: "true counts each child's changed files (children[].changes), a diff of its snapshots per child."},
			},
			Answers: []apiAnswer{{Status: 200, Types: []any{api.SnapshotAnswer{}}}},
			Errors:  []int{400, 404, 409}},
		{ID: "getAnswer", Method: "GET", Path: "/sessions/{id}/answer", handle: s.apiAnswer,
			Summary: "The final answer of the session's last turn, as plain text: empty when that turn has none (it runs, failed or was stopped), never an earlier turn's.",
			Answers: []apiAnswer{{Status: 200, Media: "text/plain; charset=utf-8", Doc: "The answer's text, as the model wrote it.",
				Headers: map[string]string{"Myco-Last-Turn": "How the last turn stands, as the snapshot's last_turn.",
					"Myco-Last-Error": "The code of last_error, for a turn that ended without an answer."}}},
			Errors: []int{400, 404, 409}},
		{ID: "getChanges", Method: "GET", Path: "/sessions/{id}/changes", handle: s.apiChanges,
			Summary: "What a turn changed in the session's files (thread and turn), or the whole session (neither): from before its first tool batch to after its last, or from before the session's first captured turn to the files as they are now. Per host, each file's status, line counts and unified diff; binary files as sizes; patches bounded by max_bytes (cut says so).",
			Query: []apiParam{
				{Name: "thread", Type: "string", Doc: "The turn's thread; the active one when left out."},
				{Name: "turn", Type: "integer", Min: 0, Doc: "The turn: the index of its input message in the thread (the accepted event's index). Left out: the whole session."},
				{Name: "path", Type: "string", Doc: "Only this file (or what is under this directory), with its whole patch up to max_bytes."},
				{Name: "patch", Type: "boolean", Default: "true", Doc: "false leaves the patches out: the statuses and counts only."},
				{Name: "max_bytes", Type: "integer", Min: 1, Max: changesMaxBytes, Default: strconv.Itoa(changesDefaultBytes), Doc: "The most bytes of patches in one answer; a file's patch gets at most a quarter of it (64 KiB at least)."},
			},
			Answers: []apiAnswer{{Status: 200, Types: []any{api.ChangesAnswer{}}}},
			Errors:  []int{400, 404, 409}},
		{ID: "actOnSession", Method: "POST", Path: "/sessions/{id}/actions", Origin: true, handle: s.apiAction,
			Summary: "Do one action on a session: submit (a message; with wait, the answer comes when its turn has ended), select_model, set_title, compact, retry, archive, restore, undo_turn, redo_turn, revert_file, approve, deny or set_mode: an Action. approve, deny and set_mode need the approval capability (the Myco-Approval header or the browser's cookie), which tool processes never have: without it they answer 403 approval_refused. Each action takes its own fields and no other. Idempotent by request_id.",
			Body:    actionBodies(), Union: apiUnion{"Action", "action"},
			Answers: []apiAnswer{{Status: 200, Doc: "A submit answers a SubmitAnswer; every other action an ActionAnswer.", Types: []any{api.SubmitAnswer{}, api.ActionAnswer{}},
				Union: apiUnion{"ActionResult", "action"}}},
			Errors: sessionErrors},
		{ID: "listApprovals", Method: "GET", Path: "/sessions/{id}/approvals", handle: s.apiApprovals,
			Summary: "The pending approvals of the session and of every session below it in its tree (a child's show on its root), each with the session that asked.",
			Answers: []apiAnswer{{Status: 200, Types: []any{api.ApprovalsAnswer{}}}},
			Errors:  []int{400, 404}},
		{ID: "cancelJob", Method: "POST", Path: "/sessions/{id}/cancel", Origin: true, handle: s.apiCancel,
			Summary:      "Stop the session's running turn or compaction (retry waits included), or only the job job_id names; answers once it has ended, or with stopping: true after timeout_secs.",
			Body:         []any{api.CancelRequest{}},
			BodyOptional: true,
			Answers:      []apiAnswer{{Status: 200, Types: []any{api.CancelAnswer{}}}},
			Errors:       []int{400, 403, 404, 413, 415}},
		{ID: "streamEvents", Method: "GET", Path: "/events", Origin: true, handle: s.apiEvents,
			Summary: "Server-sent events of the profile's sessions, or of some: each event's SSE name is its type, its data one JSON object, an Event (a ping after 15 s of quiet), its id the cursor to resume from (Last-Event-ID or after). The server keeps each session's last 1,024 events, and a closed session's for two minutes after it closed (4 MiB of them in all); a cursor older than that, or of another run of the server, gets one reset event per session instead: read the snapshot again.",
			Query: []apiParam{
				{Name: "session", Type: "string", Doc: "Only these sessions' events: ids separated by commas."},
				{Name: "after", Type: "string", Doc: "The cursor to start after (an event_id or an event's id); without it, the stream starts now. Last-Event-ID takes precedence."},
			},
			Answers: []apiAnswer{{Status: 200, Media: "text/event-stream", Doc: "The stream: events until the client leaves.", Types: eventData(), Union: apiUnion{"Event", "type"}}},
			Errors:  []int{400, 403, 404}},
		{ID: "searchSessions", Method: "GET", Path: "/search", handle: s.apiSearch,
			Summary: "Search what the sessions hold: messages, answers, tool inputs and outputs and the paths they touched, in every thread. Newest first, a page at a time; incomplete while the index is being built.",
			Query: []apiParam{
				{Name: "q", Type: "string", Doc: "Words and \"quoted phrases\", all of them required; the last word also matches as a prefix."},
				{Name: "project", Type: "string", Doc: "Only the sessions of this project (a listed session's project)."},
				{Name: "from", Type: "string", Doc: "Only messages of this day (YYYY-MM-DD, local time) or later."},
				{Name: "to", Type: "string", Doc: "Only messages of this day (YYYY-MM-DD, local time) or earlier."},
				{Name: "archived", Type: "boolean", Default: "false", Doc: "Archived sessions too."},
				{Name: "limit", Type: "integer", Min: 1, Max: 100, Default: "20", Doc: "The most hits in one answer."},
				{Name: "cursor", Type: "string", Doc: "Where the page starts: the next_cursor of the page before."},
			},
			Answers: []apiAnswer{{Status: 200, Types: []any{api.SearchAnswer{}}}},
			Errors:  []int{400, 503}},
		{ID: "listModels", Method: "GET", Path: "/models", handle: s.apiModels,
			Summary: "The model catalog: each model's key (for create and select_model), protocol and context window, and which is the default.",
			Answers: []apiAnswer{{Status: 200, Types: []any{api.ModelsAnswer{}}}},
			Errors:  []int{400}},
		{ID: "getVersion", Method: "GET", Path: "/version", handle: s.apiVersion,
			Summary: "The versions of myco, of this API and of the remote host protocol.",
			Answers: []apiAnswer{{Status: 200, Types: []any{api.VersionAnswer{}}}},
			Errors:  []int{400}},
		{ID: "getOpenAPI", Method: "GET", Path: "/openapi.json", handle: s.apiOpenAPI,
			Summary: "This document.",
			Answers: []apiAnswer{{Status: 200, Media: "application/json", Doc: "The OpenAPI 3.1 document of the API."}},
			Errors:  []int{400}},
	}
	for i := range ops {
		// Any request whose Host is not the server's is misdirected_request.
		ops[i].Errors = append(ops[i].Errors, http.StatusMisdirectedRequest)
	}
	return ops
}

// apiRoutes mounts the API's operations under /api, each behind the checks it needs, with
// the version header on every answer, and the error envelope for paths and methods it
// does not have (405 with Allow).
func (s *server) apiRoutes(r chi.Router) {
	ops := s.apiOps()
	r.Use(func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set(api.VersionHeader, api.Version)
			next.ServeHTTP(w, r)
		})
	})
	for _, op := range ops {
		h := s.api(op.Query, op.handle)
		if op.Origin {
			h = s.origin(h).ServeHTTP
		}
		r.Method(op.Method, op.Path, h)
	}
	r.NotFound(s.api(nil, func(http.ResponseWriter, *http.Request) (any, error) {
		return nil, apiError(http.StatusNotFound, "not_found", "no such API endpoint; GET "+s.base+"/api/openapi.json lists them")
	}))
	r.MethodNotAllowed(s.api(nil, func(w http.ResponseWriter, r *http.Request) (any, error) {
		allow := allowed(ops, strings.TrimPrefix(r.URL.Path, s.base+"/api"))
		w.Header().Set("Allow", strings.Join(allow, ", "))
		return nil, apiError(http.StatusMethodNotAllowed, "method_not_allowed", "this endpoint does not take "+r.Method+"; it takes "+strings.Join(allow, ", "))
	}))
}

// allowed returns the methods the operations take at path.
func allowed(ops []apiOp, path string) []string {
	var out []string
	for _, op := range ops {
		if matchPath(op.Path, path) && !slices.Contains(out, op.Method) {
			out = append(out, op.Method)
		}
	}
	slices.Sort(out)
	return out
}

// matchPath reports whether path matches the chi pattern, whose {name} segments match any
// one segment.
func matchPath(pattern, path string) bool {
	ps, xs := strings.Split(pattern, "/"), strings.Split(strings.TrimSuffix(path, "/"), "/")
	if len(ps) != len(xs) {
		return false
	}
	for i, p := range ps {
		if !(strings.HasPrefix(p, "{") && xs[i] != "") && p != xs[i] {
			return false
		}
	}
	return true
}

// checkQuery refuses a query parameter the operation does not take, or one given twice,
// with a 400 that names it.
func checkQuery(params []apiParam, q url.Values) error {
	for name, vs := range q {
		if !slices.ContainsFunc(params, func(p apiParam) bool { return p.Name == name }) {
			names := make([]string, 0, len(params))
			for _, p := range params {
				names = append(names, p.Name)
			}
			msg := "unknown query parameter " + strconv.Quote(name)
			if len(names) == 0 {
				return apiError(http.StatusBadRequest, "unknown_field", msg+"; this endpoint takes none")
			}
			return apiError(http.StatusBadRequest, "unknown_field", msg+"; this endpoint takes "+strings.Join(names, ", "))
		}
		if len(vs) > 1 {
			return apiError(http.StatusBadRequest, "duplicate_field", "query parameter "+strconv.Quote(name)+" appears twice; send it once")
		}
	}
	return nil
}

// apiModels lists the model catalog.
func (s *server) apiModels(w http.ResponseWriter, r *http.Request) (any, error) {
	out := api.ModelsAnswer{Models: make([]api.ModelEntry, 0, len(s.Models)), Default: s.Default}
	for _, m := range s.Models {
		out.Models = append(out.Models, api.ModelEntry{Key: m.Key, Protocol: m.Protocol, ContextWindow: m.ContextWindow,
			MaxImageBase64Bytes: m.MaxImageBase64Bytes, Default: m.Key == s.Default})
	}
	return out, nil
}

// apiVersion answers the versions.
func (s *server) apiVersion(w http.ResponseWriter, r *http.Request) (any, error) {
	return api.VersionAnswer{Myco: s.Build.Version, Build: s.Build.String(), API: api.Version, HostProtocol: proto.Version}, nil
}

// apiOpenAPI serves the OpenAPI document.
func (s *server) apiOpenAPI(w http.ResponseWriter, r *http.Request) (any, error) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-cache")
	w.Write(openAPIDocument)
	return nil, nil
}

// apiAnswer serves the final answer of the session's last turn as text.
func (s *server) apiAnswer(w http.ResponseWriter, r *http.Request) (any, error) {
	_, st, err := s.Sessions.Snapshot(r.Context(), chi.URLParam(r, "id"))
	if err != nil {
		return nil, err
	}
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Myco-Last-Turn", st.LastTurn.Status)
	if st.LastTurn.Code != "" {
		h.Set("Myco-Last-Error", st.LastTurn.Code)
	}
	h.Set("Content-Length", fmt.Sprint(len(st.LastTurn.Answer)))
	w.WriteHeader(http.StatusOK)
	w.Write([]byte(st.LastTurn.Answer))
	return nil, nil
}
