package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// ErrNoHelper is wrapped by the error of [Runner.Start] when no helper could be started
// (an older fence executable, a kernel that refuses the namespaces): the caller may fence
// the command with [Fence.Wrap] instead. No command was run.
var ErrNoHelper = errors.New("sandbox: no helper")

// ErrHelperGone is wrapped by the errors of [Runner.Start] and [Process.Wait] when the
// helper ended (killed, or closed by [Runner.Close]) before it answered.
var ErrHelperGone = errors.New("sandbox: the helper ended")

// Timeouts of the helper's answers. A helper that does not answer a start in
// startTimeout is stopped or hung (a command of its own domain may SIGSTOP it): it is
// killed, and the next command gets another.
const (
	readyTimeout = 10 * time.Second
	startTimeout = 5 * time.Second
)

// Command is a command for a [Runner] to start: what an [exec.Cmd] says. The process
// leads a process group of its own, as with Setpgid.
type Command struct {
	Path string   // the program; absolute, as exec.Command resolves it
	Args []string // Args[0] included
	Env  []string
	Dir  string // empty: the helper's, which is the caller's at the helper's start
	// Files are the process's descriptors 0, 1, 2, … (at most maxFiles). A nil one among
	// the first three is /dev/null; they are passed to the helper, so the caller may close
	// its copies once Start returns.
	Files []*os.File
	// Cancel is called when the ctx of Start ends before the process does. nil kills
	// the process group with SIGKILL.
	Cancel func() error
	// WaitDelay bounds the wait for the exit status after Cancel; 0 waits as long as it
	// takes. As with exec.Cmd.WaitDelay, Wait then returns an error.
	WaitDelay time.Duration
}

// maxFiles bounds the descriptors one command is given (one SCM_RIGHTS message).
const maxFiles = 64

// Runner starts commands fenced in by one spec through a helper: the fence's executable,
// started once, which enters the namespaces, makes the mounts and restricts all of its
// threads with the spec's Landlock ruleset, then starts each command it is asked for. A
// command so started costs a fork and an exec, not a Go program's start, a user namespace
// and mounts. It is safe for concurrent use. Caller must Close it.
//
// A helper serves for as long as the ruleset it applied is used for a spec (see
// rulesetTTL) and the files of the spec are the same ones; then the next command gets
// a new helper, and the old one ends once its commands did. A helper that died is
// replaced the same way: a command never runs outside the sandbox for want of one.
type Runner struct {
	f    *Fence
	spec Spec
	wg   sync.WaitGroup // each helper's reader and waiter

	mu       sync.Mutex // guards the fields below
	cur      *helper    // the helper new commands go to; nil: start one
	all      map[*helper]struct{}
	failed   error // why the last helper did not start
	failedAt time.Time
	closed   bool
}

// Runner returns a runner of commands fenced in by spec. It starts no process yet; it
// fails when the kernel cannot fence as spec says.
func (f *Fence) Runner(spec Spec) (*Runner, error) {
	if _, err := f.childSpecOf(spec, true); err != nil {
		return nil, err
	}
	return &Runner{f: f, spec: spec, all: map[*helper]struct{}{}}, nil
}

// Start starts c fenced in by the runner's spec. When ctx ends before the process,
// c.Cancel is called. An error wrapping [ErrNoHelper] means nothing was run and no helper
// can be had now.
func (r *Runner) Start(ctx context.Context, c Command) (*Process, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(c.Files) > maxFiles {
		return nil, fmt.Errorf("sandbox: %d descriptors; at most %d", len(c.Files), maxFiles)
	}
	cs, err := r.f.childSpecOf(r.spec, true)
	if err != nil {
		return nil, err
	}
	print := fingerprint(cs)
	for attempt := 0; ; attempt++ {
		h, err := r.helper(cs, print)
		if err != nil {
			return nil, err
		}
		p, err := h.start(ctx, c)
		// A helper that was already gone got nothing: the command goes to another.
		if errors.Is(err, errNotSent) && attempt == 0 {
			continue
		}
		return p, err
	}
}

// Warm starts a helper for the next command if none serves, so that its start can
// overlap other work (the caller's reaper's start). Start does the same when needed.
func (r *Runner) Warm() error {
	cs, err := r.f.childSpecOf(r.spec, true)
	if err != nil {
		return err
	}
	_, err = r.helper(cs, fingerprint(cs))
	return err
}

// helper returns the helper for cs and the files as print identifies them, starting one
// when the current one is gone, old, or fenced in for other files.
func (r *Runner) helper(cs childSpec, print string) (*helper, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, fmt.Errorf("%w: the runner is closed", ErrHelperGone)
	}
	if h := r.cur; h != nil {
		if h.serves(print) {
			return h, nil
		}
		h.retire()
		r.cur = nil
	}
	// Each failed start costs a process: do not try again for every command.
	if r.failed != nil && time.Since(r.failedAt) < rulesetTTL {
		return nil, r.failed
	}
	h, err := r.startHelper(cs, print)
	if err != nil {
		r.failed, r.failedAt = fmt.Errorf("%w: %w", ErrNoHelper, err), time.Now()
		return nil, r.failed
	}
	r.failed = nil
	r.cur = h
	r.all[h] = struct{}{}
	return h, nil
}

// Close ends the runner's helpers and kills the process groups of the commands still
// running; their Wait fails. It waits for the helpers to exit.
func (r *Runner) Close() error {
	r.mu.Lock()
	r.closed = true
	hs := make([]*helper, 0, len(r.all))
	for h := range r.all {
		hs = append(hs, h)
	}
	r.cur = nil
	r.mu.Unlock()
	for _, h := range hs {
		h.shutdown()
	}
	r.wg.Wait()
	return nil
}

