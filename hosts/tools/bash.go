package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"myco/agent/model"
)

// BashOptions configures the bash tool. Zero values take the defaults.
type BashOptions struct {
	Shell          string        // default /bin/bash
	DefaultTimeout time.Duration // exec timeout when the call sets none; default 120 s
	MaxTimeout     time.Duration // largest timeout a call may ask for; default 600 s
	OutputLimit    int           // bytes of exec output kept at each end; default 16 KiB
	SessionBuffer  int           // bytes of a session's output retained; default 1 MiB
	Settle         time.Duration // quiet time after which session output counts as settled; default 300 ms
	Env            []string      // the environment of commands; nil means the process's
}

// Bash is the bash tool: run-to-completion commands and long-lived sessions scoped by
// owner. Safe for concurrent use.
type Bash struct {
	o BashOptions

	mu     sync.Mutex // guards the fields below
	owners map[string]*bashOwner
	closed bool
}

type bashOwner struct {
	next     int
	sessions map[string]*bashSession
}

// NewBash returns the bash tool.
func NewBash(o BashOptions) *Bash {
	if o.Shell == "" {
		o.Shell = "/bin/bash"
	}
	if o.DefaultTimeout <= 0 {
		o.DefaultTimeout = 120 * time.Second
	}
	if o.MaxTimeout <= 0 {
		o.MaxTimeout = 600 * time.Second
	}
	if o.OutputLimit <= 0 {
		o.OutputLimit = 16 << 10
	}
	if o.SessionBuffer <= 0 {
		o.SessionBuffer = 1 << 20
	}
	if o.Settle <= 0 {
		o.Settle = 300 * time.Millisecond
	}
	return &Bash{o: o, owners: map[string]*bashOwner{}}
}

// Name returns "bash".
func (b *Bash) Name() string { return "bash" }

// Spec describes the tool to the model.
func (b *Bash) Spec() model.ToolSpec {
	return model.ToolSpec{
		Name: "bash",
		Description: fmt.Sprintf(`Run shell commands with bash.
action "exec" (the default): run "command" to completion (timeout_secs, default %d, at most %d) and return its combined stdout and stderr, bounded to the first and last %d KiB, and its exit status. Commands inherit the host's working directory; there is no directory field: use "cd /path && command". A directory change lasts only for that call.
action "start": start a long-lived process (for example "cd /repo && bash --noprofile --norc") and return a session_id; "write" sends "input" to its stdin exactly as given (end it with a newline to run a line) and returns the new output once it settles; "read" returns output produced since the last read; "kill" ends it and its process group; "list" lists this runtime's sessions. Session ids are per host.`,
			int(b.o.DefaultTimeout.Seconds()), int(b.o.MaxTimeout.Seconds()), b.o.OutputLimit>>10),
		Schema: json.RawMessage(`{"type":"object","properties":{` +
			`"command":{"type":"string","description":"the bash command (exec, start)"},` +
			`"action":{"type":"string","enum":["exec","start","write","read","kill","list"],"description":"default exec"},` +
			`"session_id":{"type":"string","description":"the session (write, read, kill)"},` +
			`"input":{"type":"string","description":"text for the session's stdin (write)"},` +
			`"timeout_secs":{"type":"integer","minimum":1,"description":"exec: the time limit; write/start: how long to wait for output"}` +
			`},"additionalProperties":false}`),
	}
}

type bashInput struct {
	Command     string `json:"command"`
	Action      string `json:"action"`
	SessionID   string `json:"session_id"`
	Input       string `json:"input"`
	TimeoutSecs int    `json:"timeout_secs"`
}

// decodeStrict decodes a tool input, rejecting unknown fields and trailing data.
func decodeStrict(input json.RawMessage, v any) error {
	dec := json.NewDecoder(bytes.NewReader(input))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		if strings.HasPrefix(err.Error(), "json: unknown field ") {
			return fmt.Errorf("unsupported field %s (nothing was run)", strings.TrimPrefix(err.Error(), "json: unknown field "))
		}
		return fmt.Errorf("invalid input: %v", err)
	}
	if dec.More() {
		return errors.New("invalid input: trailing data after the JSON object")
	}
	return nil
}

