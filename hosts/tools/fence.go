package tools

import (
	"context"
	"os"
	"strings"

	"myco.dev/hosts/sandbox"
)

type fenceKey struct{}

// Fenced is the sandbox that the processes of a tool call run in.
type Fenced struct {
	Fence *sandbox.Fence
	Spec  sandbox.Spec
	// TmpDir is the call's private temporary directory, given to the processes as TMPDIR
	// (and writable in Spec).
	TmpDir string
	// Mode names the session's mode in what the model is told of a refusal.
	Mode string
	// Remote asks a remote host to fence the call in its own sandbox (Fence is nil then):
	// the host decides its paths; ReadOnly and Spec.Network say how.
	Remote   bool
	ReadOnly bool
}

// WithSandbox returns a copy of ctx under which bash runs its commands (exec and start)
// fenced in as f says. Like [WithWorkDir] it rides on the call's context.
func WithSandbox(ctx context.Context, f Fenced) context.Context {
	if f.Fence == nil && !f.Remote {
		return ctx
	}
	return context.WithValue(ctx, fenceKey{}, f)
}

// SandboxFrom returns what [WithSandbox] set in ctx.
func SandboxFrom(ctx context.Context) (Fenced, bool) {
	f, ok := ctx.Value(fenceKey{}).(Fenced)
	return f, ok
}

// setEnv returns env (nil: the process's own) with name set to value.
func setEnv(env []string, name, value string) []string {
	if env == nil {
		env = os.Environ()
	}
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return append(out, name+"="+value)
}

// refusalWords are what a command prints when the sandbox refused it something.
var refusalWords = []string{"Permission denied", "Operation not permitted", "Read-only file system", "Network is unreachable", "Connection refused"}

// sandboxNote returns what the model is told after a fenced command failed with output
// that looks like a refusal of the sandbox, or "".
func sandboxNote(ctx context.Context, out string, failed bool) string {
	f, ok := SandboxFrom(ctx)
	if !ok || !failed {
		return ""
	}
	for _, w := range refusalWords {
		if strings.Contains(out, w) {
			mode := f.Mode
			if mode == "" {
				mode = "sandboxed"
			}
			return "[myco: this command ran in the sandbox (" + mode + " mode): it may write only in the session's directory and $TMPDIR, never .git/hooks or .git/config, cannot read myco's home, and has no network unless the mode allows it. If it needs more, call bash again with outside_sandbox: true and a justification; the person is asked and sees the justification.]\n"
		}
	}
	return ""
}