// ended forgets h, which exited.
func (r *Runner) ended(h *helper) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.all, h)
	if r.cur == h {
		r.cur = nil
	}
}

// Process is a command a [Runner] started: the leader of its own process group.
type Process struct {
	Pid int

	id       uint64
	answered chan reply    // the helper's answer to the start, buffered
	done     chan struct{} // closed by finish

	mu        sync.Mutex // guards the fields below
	abandoned bool       // Start returned before the answer: kill what it started
	finished  bool
	status    syscall.WaitStatus
	err       error
	stops     []func() bool // the ctx watch and the WaitDelay timer, ended by finish
}

// Wait waits for the process to exit and returns its wait status: as
// os.ProcessState.Sys() would, for the process's exit code or signal. It returns an
// error, and no status, when the helper ended first or WaitDelay passed after Cancel.
// It may be called more than once.
func (p *Process) Wait() (syscall.WaitStatus, error) {
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.status, p.err
}

// finish records how the process ended, once.
func (p *Process) finish(ws syscall.WaitStatus, err error) {
	p.mu.Lock()
	if p.finished {
		p.mu.Unlock()
		return
	}
	p.finished, p.status, p.err = true, ws, err
	stops := p.stops
	p.stops = nil
	p.mu.Unlock()
	for _, stop := range stops {
		stop()
	}
	close(p.done)
}

// watch calls c.Cancel when ctx ends before the process, and then fails Wait after
// c.WaitDelay.
func (p *Process) watch(ctx context.Context, c Command) {
	cancel := c.Cancel
	if cancel == nil {
		cancel = func() error { return killGroup(p.Pid) }
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.finished {
		return
	}
	p.stops = append(p.stops, context.AfterFunc(ctx, func() {
		cancel()
		if c.WaitDelay <= 0 {
			return
		}
		t := time.AfterFunc(c.WaitDelay, func() {
			p.finish(0, fmt.Errorf("sandbox: no exit status from the helper %s after the process was cancelled", c.WaitDelay))
		})
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.finished {
			t.Stop()
			return
		}
		p.stops = append(p.stops, t.Stop)
	}))
}

// killGroup kills the process group led by pid, never anything else: a pid below 2
// would name every process or the caller's group.
func killGroup(pid int) error {
	if pid < 2 {
		return fmt.Errorf("sandbox: no process group %d", pid)
	}
	return syscall.Kill(-pid, syscall.SIGKILL)
}

// request is what the helper is asked: start a command. The descriptors ride with it.
type request struct {
	ID   uint64   `json:"id"`
	Path string   `json:"path"`
	Args []string `json:"args"`
	Env  []string `json:"env"`
	Dir  string   `json:"dir,omitempty"`
}

// reply is what the helper says, one JSON object a line: that it is ready (or why it
// is not, then it exits), that it started a command (Pid) or not (Err), and later that
// the command exited (Exited, with its wait status).
type reply struct {
	ID     uint64 `json:"id,omitempty"`
	Ready  bool   `json:"ready,omitempty"`
	Pid    int    `json:"pid,omitempty"`
	Err    string `json:"err,omitempty"`
	Exited bool   `json:"exited,omitempty"`
	Status uint32 `json:"status,omitempty"`
}

// tail keeps the last bytes written to it: the helper's stderr, for the error that says
// why it died.
type tail struct {
	mu sync.Mutex // guards b
	b  []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > 2048 {
		t.b = t.b[len(t.b)-2048:]
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

// serveArgs are the arguments of the helper after the executable.
func serveArgs(cs childSpec) ([]string, error) {
	b, err := json.Marshal(cs)
	if err != nil {
		return nil, fmt.Errorf("encode the spec: %w", err)
	}
	return []string{childArg, serveArg, string(b)}, nil
}

// serveArg is the second argument of a helper. (An older fence executable takes it for
// its spec, fails to decode it and exits with 126: it never runs anything.)
const serveArg = "serve"

// helperCmd is the command that starts the helper of cs, whose socket is sock.
func (r *Runner) helperCmd(cs childSpec, sock, ruleset *os.File) (*exec.Cmd, *tail, error) {
	cs.RulesetFD = 4 // after the socket, 3
	args, err := serveArgs(cs)
	if err != nil {
		return nil, nil, err
	}
	cmd := exec.Command(r.f.exe, args...)
	cmd.ExtraFiles = []*os.File{sock, ruleset}
	cmd.Env = []string{}
	stderr := &tail{}
	cmd.Stderr = stderr
	cmd.WaitDelay = time.Second // a process it left may hold its stderr
	// A session of its own: no terminal's signals reach it, and every process in it is
	// one the helper started, which is how its answers are checked (see inSession).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if cs.Mounts {
		withNamespaces(cmd)
	}
	return cmd, stderr, nil
}

// fingerprint identifies the spec and the files it names as they are now: a helper
// fenced in for other files (a directory made again, a .git/hooks that appeared since)
// must not start the next command.
func fingerprint(cs childSpec) string {
	b, _ := json.Marshal(cs)
	out := string(b)
	for _, ps := range [][]string{cs.Writable, cs.Protected, cs.Hidden} {
		for _, p := range ps {
			out += "\x00" + fileID(p)
		}
	}
	return out
}

// fileID is the device and inode of p, or "-" when it is missing.
func fileID(p string) string {
	fi, err := os.Lstat(p)
	if err != nil {
		return "-"
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return strconv.FormatUint(uint64(st.Dev), 10) + ":" + strconv.FormatUint(uint64(st.Ino), 10)
	}
	return fi.ModTime().String()
}