// Call runs one bash action for owner.
func (b *Bash) Call(ctx context.Context, owner string, input json.RawMessage) Result {
	var in bashInput
	if err := decodeStrict(input, &in); err != nil {
		return Errorf("bash: %v", err)
	}
	if in.TimeoutSecs < 0 {
		return Errorf("bash: timeout_secs must be positive")
	}
	switch in.Action {
	case "", "exec":
		if strings.TrimSpace(in.Command) == "" {
			return Errorf("bash: exec needs a command")
		}
		return b.exec(ctx, in)
	case "start":
		if strings.TrimSpace(in.Command) == "" {
			return Errorf("bash: start needs a command, for example \"bash --noprofile --norc\"")
		}
		return b.start(ctx, owner, in)
	case "write", "read", "kill":
		s, err := b.session(owner, in.SessionID)
		if err != nil {
			return Errorf("bash: %v", err)
		}
		switch in.Action {
		case "write":
			return s.write(ctx, in.Input, b.wait(in.TimeoutSecs, 10*time.Second), b.o.Settle)
		case "read":
			return Result{Text: s.read()}
		default:
			s.kill()
			return Result{Text: s.read() + fmt.Sprintf("[session %s killed]", s.id)}
		}
	case "list":
		return Result{Text: b.list(owner)}
	}
	return Errorf("bash: unknown action %q (want exec, start, write, read, kill or list)", in.Action)
}

func (b *Bash) wait(secs int, def time.Duration) time.Duration {
	if secs <= 0 {
		return def
	}
	return min(time.Duration(secs)*time.Second, b.o.MaxTimeout)
}

func (b *Bash) command(command string) *exec.Cmd {
	cmd := exec.Command(b.o.Shell, "-c", command)
	cmd.Env = b.o.Env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return cmd
}

// killGroup ends the process group led by cmd's process.
func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}

func (b *Bash) exec(ctx context.Context, in bashInput) Result {
	timeout := b.wait(in.TimeoutSecs, b.o.DefaultTimeout)
	out := newHeadTail(b.o.OutputLimit)
	cmd := b.command(in.Command)
	cmd.Stdout, cmd.Stderr = out, out
	// A backgrounded grandchild may keep the output pipe open after the shell exits; stop
	// waiting for it shortly after.
	cmd.WaitDelay = 500 * time.Millisecond
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return Errorf("bash: start %s: %v", b.o.Shell, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var err error
	var status string
	select {
	case err = <-done:
	case <-timer.C:
		killGroup(cmd)
		err = <-done
		status = fmt.Sprintf("[killed after the %s timeout, with its whole process group]", timeout)
	case <-ctx.Done():
		killGroup(cmd)
		err = <-done
		status = "[cancelled: the command and its process group were killed]"
	}
	text := out.String()
	if text != "" && !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	if status != "" {
		return Result{Text: text + status, IsError: true}
	}
	return Result{Text: text + exitStatus(cmd, err, time.Since(start))}
}

func exitStatus(cmd *exec.Cmd, err error, d time.Duration) string {
	var ee *exec.ExitError
	switch {
	case err == nil || errors.Is(err, exec.ErrWaitDelay):
		return "[exit status 0]"
	case errors.As(err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return fmt.Sprintf("[killed by signal %s]", ws.Signal())
		}
		return fmt.Sprintf("[exit status %d]", ee.ExitCode())
	}
	return fmt.Sprintf("[wait: %v]", err)
}

// start launches a long-lived session.
func (b *Bash) start(ctx context.Context, owner string, in bashInput) Result {
	cmd := b.command(in.Command)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return Errorf("bash: %v", err)
	}
	s := &bashSession{command: in.Command, cmd: cmd, stdin: stdin, started: time.Now(),
		limit: b.o.SessionBuffer, notify: make(chan struct{}, 1), exited: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = s, s
	cmd.WaitDelay = 500 * time.Millisecond

	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return Errorf("bash: the host is shutting down")
	}
	o := b.owners[owner]
	if o == nil {
		o = &bashOwner{sessions: map[string]*bashSession{}}
		b.owners[owner] = o
	}
	o.next++
	s.id = fmt.Sprintf("b%d", o.next)
	if err := cmd.Start(); err != nil {
		o.next--
		b.mu.Unlock()
		return Errorf("bash: start %s: %v", b.o.Shell, err)
	}
	o.sessions[s.id] = s
	b.mu.Unlock()

	go func() {
		err := cmd.Wait()
		s.mu.Lock()
		s.status = exitStatus(cmd, err, 0)
		s.mu.Unlock()
		close(s.exited)
	}()
	s.settle(ctx, b.wait(in.TimeoutSecs, 2*time.Second), b.o.Settle)
	return Result{Text: fmt.Sprintf("session_id: %s\n%s", s.id, s.read())}
}

