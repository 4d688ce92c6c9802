package sessions

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"syscall"
	"unicode/utf8"

	"myco.dev/agent/model"
	"myco.dev/internal/humanize"
)

// Kind is a kind of end of a turn or job without an answer: the code that the API's
// last_error, the error and cancelled updates (`myco -p --json`) and the browser's note all
// carry, and whether sending the turn again as it is can help, which is when Retry is
// offered.
type Kind struct {
	Code  string
	Retry bool
	When  string // when it happens, for the API's document
}

// Kinds are the kinds of end, the one list every front end tells failures by: the words
// are [Describe]'s. A later myco may add kinds; a client should treat a code it does not
// know as "failed".
var Kinds = []Kind{
	{"stopped", true, "the user stopped it"},
	{"shutdown", true, "the server stopped while it ran"},
	{"interrupted", true, "the process running it stopped (a crash); its running calls have unknown outcomes"},
	{"request_too_large", false, "over max_request_bytes: refused before it was sent, and rewound"},
	{"context_overflow", false, "the model's context window does not hold it: refused, and rewound"},
	{"rejected", true, "the model endpoint refused the request as invalid (400, 413, 422): rewound"},
	{"auth_failed", false, "the gateway refused the credential (401, 403): fix auth in the config"},
	{"credential_missing", false, "the credential could not be looked up: its environment variable is not set, or its file is missing or empty"},
	{"not_found", false, "the gateway answered 404: the model id (api_id) or the base_url is wrong"},
	{"rate_limited", true, "the gateway answered 429 (rate limited), also to the retries"},
	{"overloaded", true, "the gateway was overloaded (529, 503), also at the retries"},
	{"unreachable", true, "the gateway could not be reached (connection refused, unknown host, TLS), also at the retries"},
	{"stream_broken", true, "the model's answer broke off: its stream ended early, went silent, or carried an error"},
	{"model_error", true, "the model endpoint failed otherwise (another status, no response in time, a response over a cap), after its retries"},
	{"save_failed", true, "a save failed, so the session's work stopped"},
	{"compaction_loop", false, "auto-compaction would loop: the run stopped"},
	{"unknown_model", true, "the session's model is no longer in the catalog: choose another"},
	{"budget_reached", false, "what the session tree cost reached its budget (max_cost): retry with a higher max_cost"},
	{"failed", true, "anything else"},
}

// Retryable reports whether sending a turn that ended with code again as it is can help
// (a code no [Kind] has, "" included, is "failed", which can).
func Retryable(code string) bool {
	for _, k := range Kinds {
		if k.Code == code {
			return k.Retry
		}
	}
	return true
}

// Failure is what every front end tells of a turn or job that ended without an answer:
// the kind's code, what happened and what to do in plain words (the browser's note, the
// terminal's line, the API's last_error.message), and the technical chain, which the
// browser folds under Details and the terminal prints dimmed.
type Failure struct {
	Code    string // one of [Kinds], or "busy"
	Message string
	Detail  string // the status and what the endpoint said, bounded; "" when there is none
}

