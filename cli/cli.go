package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"myco.dev/agent/model"
	"myco.dev/hosts"
	"myco.dev/internal/termtext"
	"myco.dev/sessions"
)

// Sessions is what the terminal front ends need of the profile's session service;
// *sessions.Manager satisfies it.
type Sessions interface {
	Create(ctx context.Context, o sessions.CreateOptions) (string, error)
	Submit(ctx context.Context, id string, input ...model.Part) (*sessions.Job, error)
	Compact(ctx context.Context, id string) (*sessions.Job, error)
	Stop(id string) bool
	Snapshot(ctx context.Context, id string) (*sessions.Session, sessions.Status, error)
	List(ctx context.Context, o sessions.ListOptions) ([]sessions.Listed, error)
	SetArchived(ctx context.Context, id string, archived bool) error
	SelectModel(ctx context.Context, id, key string) error
	Subscribe(ids []string, after string) *sessions.Subscription
	CloseSession(id string)
	// The catalog, for /model and the context meter.
	Models() []sessions.ModelInfo
	DefaultModel() string
	Model(key string) (sessions.ModelInfo, error)
}

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
}

// Exit statuses.
const (
	ExitOK        = 0
	ExitError     = 1
	ExitUsage     = 2
	ExitInterrupt = 130 // 128 + SIGINT
)

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
func Prompt(ctx context.Context, svc Sessions, std IO, prompt string, o Options) int {
	t := newTerminal(svc, std, o.JSON, false)
	defer t.close()
	t.out.mcp = o.MCP
	id, err := t.open(ctx, o.Resume, o.Model)
	if err != nil {
		return t.fail(err)
	}
	res, err := t.run(ctx, id, func() (*sessions.Job, error) {
		return svc.Submit(ctx, id, model.TextPart(prompt))
	})
	return t.report(res, err)
}

// Compact runs myco --compact ID: summarise session id's active thread into a successor
// thread, and print that on stdout.
func Compact(ctx context.Context, svc Sessions, std IO, id string, o Options) int {
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
