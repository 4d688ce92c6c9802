package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"myco.dev/agent/model"
)

// BashOptions configures a [Bash] service. Zero fields take the defaults shown.
type BashOptions struct {
	Shell string   // the shell that runs commands as `Shell -c COMMAND`; default /bin/bash
	Env   []string // the commands' environment; nil means the host process's environment
	// DefaultTimeout bounds an exec call without timeout_secs (default 120 s); MaxTimeout
	// is the largest timeout_secs any action accepts (default 600 s).
	DefaultTimeout time.Duration
	MaxTimeout     time.Duration
	// MaxOutputBytes bounds the output in one result: the first and last halves are kept
	// around an omission marker (default 32 KiB).
	MaxOutputBytes int
	// SessionBufferBytes is how much recent output a session keeps (default 1 MiB).
	SessionBufferBytes int
	// SettleQuiet is how long a session must be silent for its output to count as settled
	// (default 300 ms); DefaultWait bounds the wait of start and write (default 10 s).
	SettleQuiet time.Duration
	DefaultWait time.Duration
	// Reaper, when not nil, is told each process group the tool starts and ends, so that
	// the groups die with the host process however it ends (see myco.dev/internal/reaper).
	// nil means none: the groups are killed when the tool ends them, on Release and on
	// Close, but not when the host process is killed.
	Reaper Reaper
	Log    *slog.Logger // nil means slog.Default()
}

// Reaper is the part of a reaper process that the bash tool uses. The tool calls Prepare
// before it starts a process group, so that the reaper (started at the first call) is
// ready to take the group the moment it exists; then Track with the group, whose leader
// was just started; then untrack once the group is killed and its leader waited for, so
// that a reused group number is never killed. Implementations are safe for concurrent use.
type Reaper interface {
	Prepare()
	Track(pgid int) (untrack func())
}

// Bash is the bash tool: one-shot commands (exec) and long-lived processes with a stdin
// pipe (start, write, read, kill, list). Every process runs in its own process group, which
// is killed as a whole. It is safe for concurrent use. Caller must Close it when the host
// exits.
type Bash struct {
	opts BashOptions
	wg   sync.WaitGroup // session goroutines
	uses atomic.Int64   // counts session uses, which orders them for WorkDir

	mu     sync.Mutex // guards the fields below
	owners map[string]*bashOwner
	closed bool
}

// bashOwner is what one owner holds. Its fields are guarded by Bash.mu.
type bashOwner struct {
	next     int // the number of the last session id handed out
	sessions map[string]*session
	nextExec int
	execs    map[int]context.CancelCauseFunc // exec calls in flight
	runners  map[string]*ownerRunner         // by fence and spec: see Bash.runner
}

var (
	errTimeout  = errors.New("timeout")
	errReleased = errors.New("released")
	errClosed   = errors.New("closed")
)

// NewBash returns a bash service.
func NewBash(opts BashOptions) *Bash {
	if opts.Shell == "" {
		opts.Shell = "/bin/bash"
	}
	if opts.DefaultTimeout <= 0 {
		opts.DefaultTimeout = 120 * time.Second
	}
	if opts.MaxTimeout <= 0 {
		opts.MaxTimeout = 600 * time.Second
	}
	if opts.MaxOutputBytes <= 0 {
		opts.MaxOutputBytes = 32 << 10
	}
	if opts.SessionBufferBytes <= 0 {
		opts.SessionBufferBytes = 1 << 20
	}
	if opts.SettleQuiet <= 0 {
		opts.SettleQuiet = 300 * time.Millisecond
	}
	if opts.DefaultWait <= 0 {
		opts.DefaultWait = 10 * time.Second
	}
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	return &Bash{opts: opts, owners: map[string]*bashOwner{}}
}

// Name returns "bash".
func (b *Bash) Name() string { return "bash" }

