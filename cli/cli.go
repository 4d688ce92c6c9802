package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"myco.dev/agent/model"
	"myco.dev/api"
	"myco.dev/hosts"
	"myco.dev/internal/termtext"
	"myco.dev/sessions"
)

// Hosts tells the remote hosts' states, for the chat's /status; *hosts.Harness satisfies
// it.
type Hosts interface {
	Statuses() []hosts.Status
}

// IO is the standard streams of a front end. Stdin, Stdout and Stderr are checked for
// being a terminal when they are *os.File.
type IO struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
}

// Options are the choices of a terminal front end.
type Options struct {
	// Model is the catalog key of the sessions it creates, or the one a resumed session
	// switches to; empty means the service's default, or the session's own.
	Model string
	// Resume is the saved session to continue; empty means a new one.
	Resume string
	// JSON makes [Prompt] print every update as one JSON object per line on stdout.
	JSON bool
	// Result makes [Prompt] print one [Result] object on stdout at the end instead of the
	// answer (--output-format json).
	Result bool
	// MaxCost, when above 0, is made the budget of the session's tree before the prompt
	// runs (--max-cost): the turn stops at its next model request once the tree cost it.
	MaxCost float64

	// The chat's terminal: Term is $TERM (the line editor and colours need one that takes
	// them: not dumb, not unset), NoColor that $NO_COLOR is set.
	Term    string
	NoColor bool
	// History is the file of the chat's line-editor history; empty keeps none.
	History string
	// Hosts tells the remote hosts' states for /status; nil means local only.
	Hosts Hosts
	// MCP tells the MCP servers' states for /status and names an MCP tool's server in
	// the tool lines; nil means none is configured.
	MCP MCPServers
	// Project tells what the project file of Dir, the chat's working directory, offers:
	// the chat says so when it starts, and /status; nil means nothing is looked at.
	Project ProjectServers
	Dir     string
}

// Exit statuses: one per class of failure, so that a script can branch on them
// (docs/cli.md). A signal that stopped the turn is 128 + its number.
const (
	ExitOK          = 0
	ExitError       = 1   // the turn failed otherwise: a save, a tool, anything else
	ExitUsage       = 2   // the command line or the config: a bad flag, an unknown model
	ExitAuth        = 3   // the credential: refused by the gateway, or not found
	ExitRejected    = 4   // the model endpoint refused the request: invalid, too large, not found
	ExitUnavailable = 5   // the model endpoint could not answer, also after its retries
	ExitDenied      = 6   // the turn answered, but a tool call needed approval and was denied
	ExitBudget      = 7   // the session tree reached its budget (--max-cost, max_cost)
	ExitInterrupt   = 130 // 128 + SIGINT
)

// ExitFor returns the exit status of a failure of kind code (the codes of
// [sessions.Kinds], and config_invalid and usage).
func ExitFor(code string) int {
	switch code {
	case "usage", "config_invalid", "unknown_model":
		return ExitUsage
	case "auth_failed", "credential_missing":
		return ExitAuth
	case "rejected", "context_overflow", "request_too_large", "not_found":
		return ExitRejected
	case "rate_limited", "overloaded", "unreachable", "stream_broken", "model_error":
		return ExitUnavailable
	case "budget_reached":
		return ExitBudget
	case "":
		return ExitOK
	}
	return ExitError
}

// Result is what `myco -p --output-format json` prints, one object on stdout when the turn
// ends: how it ended, its answer and what it cost in tokens and time.
type Result struct {
	Type    string       `json:"type"`   // "result"
	Status  string       `json:"status"` // done, failed or stopped
	Session string       `json:"session_id,omitempty"`
	Answer  string       `json:"answer"`
	Code    string       `json:"code,omitempty"`   // a failure's kind, as in last_error
	Error   string       `json:"error,omitempty"`  // what happened and what to do
	Detail  string       `json:"detail,omitempty"` // the technical chain
	Usage   *model.Usage `json:"usage,omitempty"`  // the turn's tokens, when it ended with an answer
	Cost    *api.Cost    `json:"cost,omitempty"`   // and what they cost (known false: the model has no prices)
	// TreeCost is what the session and all its descendants cost so far, when it could be
	// read.
	TreeCost   *api.Cost `json:"tree_cost,omitempty"`
	Duration   float64   `json:"duration_secs"`
	ExitStatus int       `json:"exit_status"` // the process's, as documented
	// Denied counts the tool calls denied for want of an approval (exit status 6).
	Denied int `json:"denied_calls,omitempty"`
}

// ErrEmptyPrompt is the error of [PromptText] for a prompt of nothing but white space: a
// usage error.
var ErrEmptyPrompt = errors.New("the prompt is empty")

// PromptText returns the prompt of myco -p ARG: ARG itself, or standard input when it is
// "-". It is read before the session service starts, so that a bad prompt costs nothing.
func PromptText(arg string, stdin io.Reader) (string, error) {
	prompt := arg
	if prompt == "-" {
		b, err := io.ReadAll(stdin)
		if err != nil {
			return "", fmt.Errorf("read the prompt from standard input: %w", err)
		}
		prompt = string(b)
	}
	if strings.TrimSpace(prompt) == "" {
		return "", ErrEmptyPrompt
	}
	return prompt, nil
}

