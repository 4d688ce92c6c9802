package handlers

import (
	"errors"
	"io/fs"
	"net/http"
	"strconv"
	"strings"

	"myco.dev/internal/humanize"
	"myco.dev/internal/web"
	"myco.dev/sessions"
	"myco.dev/views"
)

// httpError is an answer without a cause: a request the pages refuse, with the sentence
// that says why.
func httpError(status int, msg string) error { return &web.Error{Status: status, Message: msg} }

var errNotFound = web.NewError(http.StatusNotFound, "not_found", "There is nothing at this address.")

// sessionError is the one translation of the session service's errors (and a missing
// file's) into answers, for the pages and the API alike: [web.Resolve] asks it about every
// error that is not an answer already, and answers what it does not know with 500.
func sessionError(err error) *web.Error {
	var busy *sessions.BusyError
	switch {
	case errors.As(err, &busy):
		return &web.Error{Status: http.StatusConflict, Code: "busy", Message: busy.Error() + "; nothing was queued", Err: err}
	case errors.Is(err, sessions.ErrUnsupportedSchema) || errors.Is(err, sessions.ErrDamaged):
		le, _ := errors.AsType[*sessions.LoadError](err)
		if le == nil {
			break
		}
		if le.Newer > 0 {
			return &web.Error{Status: http.StatusConflict, Code: "unsupported_schema", Message: "this session " + le.Problem() + "; its file is left as it is", Err: err}
		}
		return &web.Error{Status: http.StatusConflict, Code: "damaged", Message: "this session's file is damaged (" + le.Error() + "); it is left as it is for you to inspect", Err: err}
	case errors.Is(err, sessions.ErrUnknownModel):
		return &web.Error{Status: http.StatusConflict, Code: "unknown_model", Message: unprefixed(err), Err: err}
	case errors.Is(err, sessions.ErrRequestConflict):
		return &web.Error{Status: http.StatusConflict, Code: "request_id_conflict", Message: unprefixed(err), Err: err}
	case errors.Is(err, sessions.ErrParentNotFound):
		return &web.Error{Status: http.StatusNotFound, Code: "parent_not_found", Message: "the parent_session does not exist", Err: err}
	case errors.Is(err, sessions.ErrNotFound):
		return &web.Error{Status: http.StatusNotFound, Code: "not_found", Message: "no such session", Err: err}
	case errors.Is(err, fs.ErrNotExist):
		return &web.Error{Status: http.StatusNotFound, Code: "not_found", Message: errNotFound.Message, Err: err}
	case errors.Is(err, sessions.ErrNotQueued):
		return &web.Error{Status: http.StatusConflict, Code: "not_queued", Message: "that message is no longer queued: it has been sent, or was withdrawn", Err: err}
	case errors.Is(err, sessions.ErrQueueFull):
		return &web.Error{Status: http.StatusConflict, Code: "queue_full", Message: unprefixed(err), Err: err}
	case errors.Is(err, sessions.ErrNotEditable):
		return &web.Error{Status: http.StatusConflict, Code: "not_editable", Message: unprefixed(err), Err: err}
	case errors.Is(err, sessions.ErrConflict):
		if ce, ok := errors.AsType[*sessions.ConflictError](err); ok {
			return &web.Error{Status: http.StatusConflict, Code: "conflict", Message: unprefixed(err), Files: ce.Files, Err: err}
		}
	case errors.Is(err, sessions.ErrNotUndoable):
		return &web.Error{Status: http.StatusConflict, Code: "not_undoable", Message: unprefixed(err), Err: err}
	case errors.Is(err, sessions.ErrNoTurn):
		return &web.Error{Status: http.StatusNotFound, Code: "not_found", Message: "the session has no such turn: turn is the index of a message a user sent", Err: err}
	case errors.Is(err, sessions.ErrNoSnapshots):
		return &web.Error{Status: http.StatusConflict, Code: "not_undoable", Message: "this session's files are not captured ([snapshots] is off, or its host keeps no snapshots)", Err: err}
	case errors.Is(err, sessions.ErrNotRetryable):
		return &web.Error{Status: http.StatusConflict, Code: "not_retryable", Message: "the last turn did not fail or stop, so there is nothing to retry", Err: err}
	case errors.Is(err, sessions.ErrBadDir):
		if de, ok := errors.AsType[*sessions.DirError](err); ok {
			return &web.Error{Status: http.StatusBadRequest, Code: "invalid_field", Message: "cwd " + strconv.Quote(de.Dir) + " " + de.Problem + "; nothing was created", Err: err}
		}
	case errors.Is(err, sessions.ErrNoApproval):
		return &web.Error{Status: http.StatusNotFound, Code: "no_approval", Message: "no such pending approval: it was answered already, or never asked", Err: err}
	case errors.Is(err, sessions.ErrBadMode):
		return &web.Error{Status: http.StatusBadRequest, Code: "invalid_field", Message: unprefixed(err), Err: err}
	case errors.Is(err, sessions.ErrBudget):
		msg := "the session tree reached its budget, so no child is created in it"
		if be, ok := errors.AsType[*sessions.BudgetError](err); ok {
			msg = "the session tree of " + be.Root + " has cost " + humanize.Cost(be.Spent.Amount, true) + ", which reached its budget of " +
				humanize.Cost(be.Budget, true) + ", so no child is created in it; raise the budget (the retry action's max_cost) to go on"
		}
		return &web.Error{Status: http.StatusConflict, Code: "budget_reached", Message: msg, Err: err}
	case errors.Is(err, sessions.ErrInvalidBudget):
		return &web.Error{Status: http.StatusBadRequest, Code: "invalid_field", Message: "max_cost must be a number, 0 or more (0 means none)", Err: err}
	case errors.Is(err, sessions.ErrUnknownAction):
		return &web.Error{Status: http.StatusBadRequest, Code: "unknown_action", Message: unprefixed(err), Err: err}
	case errors.Is(err, sessions.ErrStopped):
		// A job stopped before it started (a cancel raced it): nothing was done.
		return &web.Error{Status: http.StatusConflict, Code: "busy", Message: "a cancel stopped this before it started; nothing was done or queued: send it again", Err: err}
	case errors.Is(err, sessions.ErrShutdown):
		// Expected: no cause, so nothing is logged.
		return web.NewError(http.StatusServiceUnavailable, "shutting_down", "the server is shutting down; send it again once it is back")
	case errors.Is(err, sessions.ErrSaveFailed):
		return &web.Error{Status: http.StatusInsufficientStorage, Code: "save_failed", Message: "the session could not be saved (" + saveCause(err) +
			"), so nothing more was done; once the disk has room again (or what failed is fixed), send it again", Err: err}
	}
	return nil
}