// Spec returns the tool's declaration.
func (b *Bash) Spec() model.ToolSpec {
	desc := fmt.Sprintf(`Run shell commands with bash.
action=exec (the default) runs "bash -c COMMAND" to completion with stdin from /dev/null and stdout+stderr combined, then reports the exit status; a nonzero status is reported, not treated as a tool error. Default timeout %s, at most %s (timeout_secs); on timeout the whole process group is killed. Nothing an exec starts outlives it: use action=start for servers and other long-lived processes.
On the local host, exec and start begin in this session's directory (the # Session block of the runtime notes names it); on a remote host, in the host process's working directory. There is no working-directory field: use "cd /path && command" (an exec's directory change lasts only for that call).
action=start runs COMMAND (for example "bash --noprofile --norc") as a session with a stdin pipe and returns its session_id and first output. action=write sends input to its stdin (a newline is added unless input ends with one) and returns the output once it settles (%s without output, at most timeout_secs, default %s). action=read returns output not yet returned; with timeout_secs it waits up to that long for some. action=kill ends a session and forgets it; action=list lists your sessions. Exited sessions stay listed until killed.
Each result shows at most %d bytes of output (head and tail, with a marker for what was left out).
The session's mode may run commands in a sandbox (the # Session block of the runtime notes says which): there a command may write only in the session's directory and $TMPDIR (not .git/hooks or .git/config), cannot read myco's home, and reaches the network only if the mode allows it; what it is refused fails with "Permission denied" or the like. To run a command outside the sandbox, set outside_sandbox: true with a justification: the person is asked first.`,
		secs(b.opts.DefaultTimeout), secs(b.opts.MaxTimeout), b.opts.SettleQuiet, secs(b.opts.DefaultWait), b.opts.MaxOutputBytes)
	return model.ToolSpec{Name: b.Name(), Description: desc, Schema: json.RawMessage(`{
  "type": "object",
  "properties": {
    "command": {"type": "string", "description": "The bash command line (exec, start)."},
    "action": {"type": "string", "enum": ["exec", "start", "write", "read", "kill", "list"], "description": "What to do; default exec."},
    "session_id": {"type": "string", "description": "The session to act on (write, read, kill), as returned by start."},
    "input": {"type": "string", "description": "Text to send to the session's stdin (write)."},
    "timeout_secs": {"type": "number", "description": "exec: kill after this many seconds. start, write, read: the longest wait for output."},
    "outside_sandbox": {"type": "boolean", "description": "exec, start: run outside the sandbox. Always asks the person first (or follows their rules); use it only after the sandbox refused what the command needs."},
    "justification": {"type": "string", "description": "With outside_sandbox: why the command needs to run outside the sandbox, shown to the person who decides."}
  },
  "additionalProperties": false
}`)}
}

type bashInput struct {
	Command     *string  `json:"command"`
	Action      string   `json:"action"`
	SessionID   *string  `json:"session_id"`
	Input       *string  `json:"input"`
	TimeoutSecs *float64 `json:"timeout_secs"`
	// OutsideSandbox and Justification are read by the controller's policy before the call
	// reaches the tool; the tool only accepts them.
	OutsideSandbox *bool   `json:"outside_sandbox"`
	Justification  *string `json:"justification"`
}

var bashFields = []string{"command", "action", "session_id", "input", "timeout_secs", "outside_sandbox", "justification"}

func bashHint(field string) string {
	switch strings.ToLower(field) {
	case "cwd", "dir", "workdir", "working_dir", "working_directory", "directory", "path":
		return `There is no working-directory field: use "cd /path && command"`
	case "id", "session", "sessionid":
		return "Use session_id"
	}
	return ""
}

