package handlers

import (
	"errors"
	"io/fs"
	"net/http"

	"myco.dev/sessions"
	"myco.dev/views"
)

// HTTPError is an error with the status to answer and the sentence to show a person; the
// error chain, if any, is logged and never shown.
type HTTPError struct {
	Status  int
	Message string
	Err     error
}

func (e *HTTPError) Error() string {
	if e.Err != nil {
		return e.Message + ": " + e.Err.Error()
	}
	return e.Message
}

func (e *HTTPError) Unwrap() error { return e.Err }

func httpError(status int, msg string) error { return &HTTPError{Status: status, Message: msg} }

var errNotFound = httpError(http.StatusNotFound, "There is nothing at this address.")

// handle adapts a handler that returns an error; serveError answers the error.
func (s *server) handle(f func(http.ResponseWriter, *http.Request) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := f(w, r); err != nil {
			s.serveError(w, r, err)
		}
	}
}

// serveError turns an error into a status and a page (or, for htmx, a fragment): a missing
// session or file is 404, a busy session 409, a bad form 400; anything else is logged and
// answered 500 without its details.
func (s *server) serveError(w http.ResponseWriter, r *http.Request, err error) {
	var he *HTTPError
	var busy *sessions.BusyError
	switch {
	case errors.As(err, &he):
	case errors.Is(err, sessions.ErrNotFound), errors.Is(err, fs.ErrNotExist):
		he = &HTTPError{Status: http.StatusNotFound, Message: "There is nothing at this address.", Err: err}
	case errors.As(err, &busy):
		he = &HTTPError{Status: http.StatusConflict, Message: busy.Error(), Err: err}
	case errors.Is(err, sessions.ErrShutdown):
		he = &HTTPError{Status: http.StatusServiceUnavailable, Message: "The server is shutting down.", Err: err}
	default:
		s.Log.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		he = &HTTPError{Status: http.StatusInternalServerError, Message: "Something went wrong on the server; its log says what.", Err: err}
	}
	if he.Status >= 500 && he.Err != nil && !errors.Is(err, sessions.ErrShutdown) {
		s.Log.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", he)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(he.Status)
	if r.Header.Get("HX-Request") != "" {
		views.ErrorFragment(he.Message).Render(r.Context(), w)
		return
	}
	views.ErrorPage(views.ErrorView{Chrome: s.chrome("Error", ""), Code: he.Status, Message: he.Message}).Render(r.Context(), w)
}
