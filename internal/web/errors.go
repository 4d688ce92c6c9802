package web

import (
	"errors"
	"log/slog"
	"net/http"
	"strings"

	"myco.dev/api"
)

// Error is what a server answers for an error, in the manner of tailscale's
// tsweb.HTTPError: the status, a stable code (the API's envelope carries it), and the
// sentence a person or an agent is shown, kept apart from Err, the cause, which is logged
// and never shown.
type Error struct {
	Status  int    // the HTTP status; 0 means 500
	Code    string // the stable code of the JSON envelope; empty means one named for Status
	Message string // the sentence shown
	Err     error  // the cause, if any: logged when the answer is a failure of the server
	// Files are a conflict's files, which the envelope carries (error.files).
	Files []api.ConflictFile
}

// NewError returns an answer without a cause.
func NewError(status int, code, message string) *Error {
	return &Error{Status: status, Code: code, Message: message}
}

// Error returns the message and the cause, for logs.
func (e *Error) Error() string {
	if e.Err != nil {
		return e.Message + ": " + e.Err.Error()
	}
	return e.Message
}

func (e *Error) Unwrap() error { return e.Err }

// Failed reports whether e is a failure of the server, which is logged: a 5xx answer with
// a cause. An answer for a condition the server expects (shutting down, a profile that
// does not start) carries no cause, since its sentence says all there is.
func (e *Error) Failed() bool { return e.Status >= 500 && e.Err != nil }

// ErrorBody is the JSON body of every error answer of both servers, the API's
// [api.ErrorAnswer]:
//
//	{"error": {"code": "busy", "message": "session … is busy: …"}}
type ErrorBody = api.ErrorAnswer

// ErrorDetail is the inside of an [ErrorBody]: a stable code to branch on and a sentence
// to show.
type ErrorDetail = api.ErrorDetail

// Body returns e as the JSON envelope.
func (e *Error) Body() ErrorBody {
	code := e.Code
	if code == "" {
		// "Not Found" -> "not_found", "Service Unavailable" -> "service_unavailable"
		code = strings.ReplaceAll(strings.ToLower(http.StatusText(e.Status)), " ", "_")
	}
	return ErrorBody{Error: ErrorDetail{Code: code, Message: e.Message, Files: e.Files}}
}

// WriteError answers e in the JSON envelope, with its status.
func WriteError(w http.ResponseWriter, e *Error) { WriteJSON(w, e.Status, e.Body()) }

// Domain translates the errors of the packages a server calls (a session that does not
// exist, a busy one) into answers, or returns nil for an error it does not know. Each
// server has one, written in one place, and passes it to [Resolve].
type Domain func(error) *Error

// InternalMessage is the sentence of an error no mapping knows.
const InternalMessage = "the server failed to do this; its log says why"

// Resolve is the one mapping from an error to its answer: the first [*Error] in err's
// chain; else what domain (nil means none) makes of err; else 500 with code "internal",
// whose cause is err.
func Resolve(err error, domain Domain) *Error {
	var e *Error
	if !errors.As(err, &e) && domain != nil {
		e = domain(err)
	}
	if e == nil {
		return &Error{Status: http.StatusInternalServerError, Code: "internal", Message: InternalMessage, Err: err}
	}
	if e.Status == 0 {
		c := *e
		c.Status = http.StatusInternalServerError
		e = &c
	}
	return e
}

// Errors answers the errors of one server's handlers: one mapping for its pages and its
// API, and one log line for each failure.
type Errors struct {
	Domain Domain
	Log    *slog.Logger // nil means slog.Default()
}

// Answer resolves err (see [Resolve]) and, when the answer is a failure of the server,
// logs it: exactly once, with the request, the status and the cause.
func (x Errors) Answer(r *http.Request, err error) *Error {
	e := Resolve(err, x.Domain)
	if e.Failed() {
		log := x.Log
		if log == nil {
			log = slog.Default()
		}
		log.Error("request failed", "method", r.Method, "path", r.URL.Path, "status", e.Status, "err", e.Err)
	}
	return e
}
