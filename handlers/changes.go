package handlers

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/a-h/templ"
	"github.com/go-chi/chi/v5"

	"myco.dev/api"
	"myco.dev/hosts/snapshot"
	"myco.dev/sessions"
	"myco.dev/views"
)

// The bounds of the Changes view's diffs: per file, and the page's in all ("Show all"
// asks for one file with allPatchBytes).
const (
	viewFileBytes  = 32 << 10
	viewPatchBytes = 512 << 10
	allPatchBytes  = 8 << 20
)

// changesPage shows what a turn (?thread=&turn=) or the whole session changed in its
// files, with Undo, Redo and Revert; an htmx request gets the view alone.
func (s *server) changesPage(w http.ResponseWriter, r *http.Request) error {
	id := chi.URLParam(r, "id")
	cursor := s.Sessions.EventID() // before the view: the stream misses nothing after it
	ref, err := turnRef(r.URL.Query())
	if err != nil {
		return err
	}
	if ref != nil && !htmx(r) {
		r = r.WithContext(context.WithValue(r.Context(), cursorKey{}, cursor))
	}
	if r.URL.Query().Get("summary") != "" {
		return s.turnChangesSummary(w, r, id, ref)
	}
	v, err := s.changesView(r.Context(), id, ref, r.URL.Query().Get("path"), nil)
	if err != nil {
		return err
	}
	return s.renderChanges(w, r, id, v, http.StatusOK)
}

// renderChanges writes v with status: alone for htmx (whose swaps take a 200 only), else
// in its page.
func (s *server) renderChanges(w http.ResponseWriter, r *http.Request, id string, v views.ChangesView, status int) error {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if htmx(r) {
		if err := views.Changes(v).Render(r.Context(), w); err != nil {
			return err
		}
		if r.Method == http.MethodGet {
			return nil // a reload leaves the last answer where it is
		}
		return views.ChangesDone(v.Done, true).Render(r.Context(), w)
	}
	sess, _, err := s.Sessions.Snapshot(r.Context(), id)
	if err != nil {
		return err
	}
	p := views.ChangesPageView{Chrome: s.chrome("Changes · "+sessionTitle(sess.Title), "sessions"), Title: sessionTitle(sess.Title),
		BackURL: s.sessionURL(id), SessionURL: s.changesURL(id, nil), Panel: v}
	if cursor, ok := r.Context().Value(cursorKey{}).(string); ok && v.Thread != "" {
		turn, _ := strconv.Atoi(v.Turn)
		p.EventsURL = s.sessionURL(id) + "events?after=" + url.QueryEscape(cursor)
		p.FollowID = views.ChangesFollowID(v.Thread, turn)
	}
	th := sess.Latest()
	n := 0
	for i, e := range th.Entries {
		if (e.AcceptedAt == nil && !e.Continuation) || e.Rejected || !hasCaptures(th, i) {
			continue
		}
		n++
		ref := &sessions.TurnRef{Thread: th.ID, Turn: i}
		p.Turns = append(p.Turns, views.TurnLinkView{Label: "Turn " + strconv.Itoa(n), URL: s.changesURL(id, ref),
			Current: v.Thread == th.ID && v.Turn == strconv.Itoa(i)})
	}
	w.WriteHeader(status)
	return views.ChangesPage(p).Render(r.Context(), w)
}

// cursorKey carries the event cursor taken before a turn's Changes page was built.
type cursorKey struct{}

// changesFollow is the partial that reloads the Changes page of the turn at entry turn of
// thread, where one is open.
func (s *server) changesFollow(id, thread string, turn int) templ.Component {
	ref := &sessions.TurnRef{Thread: thread, Turn: turn}
	fid := views.ChangesFollowID(thread, turn)
	return views.Partial(fid, views.SwapOuter, views.ChangesFollow(fid, s.changesURL(id, ref)))
}

// hasCaptures reports whether the turn at entry start of th captured files.
func hasCaptures(th *sessions.Thread, start int) bool {
	for i := start + 1; i < len(th.Entries); i++ {
		e := th.Entries[i]
		if e.AcceptedAt != nil || e.Continuation {
			return false
		}
		if len(e.Snapshots) > 0 {
			return true
		}
	}
	return false
}

// turnRef reads thread and turn from a query or a form; nil for the whole session.
func turnRef(v url.Values) (*sessions.TurnRef, error) {
	t := v.Get("turn")
	if t == "" {
		return nil, nil
	}
	n, err := strconv.Atoi(t)
	if err != nil || n < 0 {
		return nil, httpError(http.StatusBadRequest, "The turn is not a message's number.")
	}
	return &sessions.TurnRef{Thread: v.Get("thread"), Turn: n}, nil
}

// changesURL is the Changes page of a turn (nil: the whole session).
func (s *server) changesURL(id string, ref *sessions.TurnRef) string {
	u := s.sessionURL(id) + "changes"
	if ref != nil {
		u += "?thread=" + url.QueryEscape(ref.Thread) + "&turn=" + strconv.Itoa(ref.Turn)
	}
	return u
}

