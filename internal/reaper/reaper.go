package reaper

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"time"
)

// Options configures a [Reaper].
type Options struct {
	// Path is the binary to run; empty means Argv[0], looked up in $PATH if it has no
	// slash. On Linux, "/proc/self/exe" runs this very binary, even after its file was
	// replaced or removed (an upgrade while myco runs).
	Path string
	// Argv is the reaper's argument list, Argv[0] included: the myco binary in its reaper
	// mode, which calls [Main], for example {os.Args[0], "--mode", "reaper"}. Argv[0] is
	// what the process sees as its name (testscript picks the command by it).
	Argv []string
	// Retry is how long Track waits after a failed start before it tries again
	// (default 10 s). Groups tracked meanwhile are registered with the next reaper.
	Retry time.Duration
	Log   *slog.Logger
}

// Reaper is the myco side of a reaper process (see the package documentation). It starts
// the process when first needed ([Reaper.Prepare], [Reaper.Track]), and starts another,
// registering every group still tracked, when the one it had is gone. Its methods are
// safe for concurrent use. Caller must Close it after the groups it tracks have ended.
type Reaper struct {
	opts Options
	wg   sync.WaitGroup // waits for each reaper process

	mu        sync.Mutex // guards the fields below
	groups    map[int]bool
	w         *os.File    // the write end of the running reaper's pipe; nil when none runs
	proc      *os.Process // the running reaper
	exited    chan struct{}
	failed    error     // the last start's error, already logged
	nextStart time.Time // after a failed start, when to try again
	lastExit  time.Time // when a reaper last exited unasked
	closed    bool
}

// New returns a Reaper that starts its process when first needed.
func New(opts Options) *Reaper {
	if opts.Retry <= 0 {
		opts.Retry = 10 * time.Second
	}
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	return &Reaper{opts: opts, groups: map[int]bool{}}
}

// Prepare starts the reaper process if none runs, so that the group the caller is about
// to start can be registered the moment it exists: a myco killed between starting a group
// and registering it leaves that group behind.
func (r *Reaper) Prepare() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.w == nil {
		r.startLocked()
	}
}

// Track registers the process group pgid, which the caller has just started, with the
// reaper, starting the reaper process if none runs. The caller must call untrack once the
// group is dead (killed and its leader waited for), so that the reaper never kills a
// group whose number was reused. A reaper that cannot be started is logged, not returned:
// the group runs unprotected, as it would without a reaper.
func (r *Reaper) Track(pgid int) (untrack func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed || pgid <= 1 {
		return func() {}
	}
	r.groups[pgid] = true
	r.sendLocked('+', pgid)
	return sync.OnceFunc(func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		delete(r.groups, pgid)
		r.sendLocked('-', pgid)
	})
}

// sendLocked tells the running reaper about pgid. For a new group with no reaper running
// it starts one, which learns every tracked group. r.mu is held.
func (r *Reaper) sendLocked(op byte, pgid int) {
	if r.w != nil {
		line := strconv.AppendInt([]byte{op}, int64(pgid), 10)
		r.w.SetWriteDeadline(time.Now().Add(time.Second)) // a stopped reaper must not stall the tool
		_, err := r.w.Write(append(line, '\n'))
		if err == nil {
			return
		}
		r.opts.Log.Warn("reaper is gone; starting another", "pid", r.proc.Pid, "err", err)
		r.stopLocked()
	}
	if op == '+' {
		r.startLocked()
	}
}