// Call runs one bash action for owner.
func (b *Bash) Call(ctx context.Context, owner string, input json.RawMessage) Result {
	var in bashInput
	if err := decodeInput(input, &in, bashFields, bashHint); err != nil {
		return Errorf("%v (nothing was run)", err)
	}
	if in.Action == "" {
		in.Action = "exec"
	}
	type need struct{ command, session, input, timeout bool } // which fields the action takes
	needs := map[string]need{
		"exec":  {command: true, timeout: true},
		"start": {command: true, timeout: true},
		"write": {session: true, input: true, timeout: true},
		"read":  {session: true, timeout: true},
		"kill":  {session: true},
		"list":  {},
	}
	n, ok := needs[in.Action]
	if !ok {
		return Errorf("unknown action %q; the actions are exec, start, write, read, kill and list", in.Action)
	}
	for _, f := range []struct {
		name      string
		set, want bool
	}{
		{"command", in.Command != nil, n.command},
		{"session_id", in.SessionID != nil, n.session},
		{"input", in.Input != nil, n.input},
		{"timeout_secs", in.TimeoutSecs != nil, n.timeout},
	} {
		switch {
		case f.set && !f.want:
			return Errorf("action=%s does not take %s", in.Action, f.name)
		case !f.set && f.want && f.name != "timeout_secs":
			return Errorf("action=%s needs %s", in.Action, f.name)
		}
	}
	if in.Command != nil && strings.TrimSpace(*in.Command) == "" {
		return Errorf("command is empty")
	}
	var timeout time.Duration
	if in.TimeoutSecs != nil {
		t := *in.TimeoutSecs
		if !(t > 0) || time.Duration(t*float64(time.Second)) > b.opts.MaxTimeout {
			return Errorf("timeout_secs must be more than 0 and at most %s, not %s", strings.TrimSuffix(secs(b.opts.MaxTimeout), "s"), strconv.FormatFloat(t, 'f', -1, 64))
		}
		timeout = time.Duration(t * float64(time.Second))
	}
	switch in.Action {
	case "exec":
		if timeout == 0 {
			timeout = b.opts.DefaultTimeout
		}
		return b.exec(ctx, owner, *in.Command, timeout)
	case "start":
		if timeout == 0 {
			timeout = b.opts.DefaultWait
		}
		return b.start(ctx, owner, *in.Command, timeout)
	case "write":
		if timeout == 0 {
			timeout = b.opts.DefaultWait
		}
		return b.write(ctx, owner, *in.SessionID, *in.Input, timeout)
	case "read":
		return b.read(ctx, owner, *in.SessionID, timeout)
	case "kill":
		return b.kill(owner, *in.SessionID)
	default:
		return b.list(owner)
	}
}

// exec runs command to completion. The process group is killed when the command ends,
// times out, or the call is cancelled, so nothing it started outlives the call.
func (b *Bash) exec(ctx context.Context, owner, command string, timeout time.Duration) Result {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	untrack, ok := b.trackExec(owner, cancel)
	if !ok {
		return Errorf("bash is shut down on this host")
	}
	defer untrack()
	ctx, stop := context.WithTimeoutCause(ctx, timeout, errTimeout)
	defer stop()

	dir, err := workDir(ctx)
	if err != nil {
		return Errorf("%v", err)
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return Errorf("run command: %v", err)
	}
	cmd := exec.CommandContext(ctx, b.opts.Shell, "-c", command)
	cmd.Env, cmd.Dir = withPWD(envFor(ctx, b.opts.Env), dir), dir
	cmd.Stdout, cmd.Stderr = pw, pw // one file: output arrives interleaved as written
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return killGroup(cmd.Process.Pid) }
	cmd.WaitDelay = time.Second
	p, err := b.startProc(ctx, owner, cmd)
	pw.Close()
	if err != nil {
		pr.Close()
		if ctx.Err() != nil { // it ended while the sandbox's helper started
			return execEnded(ctx, "", timeout)
		}
		return Errorf("%v", err)
	}
	untrackGroup := b.track(p.pid)
	out := &headTail{max: b.opts.MaxOutputBytes}
	var wg sync.WaitGroup
	wg.Go(func() { io.Copy(ProgressWriter(ctx, out), pr) })
	ws, waitErr := p.wait()
	killGroup(p.pid)
	untrackGroup()
	// A process that left the group (setsid) may still hold the pipe: stop reading soon.
	pr.SetReadDeadline(time.Now().Add(time.Second))
	wg.Wait()
	pr.Close()

	text := out.String()
	if text != "" && !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	switch {
	case ctx.Err() != nil:
		return execEnded(ctx, text, timeout)
	case waitErr == nil:
		return Result{Text: text + sandboxNote(ctx, text, ws != 0) + "[" + exitStatus(ws) + "]"}
	default:
		return Result{Text: text + "[" + waitErr.Error() + "]", IsError: true}
	}
}