// changesView builds the view of ref's changes (nil: the session's); path, when set, shows
// that file whole. done says what an undo, redo or revert did.
func (s *server) changesView(ctx context.Context, id string, ref *sessions.TurnRef, path string, done *sessions.RestoreOutcome) (views.ChangesView, error) {
	q := sessions.ChangesQuery{Turn: ref, Diff: snapshot.DiffOptions{MaxFilePatch: viewFileBytes, MaxPatch: viewPatchBytes}}
	if path != "" {
		q.Diff = snapshot.DiffOptions{Paths: []snapshot.Path{snapshot.Path(path)}, MaxFilePatch: allPatchBytes, MaxPatch: allPatchBytes}
	}
	ch, err := s.Sessions.Changes(ctx, id, q)
	if err != nil {
		return views.ChangesView{}, err
	}
	base := s.sessionURL(id)
	v := views.ChangesView{Scope: "The whole session", Running: ch.Running, Undone: ch.Undone, RevertURL: base + "revert"}
	if ch.Turn != nil {
		v.Thread, v.Turn = ch.Turn.Thread, strconv.Itoa(ch.Turn.Turn)
		v.Scope = "This turn"
		v.RefreshURL = s.changesURL(id, ch.Turn)
		switch {
		case ch.Running:
		case ch.Undone:
			v.RedoURL = base + "undo"
		default:
			v.UndoURL = base + "undo"
		}
	}
	for _, h := range ch.Hosts {
		hv := views.HostChangesView{Host: h.Host, Dir: h.Dir, Error: h.Err}
		if h.Diff != nil {
			if hv.Dir == "" {
				hv.Dir = h.Diff.Dir
			}
			files, added, deleted := sessions.ChangedFiles(h.Diff)
			v.Files += len(files)
			v.Added += added
			v.Deleted += deleted
			hv.Cut = h.Diff.Cut
			for i, f := range files {
				hv.Files = append(hv.Files, s.fileChange(id, ref, h.Host, i, f, !ch.Running))
			}
		}
		v.Hosts = append(v.Hosts, hv)
	}
	if done != nil {
		v.Done = fmt.Sprintf("%d file(s) put back.", len(done.Restored))
		if n := len(done.LeftAlone); n > 0 {
			var names []string
			for _, l := range done.LeftAlone {
				names = append(names, l.Path+" ("+leftAloneWhy(l.Reason)+")")
			}
			v.Done += fmt.Sprintf(" %d left as they are: %s.", n, strings.Join(names, ", "))
		}
	}
	return v, nil
}

func leftAloneWhy(reason string) string {
	switch reason {
	case "not_stored":
		return "too large to store"
	case "not_empty":
		return "a directory that still holds files"
	case "blocked":
		return "the way to it is a symlink or .git"
	case "untracked":
		return "not captured"
	case "failed":
		return "could not be written"
	}
	return "changed since"
}

// fileChange is one file of a diff, as the view shows it.
func (s *server) fileChange(id string, ref *sessions.TurnRef, host string, i int, f api.ChangedFile, revertable bool) views.FileChangeView {
	fv := views.FileChangeView{DOMID: "file-" + host + "-" + strconv.Itoa(i), Path: f.Path, OldPath: f.OldPath, Status: f.Status,
		Added: f.Added, Deleted: f.Deleted, Binary: f.Binary, Cut: f.Cut, Revertable: revertable && !f.NotStored && !f.Untracked}
	var notes []string
	switch {
	case f.NotStored:
		notes = append(notes, fmt.Sprintf("Too large to store (%s): it changed, and cannot be shown or put back.", sizes(f)))
	case f.Binary:
		notes = append(notes, "Binary file: "+sizes(f)+".")
	case f.Type == "symlink":
		notes = append(notes, "A symbolic link.")
	case f.Type == "dir":
		notes = append(notes, "An empty directory.")
	}
	if f.Untracked {
		notes = append(notes, "Not captured on one side (the .gitignore files left it out there).")
	}
	if f.ModeBefore != "" {
		notes = append(notes, "Mode "+f.ModeBefore+" → "+f.ModeAfter+".")
	}
	fv.Note = strings.Join(notes, " ")
	var first int
	fv.Hunks, first = views.ParsePatch(f.Patch)
	views.HighlightPatch(f.Path, fv.Hunks)
	if f.Status != "deleted" && host == "local" && !strings.HasPrefix(f.Path, "/") && f.Type != "dir" {
		fv.URL = s.filesURL(id) + escapePath(f.Path)
		if first > 0 {
			fv.URL += "?line=" + strconv.Itoa(first) + "#L" + strconv.Itoa(first)
		}
	}
	if f.Cut {
		u := s.changesURL(id, ref)
		sep := "?"
		if strings.Contains(u, "?") {
			sep = "&"
		}
		fv.AllURL = u + sep + "path=" + url.QueryEscape(f.Path)
	}
	return fv
}

func sizes(f api.ChangedFile) string {
	switch f.Status {
	case "added":
		return byteSize(int(f.SizeAfter))
	case "deleted":
		return byteSize(int(f.SizeBefore))
	}
	return byteSize(int(f.SizeBefore)) + " → " + byteSize(int(f.SizeAfter))
}