// Prompt runs myco -p: one turn with prompt as the user's message on a new durable session,
// or on o.Resume. The answer goes to stdout (with o.JSON, every update), activity lines to
// stderr. SIGINT, SIGTERM and SIGHUP stop the turn (a second one kills the process the
// usual way); the exit status is then the signal's.
func Prompt(ctx context.Context, svc *sessions.Manager, std IO, prompt string, o Options) int {
	start := time.Now()
	stdout := std.Stdout
	if o.Result {
		std.Stdout = io.Discard // the result object says it all, once
	}
	t := newTerminal(svc, std, o.JSON, false)
	defer t.close()
	t.out.mcp = o.MCP
	id, err := t.open(ctx, o.Resume, o.Model)
	if err == nil && o.MaxCost > 0 {
		err = svc.SetMaxCost(ctx, id, o.MaxCost)
	}
	if err != nil {
		f := sessions.Describe(err)
		code := t.failed(f)
		if o.Result {
			writeResult(stdout, Result{Status: "failed", Code: f.Code, Error: f.Message, Detail: f.Detail,
				Duration: time.Since(start).Seconds(), ExitStatus: code})
		}
		return code
	}
	res, err := t.run(ctx, id, func() (*sessions.Job, error) {
		return svc.Submit(ctx, id, model.TextPart(prompt))
	})
	code := t.report(res, err)
	denied := t.out.deniedCalls()
	if code == ExitOK && denied > 0 {
		code = ExitDenied
	}
	if o.Result {
		r := Result{Status: "done", Session: id, Answer: res.Answer, Duration: time.Since(start).Seconds(), ExitStatus: code, Denied: denied}
		switch {
		case errors.Is(err, sessions.ErrStopped):
			r.Status, r.Code, r.Error = "stopped", "stopped", "stopped by a signal"
		case err != nil:
			f := sessions.Describe(err)
			r.Status, r.Code, r.Error, r.Detail = "failed", f.Code, f.Message, f.Detail
		default:
			u := res.Usage
			r.Usage = &u
			if _, st, err := svc.Snapshot(context.WithoutCancel(ctx), id); err == nil {
				c := svc.UsageCost(st.Model, u).API()
				r.Cost = &c
			}
		}
		if tree, err := svc.Tree(context.WithoutCancel(ctx), id); err == nil {
			c := tree.Totals().Cost.API()
			r.TreeCost = &c
		}
		writeResult(stdout, r)
	}
	return code
}

// writeResult writes r as one line of JSON, with <, > and & as they are.
func writeResult(w io.Writer, r Result) {
	r.Type = "result"
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(r)
}

// SetupFailed reports a failure before the session service started (the config, the
// profile) for myco -p: the line on stderr and, with asJSON or result, the last object
// on stdout, an error event or a result with its code (config_invalid or failed). It
// returns the exit status: [ExitUsage] for the config, [ExitError] for anything else.
func SetupFailed(std IO, asJSON, result bool, configErr bool, err error) int {
	code, status := "failed", ExitError
	if configErr {
		code, status = "config_invalid", ExitUsage
	}
	Fail(std.Stderr, err)
	enc := json.NewEncoder(std.Stdout)
	enc.SetEscapeHTML(false)
	switch {
	case result:
		writeResult(std.Stdout, Result{Status: "failed", Code: code, Error: err.Error(), ExitStatus: status})
	case asJSON:
		enc.Encode(sessions.Update{Type: sessions.UpdateError, Code: code, Error: err.Error()})
	}
	return status
}

// Compact runs myco --compact ID: summarise session id's active thread into a successor
// thread, and print that on stdout.
func Compact(ctx context.Context, svc *sessions.Manager, std IO, id string, o Options) int {
	t := newTerminal(svc, std, false, false)
	defer t.close()
	id, err := t.open(ctx, id, o.Model)
	if err != nil {
		return t.fail(err)
	}
	t.out.compactResult = true // the session's compacted update is the result, printed once
	_, err = t.run(ctx, id, func() (*sessions.Job, error) { return svc.Compact(ctx, id) })
	switch {
	case errors.Is(err, sessions.ErrStopped):
		return t.stopped()
	case err != nil:
		t.out.turnFailed(err)
		return ExitError
	}
	return ExitOK
}

// Fail prints a one-line error on w, made safe for the terminal, and returns the error
// status.
func Fail(w io.Writer, err error) int {
	fmt.Fprintln(w, "myco:", termtext.Safe(oneLine(err.Error())))
	return ExitError
}

// oneLine keeps an error on one line, unless it carries a block to paste (an example
// config), which must stay intact.
func oneLine(s string) string {
	if strings.Contains(s, "\n\n") {
		return s
	}
	return strings.ReplaceAll(strings.TrimSpace(s), "\n", "; ")
}