func (b *Bash) session(owner, id string) (*bashSession, error) {
	if id == "" {
		return nil, errors.New("this action needs a session_id (see action=list)")
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if o := b.owners[owner]; o != nil {
		if s := o.sessions[id]; s != nil {
			return s, nil
		}
	}
	return nil, fmt.Errorf("bash session %q is unknown here (sessions are per host and per session runtime; use action=list)", id)
}

func (b *Bash) list(owner string) string {
	b.mu.Lock()
	o := b.owners[owner]
	var ss []*bashSession
	if o != nil {
		for _, s := range o.sessions {
			ss = append(ss, s)
		}
	}
	b.mu.Unlock()
	if len(ss) == 0 {
		return "no bash sessions"
	}
	sort.Slice(ss, func(i, j int) bool { return ss[i].started.Before(ss[j].started) })
	var sb strings.Builder
	for _, s := range ss {
		info := s.info()
		fmt.Fprintf(&sb, "%s\t%s\t%s\n", info.ID, info.State, info.Command)
	}
	return sb.String()
}

// BashSessionInfo describes one retained session for inventories.
type BashSessionInfo struct {
	ID      string    `json:"id"`
	Command string    `json:"command"`
	State   string    `json:"state"` // "running" or the exit status
	Started time.Time `json:"started"`
	Tail    string    `json:"tail,omitempty"` // the last output captured
}

// Inventory lists the owner's bash sessions, running and exited.
func (b *Bash) Inventory(owner string) any {
	b.mu.Lock()
	o := b.owners[owner]
	var out []BashSessionInfo
	if o != nil {
		for _, s := range o.sessions {
			out = append(out, s.info())
		}
	}
	b.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Started.Before(out[j].Started) })
	return out
}

// Release kills and forgets every session of owner.
func (b *Bash) Release(owner string) {
	b.mu.Lock()
	o := b.owners[owner]
	delete(b.owners, owner)
	b.mu.Unlock()
	if o != nil {
		for _, s := range o.sessions {
			s.kill()
		}
	}
}

// Close kills every session of every owner and refuses new ones.
func (b *Bash) Close() {
	b.mu.Lock()
	b.closed = true
	owners := b.owners
	b.owners = map[string]*bashOwner{}
	b.mu.Unlock()
	for _, o := range owners {
		for _, s := range o.sessions {
			s.kill()
		}
	}
}

// bashSession is a long-lived process with a bounded output buffer.
type bashSession struct {
	id      string
	command string
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	started time.Time
	limit   int
	notify  chan struct{} // signalled on new output
	exited  chan struct{} // closed when the process has been waited for

	mu      sync.Mutex // guards the fields below
	buf     []byte     // retained output, the latest limit bytes
	total   int64      // bytes ever written
	readPos int64      // total at the last read
	status  string     // exit status once exited
}

func (s *bashSession) Write(p []byte) (int, error) {
	s.mu.Lock()
	s.buf = append(s.buf, p...)
	if len(s.buf) > s.limit {
		s.buf = append([]byte(nil), s.buf[len(s.buf)-s.limit:]...)
	}
	s.total += int64(len(p))
	s.mu.Unlock()
	select {
	case s.notify <- struct{}{}:
	default:
	}
	return len(p), nil
}

// read returns the output since the last read, noting what the buffer no longer holds.
func (s *bashSession) read() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var sb strings.Builder
	from := s.total - int64(len(s.buf))
	if s.readPos < from {
		fmt.Fprintf(&sb, "[... %d bytes of output dropped: the session keeps the last %d ...]\n", from-s.readPos, s.limit)
		s.readPos = from
	}
	sb.Write(s.buf[s.readPos-from:])
	s.readPos = s.total
	if s.status != "" {
		if sb.Len() > 0 && !strings.HasSuffix(sb.String(), "\n") {
			sb.WriteByte('\n')
		}
		fmt.Fprintf(&sb, "[session %s exited: %s]", s.id, strings.Trim(s.status, "[]"))
	}
	return sb.String()
}

// settle waits until the output has been quiet for quiet, the process exited, max passed
// or ctx ended.
func (s *bashSession) settle(ctx context.Context, max, quiet time.Duration) {
	deadline := time.NewTimer(max)
	defer deadline.Stop()
	q := time.NewTimer(quiet)
	defer q.Stop()
	for {
		select {
		case <-s.notify:
			q.Reset(quiet)
		case <-q.C:
			return
		case <-s.exited:
			return
		case <-deadline.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

func (s *bashSession) write(ctx context.Context, input string, max, quiet time.Duration) Result {
	select {
	case <-s.exited:
		return Result{Text: s.read() + "\n[the session has exited; nothing was written]", IsError: true}
	default:
	}
	if _, err := io.WriteString(s.stdin, input); err != nil {
		return Errorf("bash: write to session %s: %v", s.id, err)
	}
	s.settle(ctx, max, quiet)
	return Result{Text: s.read()}
}

func (s *bashSession) kill() {
	select {
	case <-s.exited: // its process group id may belong to someone else by now
	default:
		killGroup(s.cmd)
	}
	s.stdin.Close()
	<-s.exited
}

func (s *bashSession) info() BashSessionInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	state := "running"
	if s.status != "" {
		state = strings.Trim(s.status, "[]")
	}
	tail := s.buf
	if len(tail) > 2048 {
		tail = tail[len(tail)-2048:]
	}
	return BashSessionInfo{ID: s.id, Command: s.command, State: state, Started: s.started, Tail: string(tail)}
}