// execEnded is the result of an exec whose ctx ended, after its output text: why.
func execEnded(ctx context.Context, text string, timeout time.Duration) Result {
	switch cause := context.Cause(ctx); {
	case errors.Is(cause, errTimeout):
		return Result{Text: text + "[killed after timeout " + secs(timeout) + "]", IsError: true}
	case errors.Is(cause, errReleased):
		return Result{Text: text + "[killed: this session runtime's bash resources were released]", IsError: true}
	case errors.Is(cause, errClosed):
		return Result{Text: text + "[killed: the host is shutting down]", IsError: true}
	default:
		return Result{Text: text + "[killed: the call was cancelled]", IsError: true}
	}
}

// trackExec registers an exec in flight so that Release and Close can cancel it.
func (b *Bash) trackExec(owner string, cancel context.CancelCauseFunc) (untrack func(), ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, false
	}
	o := b.ownerLocked(owner)
	o.nextExec++
	n := o.nextExec
	o.execs[n] = cancel
	return func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		delete(o.execs, n)
	}, true
}

// prepare readies the reaper, if there is one, for a group about to start.
func (b *Bash) prepare() {
	if b.opts.Reaper != nil {
		b.opts.Reaper.Prepare()
	}
}

// track registers the process group led by pid with the reaper, if there is one.
func (b *Bash) track(pid int) (untrack func()) {
	if b.opts.Reaper == nil {
		return func() {}
	}
	return b.opts.Reaper.Track(pid)
}

// ownerLocked returns owner's state, creating it. b.mu must be held.
func (b *Bash) ownerLocked(owner string) *bashOwner {
	o := b.owners[owner]
	if o == nil {
		o = &bashOwner{sessions: map[string]*session{}, execs: map[int]context.CancelCauseFunc{}, runners: map[string]*ownerRunner{}}
		b.owners[owner] = o
	}
	return o
}

// Release ends everything owner started: exec calls in flight and sessions (their
// process groups are killed) and the sandbox's helpers, and forgets its sessions.
func (b *Bash) Release(owner string) {
	b.mu.Lock()
	o := b.owners[owner]
	delete(b.owners, owner)
	b.mu.Unlock()
	if o != nil {
		b.end(o, errReleased)
	}
}

// Close ends every process the service started and waits for their goroutines. Calls
// after Close fail.
func (b *Bash) Close() {
	b.mu.Lock()
	b.closed = true
	owners := b.owners
	b.owners = map[string]*bashOwner{}
	b.mu.Unlock()
	for _, o := range owners {
		b.end(o, errClosed)
	}
	b.wg.Wait()
}

// end kills what o holds. o is no longer reachable from b.owners.
func (b *Bash) end(o *bashOwner, cause error) {
	b.mu.Lock()
	execs := make([]context.CancelCauseFunc, 0, len(o.execs))
	for _, c := range o.execs {
		execs = append(execs, c)
	}
	sessions := make([]*session, 0, len(o.sessions))
	for _, s := range o.sessions {
		sessions = append(sessions, s)
	}
	runners := make([]*ownerRunner, 0, len(o.runners))
	for _, r := range o.runners {
		runners = append(runners, r)
	}
	b.mu.Unlock()
	for _, c := range execs {
		c(cause)
	}
	for _, s := range sessions {
		s.kill()
	}
	for _, s := range sessions {
		s.waitDone(2 * time.Second)
	}
	// Last: the helpers tell the sessions' ends. Closing one kills what it still runs.
	for _, r := range runners {
		r.r.Close()
	}
}

// killGroup kills the process group led by pid.
func killGroup(pid int) error {
	err := syscall.Kill(-pid, syscall.SIGKILL)
	if errors.Is(err, syscall.ESRCH) {
		return os.ErrProcessDone
	}
	return err
}

// exitStatus describes how a process ended: "exit status 2" or "killed by signal …".
func exitStatus(ws syscall.WaitStatus) string {
	if ws.Signaled() {
		return "killed by signal " + ws.Signal().String()
	}
	return "exit status " + strconv.Itoa(ws.ExitStatus())
}

// secs formats d as seconds: "120s", "0.5s".
func secs(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + "s"
}