// Describe returns how err, the error a turn or job ended with, is told.
func Describe(err error) Failure {
	var tl *model.RequestTooLargeError
	var pe *model.ProviderError
	var ce *model.CredentialError
	var te *model.TimeoutError
	var ee *model.EventError
	var again *overflowAgainError
	var busy *BusyError
	var unknown *UnknownModelError
	var budget *BudgetError
	var loop *compactionLoopError
	at, _ := errors.AsType[*endpointError](err)
	var w where
	if at != nil {
		w = where(at.at)
	}
	switch {
	case err == nil:
		return Failure{}
	case errors.Is(err, ErrSaveFailed):
		return Failure{"save_failed", "A save failed, so the session's work stopped. Once the disk has room again (or what failed is fixed), send the message again.", bounded(cause(err))}
	case errors.Is(err, ErrStopped):
		return Failure{Code: "stopped", Message: "stopped by the user"}
	case errors.Is(err, ErrShutdown):
		return Failure{Code: "shutdown", Message: "the server stopped while the turn ran"}
	case errors.As(err, &tl):
		return Failure{"request_too_large", fmt.Sprintf("The message was not sent: the request is %d bytes, over max_request_bytes (%d), so the turn was rewound and the message is not in the model's context. "+
			"Send a shorter message or fewer attachments, or compact the session; raise max_request_bytes if the endpoint accepts more.", tl.Size, tl.Limit), tl.Error()}
	case errors.As(err, &again) && errors.As(err, &pe):
		return Failure{"context_overflow", "The message does not fit in the model's context window even after the session was compacted, so the turn was rewound. " +
			"Send a shorter message (fewer or smaller attachments), start a new session, or switch to a model with a larger context window.", providerSays(pe)}
	case errors.As(err, &pe) && pe.Overflow():
		return Failure{"context_overflow", "The conversation no longer fits in the model's context window, so the turn was rewound: the message is not in the model's context. " +
			"Compact the session (/compact, or the compact action) and send it again, or start a new session.", providerSays(pe)}
	case errors.As(err, &pe) && pe.Rejected():
		return Failure{"rejected", w.who(true) + " refused the request as invalid (" + status(pe.Status) + "), so the turn was rewound: the message is not in the model's context. " +
			"Edit it and send it again.", providerSays(pe)}
	case errors.As(err, &loop):
		return Failure{Code: "compaction_loop", Message: loop.Error()}
	case errors.As(err, &busy):
		return Failure{Code: "busy", Message: busy.Error()}
	case errors.As(err, &budget):
		return Failure{Code: "budget_reached", Message: fmt.Sprintf("This session tree has cost %s, which reached its budget of %s, so the turn stopped before its next model request; nothing it did is lost. "+
			"Retry with a higher budget to go on.", humanize.Cost(budget.Spent.Amount, true), humanize.Cost(budget.Budget, true))}
	case errors.As(err, &unknown):
		return Failure{Code: "unknown_model", Message: unknown.Error()}
	case errors.As(err, &ce):
		return Failure{"credential_missing", "The credential for " + w.who(false) + " could not be read: " + ce.Err.Error() + ". " + w.credentialFix(), ""}
	case errors.As(err, &pe) && pe.MidStream:
		return Failure{"stream_broken", "The model's answer broke off: " + w.who(false) + " sent an error in the middle of it" + kindOf(pe) + ". Try again.", providerSays(pe)}
	case errors.As(err, &pe):
		return w.providerFailure(pe)
	case errors.As(err, &te) && te.Header:
		return Failure{"model_error", w.who(true) + " sent no answer within " + te.Limit.String() + ". Try again; if it is this slow to start answering, raise response_header_timeout_secs of " + w.table() + " in config.toml.", te.Error()}
	case errors.As(err, &te):
		return Failure{"stream_broken", "The model's answer broke off: the stream from " + w.who(false) + " was silent for " + te.Limit.String() + ". Try again; if the model pauses that long, raise stream_idle_timeout_secs of " + w.table() + " in config.toml.", te.Error()}
	case errors.As(err, &ee):
		return Failure{"stream_broken", "The model's answer broke off: the stream from " + w.who(false) + " sent an event myco could not read, so the answer was discarded and none of its tool calls ran. Try again.", bounded(cause(err))}
	case errors.Is(err, model.ErrTruncatedStream):
		return Failure{"stream_broken", "The model's answer broke off: the stream from " + w.who(false) + " ended before the answer was complete. Try again.", bounded(cause(err))}
	case errors.As(err, new(*model.ResponseTooLargeError)):
		return Failure{"model_error", "The answer from " + w.who(false) + " was larger than myco accepts, so it was discarded and none of its tool calls ran. Try again.", bounded(cause(err))}
	}
	return Failure{Code: "failed", Message: bounded(cause(err))}
}