// startLocked starts a reaper process and registers every tracked group with it, unless
// the Reaper is closed or a failed start is too recent. r.mu is held.
func (r *Reaper) startLocked() {
	if r.closed || time.Now().Before(r.nextStart) {
		return
	}
	w, cmd, err := start(r.opts.Path, r.opts.Argv, r.opts.Log)
	if err == nil {
		var all []byte
		for g := range r.groups {
			all = strconv.AppendInt(append(all, '+'), int64(g), 10)
			all = append(all, '\n')
		}
		w.SetWriteDeadline(time.Now().Add(time.Second))
		if _, err = w.Write(all); err != nil {
			cmd.Process.Kill()
			w.Close()
			cmd.Wait()
			err = fmt.Errorf("register %d process groups with the new reaper: %w", len(r.groups), err)
		}
	}
	if err != nil {
		if r.failed == nil || r.failed.Error() != err.Error() {
			r.opts.Log.Warn("tool processes may outlive this process", "err", err)
		}
		r.failed, r.nextStart = err, time.Now().Add(r.opts.Retry)
		return
	}
	r.failed = nil
	exited := make(chan struct{})
	r.w, r.proc, r.exited = w, cmd.Process, exited
	r.wg.Go(func() {
		cmd.Wait()
		close(exited)
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.proc != cmd.Process {
			return // stopped or closed on purpose
		}
		r.opts.Log.Warn("reaper exited; starting another", "pid", cmd.Process.Pid, "status", cmd.ProcessState.String())
		r.w.Close()
		r.w, r.proc, r.exited = nil, nil, nil
		if time.Since(r.lastExit) < r.opts.Retry {
			r.nextStart = time.Now().Add(r.opts.Retry) // one restart per Retry: no loop
		}
		r.lastExit = time.Now()
		if len(r.groups) > 0 {
			r.startLocked()
		}
	})
}

// stopLocked kills the running reaper, which failed us, and forgets it. r.mu is held.
func (r *Reaper) stopLocked() {
	r.proc.Kill()
	r.w.Close()
	r.w, r.proc, r.exited = nil, nil, nil
}

// Close closes the pipe, so the reaper kills the groups still tracked (none, once the
// tools are closed) and exits, and waits a little for it. Track after Close does nothing.
func (r *Reaper) Close() error {
	r.mu.Lock()
	r.closed = true
	w, proc, exited := r.w, r.proc, r.exited
	r.w, r.proc, r.exited = nil, nil, nil
	r.mu.Unlock()
	if w != nil {
		w.Close()
		select {
		case <-exited:
		case <-time.After(2 * time.Second):
			proc.Kill()
		}
	}
	r.wg.Wait()
	return nil
}

// start runs a reaper process from path (default argv[0]) and argv, and waits for its ready
// line. It returns the write end of its pipe and the started command, which the caller
// must wait for.
func start(path string, argv []string, log *slog.Logger) (*os.File, *exec.Cmd, error) {
	if len(argv) == 0 {
		return nil, nil, errors.New("start reaper: no command (Options.Argv is empty)")
	}
	if path == "" {
		path = argv[0]
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, nil, fmt.Errorf("start reaper: %w", err)
	}
	readyR, readyW, err := os.Pipe()
	if err != nil {
		pr.Close()
		pw.Close()
		return nil, nil, fmt.Errorf("start reaper: %w", err)
	}
	cmd := exec.Command(path, argv[1:]...)
	cmd.Args = argv
	cmd.Stdin, cmd.Stdout = pr, readyW
	cmd.Env = []string{} // it needs nothing, and so holds no credentials
	cmd.Dir = "/"        // and keeps no directory busy
	cmd.SysProcAttr = sysProcAttr()
	err = cmd.Start()
	pr.Close()
	readyW.Close()
	if err != nil {
		readyR.Close()
		pw.Close()
		return nil, nil, fmt.Errorf("start reaper %s %q: %w", path, argv, err)
	}
	readyR.SetReadDeadline(time.Now().Add(5 * time.Second))
	got, err := bufio.NewReader(io.LimitReader(readyR, 256)).ReadString('\n')
	readyR.Close()
	if got != ready {
		cmd.Process.Kill()
		cmd.Wait()
		pw.Close()
		if err == nil || errors.Is(err, io.EOF) {
			err = fmt.Errorf("it wrote %q instead of %q", got, ready)
		}
		return nil, nil, fmt.Errorf("start reaper %s %q: %w (does the binary handle its reaper mode before anything else?)", path, argv, err)
	}
	log.Debug("reaper started", "pid", cmd.Process.Pid)
	return pw, cmd, nil
}