// escapePath escapes each element of a relative path for a URL.
func escapePath(p string) string {
	parts := strings.Split(p, "/")
	for i, e := range parts {
		parts[i] = url.PathEscape(e)
	}
	return strings.Join(parts, "/")
}

// undoTurn undoes or redoes a turn (form fields thread, turn, op, overwrite): the view
// answers, with the conflicts when files changed since the turn.
func (s *server) undoTurn(w http.ResponseWriter, r *http.Request) error {
	if err := form(w, r); err != nil {
		return err
	}
	id := chi.URLParam(r, "id")
	ref, err := turnRef(r.PostForm)
	if err != nil || ref == nil {
		return httpError(http.StatusBadRequest, "Which turn to undo is missing.")
	}
	op := sessions.OpUndo
	if r.PostForm.Get("op") == "redo" {
		op = sessions.OpRedo
	}
	q := sessions.RestoreRequest{Op: op, Turn: ref, Overwrite: r.PostForm["overwrite"]}
	return s.restoreAndShow(w, r, id, ref, q)
}

// revertFile reverts one file (form fields host, path, thread, turn, overwrite).
func (s *server) revertFile(w http.ResponseWriter, r *http.Request) error {
	if err := form(w, r); err != nil {
		return err
	}
	id := chi.URLParam(r, "id")
	ref, err := turnRef(r.PostForm)
	if err != nil {
		return err
	}
	path := r.PostForm.Get("path")
	if path == "" {
		path = r.PostForm.Get("overwrite")
	}
	if path == "" {
		return httpError(http.StatusBadRequest, "Which file to revert is missing.")
	}
	q := sessions.RestoreRequest{Op: sessions.OpRevert, Turn: ref, Host: r.PostForm.Get("host"), Path: path, Overwrite: r.PostForm["overwrite"]}
	return s.restoreAndShow(w, r, id, ref, q)
}

// restoreAndShow does q and answers the view: what it did, or its conflicts.
func (s *server) restoreAndShow(w http.ResponseWriter, r *http.Request, id string, ref *sessions.TurnRef, q sessions.RestoreRequest) error {
	out, err := s.Sessions.Restore(r.Context(), id, q)
	var ce *sessions.ConflictError
	switch {
	case errors.As(err, &ce):
		v, verr := s.changesView(r.Context(), id, ref, "", nil)
		if verr != nil {
			return verr
		}
		v.ConflictOp = q.Op
		if q.Op == sessions.OpRedo {
			v.RedoURL, v.UndoURL = s.sessionURL(id)+"undo", ""
		}
		for _, f := range ce.Files {
			v.Conflicts = append(v.Conflicts, views.ConflictView{Host: f.Host, Path: f.Path, Reason: f.Reason})
		}
		return s.renderChanges(w, r, id, v, http.StatusConflict)
	case err != nil:
		return err
	}
	v, err := s.changesView(r.Context(), id, ref, "", out)
	if err != nil {
		return err
	}
	return s.renderChanges(w, r, id, v, http.StatusOK)
}

// turnChangesSlot is the slot of a turn's changes line on the session page.
func (s *server) turnChangesSlot(id, thread string, turn int) *views.TurnChangesView {
	ref := &sessions.TurnRef{Thread: thread, Turn: turn}
	return &views.TurnChangesView{DOMID: views.TurnChangesID(thread, turn), URL: s.changesURL(id, ref), SummaryURL: s.changesURL(id, ref) + "&summary=1"}
}

// turnChangesSummary answers a turn's changes line (ref nil: the whole session's, as a
// parent's tree shows a child's): how many files it changed, with a link to them; empty
// when it changed none, or its files are not captured.
func (s *server) turnChangesSummary(w http.ResponseWriter, r *http.Request, id string, ref *sessions.TurnRef) error {
	var v views.TurnChangesView
	if ref != nil {
		v = *s.turnChangesSlot(id, ref.Thread, ref.Turn)
	} else {
		v = views.TurnChangesView{DOMID: "changes-" + id, URL: s.changesURL(id, nil)}
	}
	if n, undone, err := s.countChanges(r.Context(), id, ref); err == nil {
		v.Files, v.Added, v.Deleted, v.Undone = n.Files, n.Added, n.Deleted, undone
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	return views.TurnChanges(v).Render(r.Context(), w)
}

// countChanges counts the files session id changed in turn ref (nil: the whole session),
// on every host, and says whether the turn's changes were undone.
func (s *server) countChanges(ctx context.Context, id string, ref *sessions.TurnRef) (n api.ChangesCount, undone bool, err error) {
	ch, err := s.Sessions.Changes(ctx, id, sessions.ChangesQuery{Turn: ref, Diff: snapshot.DiffOptions{NoPatch: true}})
	if err != nil {
		return n, false, err
	}
	for _, h := range ch.Hosts {
		if h.Diff != nil {
			files, added, deleted := sessions.ChangedFiles(h.Diff)
			n.Files += len(files)
			n.Added += added
			n.Deleted += deleted
		}
	}
	return n, ch.Undone, nil
}