// providerFailure tells a model endpoint's answer that was not a stream, and not about
// what the request holds.
func (w where) providerFailure(pe *model.ProviderError) Failure {
	detail := providerSays(pe)
	switch {
	case pe.Status == http.StatusUnauthorized || pe.Status == http.StatusForbidden || pe.Type == "authentication_error" || pe.Type == "permission_error":
		msg := w.who(true) + " refused the credential (" + status(pe.Status) + ")"
		if pe.Status == http.StatusForbidden || pe.Type == "permission_error" {
			msg += ": the key may not be allowed this model"
		}
		return Failure{"auth_failed", msg + ". Check `auth` of " + w.authOf() + " in config.toml" + w.authFrom() + "; then try again.", detail}
	case pe.Status == http.StatusNotFound:
		msg := w.who(true) + " answered 404 Not Found: the model id or the base URL is wrong. Check "
		if w.apiModel != "" {
			msg += fmt.Sprintf("the model id it was sent (%q: `api_id` of model %s, or the model's key when api_id is unset)", w.apiModel, w.model)
		} else {
			msg += "the model id (`api_id` of the model)"
		}
		if w.BaseURL != "" {
			msg += " and `base_url` of " + w.BaseURLOf + " (" + w.BaseURL + ")"
		} else {
			msg += " and its `base_url`"
		}
		return Failure{"not_found", msg + " in config.toml; then try again.", detail}
	case pe.Status == http.StatusTooManyRequests || pe.Type == "rate_limit_error" || pe.Type == "rate_limit_exceeded":
		return Failure{"rate_limited", w.who(true) + " refused the request with " + status(http.StatusTooManyRequests) + ": the key is rate limited" + attempts(pe) +
			". Wait a minute and try again; if it keeps happening, the key's rate limit or quota is too low for this work.", detail}
	case pe.Status == 529 || pe.Status == http.StatusServiceUnavailable || pe.Type == "overloaded_error":
		return Failure{"overloaded", w.who(true) + " is overloaded (" + status(pe.Status) + ")" + attempts(pe) + ". Try again in a few minutes.", detail}
	case pe.Status == 0 && pe.Err != nil:
		at := ""
		if w.BaseURL != "" {
			at = " at " + w.BaseURL
		}
		return Failure{"unreachable", w.who(true) + " could not be reached" + at + " (" + connectProblem(pe.Err) + ")" + attempts(pe) +
			". Check that it is running and that `base_url` of " + w.baseURLOf() + " in config.toml is right, then try again.", detail}
	case pe.Status/100 == 3:
		return Failure{"model_error", w.who(true) + " answered with a redirect (" + status(pe.Status) + "), which myco does not follow: the conversation and the credential go only to the configured base_url. " +
			"If the new address is right, put it in `base_url` of " + w.baseURLOf() + " in config.toml.", detail}
	}
	return Failure{"model_error", w.who(true) + " failed (" + status(pe.Status) + ")" + attempts(pe) + ". Try again; if it keeps failing, the details say what it answered.", detail}
}

// where is the endpoint a failed request went to, as the words name it.
type where endpointAt

// who names the endpoint: "the gateway NAME", "the endpoint of model KEY", or "the model
// endpoint" when nothing is known; capitalized to start a sentence.
func (w where) who(capital bool) string {
	s := "the model endpoint"
	switch {
	case w.Gateway != "":
		s = "the gateway " + w.Gateway
	case w.model != "":
		s = "the endpoint of model " + w.model
	}
	if capital {
		return "T" + s[1:]
	}
	return s
}

// table names the config table of the endpoint's settings.
func (w where) table() string {
	switch {
	case w.Gateway != "":
		return "gateway " + w.Gateway
	case w.model != "":
		return "model " + w.model
	}
	return "the model's gateway"
}

func (w where) authOf() string {
	if w.AuthOf != "" {
		return w.AuthOf
	}
	return w.table()
}