// handle adapts a handler that returns an error; serveError answers the error. The
// temporary files of an upload the handler parsed ([uploadForm]) are removed once it
// answered, accepted or refused: net/http removes them only for the request it holds, and
// chi's routing hands the handler a copy of it (r.WithContext), so they stayed in
// $TMPDIR until a reboot.
func (s *server) handle(f func(http.ResponseWriter, *http.Request) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if r.MultipartForm != nil {
				r.MultipartForm.RemoveAll()
			}
		}()
		if err := f(w, r); err != nil {
			s.serveError(w, r, err)
		}
	}
}

// serveError answers an error with its status and a page (or, for htmx, a fragment) that
// shows its sentence; see [sessionError] for the session service's errors. A failure of the
// server is logged once, by [web.Errors.Answer], and answered without its details.
func (s *server) serveError(w http.ResponseWriter, r *http.Request, err error) {
	e := s.errors.Answer(r, err)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(e.Status)
	if r.Header.Get("HX-Request") != "" {
		views.ErrorFragment(e.Message).Render(r.Context(), w)
		return
	}
	views.ErrorPage(views.ErrorView{Chrome: s.chrome("Error", ""), Code: e.Status, Message: e.Message}).Render(r.Context(), w)
}

// unprefixed is the sentence of a session service error, without its package prefix.
func unprefixed(err error) string { return strings.TrimPrefix(err.Error(), "sessions: ") }

// saveCause is what failed of a save: the file operation and its error, when the chain has
// one ("write PATH: no space left on device").
func saveCause(err error) string {
	if pe, ok := errors.AsType[*fs.PathError](err); ok {
		return pe.Error()
	}
	return strings.ReplaceAll(err.Error(), "sessions: ", "")
}

// configMessage says that the profile's config is invalid, and what still works.
func configMessage(err string) string {
	return "This profile's config is invalid, so no model can run: " + err +
		". Fix it and reload; the sessions and the workspace stay readable meanwhile."
}

// configured refuses what needs a model while the profile's config is invalid.
func (s *server) configured() error {
	if s.ConfigError == "" {
		return nil
	}
	return web.NewError(http.StatusServiceUnavailable, "config_invalid", configMessage(s.ConfigError))
}