func (w where) baseURLOf() string {
	if w.BaseURLOf != "" {
		return w.BaseURLOf
	}
	return w.table()
}

// authFrom says where the credential comes from, never what it is.
func (w where) authFrom() string {
	switch w.AuthSource {
	case "env":
		return " (it reads the key from the environment variable " + w.AuthName + ")"
	case "file":
		return " (it reads the key from the file " + w.AuthName + ")"
	case "inline":
		return " (the key is written there)"
	case "":
		if w.AuthOf != "" {
			return " (it sends no key: auth is not set)"
		}
	}
	return ""
}

// credentialFix says what to do about a credential that could not be looked up.
func (w where) credentialFix() string {
	switch w.AuthSource {
	case "env":
		return "Set " + w.AuthName + " in the environment myco runs in (or in the profile's .env), or change `auth` of " + w.authOf() + " in config.toml; then try again."
	case "file":
		return "Put the key in " + w.AuthName + ", or change `auth` of " + w.authOf() + " in config.toml; then try again."
	}
	return "Fix `auth` of " + w.authOf() + " in config.toml; then try again."
}

// status is an HTTP status with its text: "401 Unauthorized", "529".
func status(code int) string {
	if code == 529 {
		return "529 Overloaded" // Anthropic's, which net/http does not name
	}
	if t := http.StatusText(code); t != "" {
		return fmt.Sprintf("%d %s", code, t)
	}
	return fmt.Sprint(code)
}

// attempts says how often a request was sent, when it was more than once.
func attempts(pe *model.ProviderError) string {
	if pe.Attempts > 1 {
		return fmt.Sprintf(", also after %d attempts", pe.Attempts)
	}
	return ""
}

// kindOf is the provider's error type in parentheses, when it is a plain identifier: what
// a gateway sends is not trusted to be words.
func kindOf(pe *model.ProviderError) string {
	t := pe.Type
	if t == "" || len(t) > 40 || strings.ContainsFunc(t, func(r rune) bool { return !(r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9') }) {
		return ""
	}
	return " (" + t + ")"
}

// connectProblem says in a few words why a connection could not be made.
func connectProblem(err error) string {
	var dns *net.DNSError
	var ne net.Error
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.As(err, &dns):
		return "the host name does not resolve"
	case errors.Is(err, syscall.ECONNRESET):
		return "the connection was reset"
	case errors.As(err, &ne) && ne.Timeout():
		return "the connection timed out"
	case strings.Contains(err.Error(), "tls:") || strings.Contains(err.Error(), "x509:"):
		return "the TLS handshake failed"
	}
	return "the connection failed"
}

// providerSays is what the model endpoint said, with its status, bounded.
func providerSays(pe *model.ProviderError) string { return bounded(pe.Error()) }

// cause is err's message without the package prefixes a chain gathers.
func cause(err error) string {
	return strings.ReplaceAll(err.Error(), "sessions: ", "")
}

// maxDetail bounds the technical detail of a failure: what a gateway sent may be anything.
const maxDetail = 2000

// bounded returns s cut to maxDetail bytes on a rune boundary. Its control characters are
// left for each front end to escape as it writes (the terminal's termtext.Safe, the page's
// HTML escaping, JSON's), as for the rest of what a model endpoint sends.
func bounded(s string) string {
	if len(s) <= maxDetail {
		return s
	}
	n := maxDetail
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// legacyEnd reads a turn end saved before failures were told by kind: a model_error or
// failed end kept the technical chain as its words, which becomes its detail under the
// kind's plain words.
func legacyEnd(e TurnEnd) TurnEnd {
	if e.Detail != "" || e.Status != TurnFailed {
		return e
	}
	switch e.Code {
	case "model_error":
		e.Detail, e.Error = e.Error, "The model endpoint failed, or its answer broke off. Try again."
	case "", "failed":
		e.Detail, e.Error = e.Error, "The turn failed."
	}
	return e
}
