package mcp

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Shutdown of a stdio server, as the MCP specification asks: close its stdin, wait
// terminateAfter for it to exit, then SIGTERM, then SIGKILL (the SDK's command
// transport). killAfter bounds the wait of [instance.close] for in-flight calls, after
// which the whole process group is killed.
const (
	terminateAfter = time.Second
	killAfter      = 3 * time.Second
	stderrTail     = 2 << 10 // bytes of a server's stderr kept for error messages
)

// instance is one running connection to a server: a process and its client session for
// a stdio server, an MCP session for an HTTP server.
type instance struct {
	set     *Set
	srv     *server
	cs      *mcp.ClientSession
	pid     int // the process group of a stdio server; 0 for HTTP
	untrack func()
	stderr  *tail
	done    chan struct{} // closed when the session has ended and the process is gone
	closing atomic.Bool   // myco ends it (Release, Close), not its server

	// guarded by Set.mu:
	owner string // "" while it is the spare of discovery
	why   string // why it ended; "" while it runs
}

// connect starts srv, bounded by ctx. The start runs in a goroutine of the Set so that
// the caller is not held past ctx by the SDK's shutdown of a server that failed (which
// waits for the process); an instance that connects after ctx ended is closed.
func (s *Set) connect(ctx context.Context, srv *server) (*instance, error) {
	type connected struct {
		inst *instance
		err  error
	}
	ch := make(chan connected)
	abandoned := make(chan struct{})
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, errClosed
	}
	s.wg.Go(func() {
		inst, err := s.dial(ctx, srv)
		select {
		case ch <- connected{inst, err}:
		case <-abandoned:
			if inst != nil {
				inst.close()
			}
		}
	})
	s.mu.Unlock()
	select {
	case c := <-ch:
		return c.inst, c.err
	case <-ctx.Done():
		close(abandoned)
		return nil, context.Cause(ctx)
	}
}

// dial starts srv and initializes the MCP session. It runs in a goroutine of s.wg.
func (s *Set) dial(ctx context.Context, srv *server) (*instance, error) {
	inst := &instance{set: s, srv: srv, done: make(chan struct{}), untrack: func() {}}
	if srv.cfg.URL != "" {
		t := &mcp.StreamableClientTransport{
			Endpoint:   srv.cfg.URL,
			HTTPClient: httpClient(srv.cfg),
			MaxRetries: 2,
			// The standalone SSE stream carries what a server sends unasked (list
			// changes, logs), which myco does not use; without it a session is
			// requests and their answers only.
			DisableStandaloneSSE: true,
		}
		cs, err := s.client.Connect(ctx, t, nil)
		if err != nil {
			return nil, err
		}
		inst.cs = cs
		s.wg.Go(inst.watch)
		return inst, nil
	}

	env := srv.cfg.environ(s.o.LookupEnv)
	path, err := lookPath(srv.cfg.Command, env)
	if err != nil {
		return nil, err
	}
	inst.stderr = &tail{max: stderrTail}
	cmd := &exec.Cmd{
		Path:        path,
		Args:        append([]string{srv.cfg.Command}, srv.cfg.Args...),
		Env:         env,
		Dir:         srv.cfg.Dir,
		Stderr:      inst.stderr,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
		// A process the server started may hold stderr open after it exited.
		WaitDelay: time.Second,
	}
	if s.o.Reaper != nil {
		s.o.Reaper.Prepare()
	}
	cs, err := s.client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: terminateAfter}, nil)
	if cmd.Process != nil {
		inst.pid = cmd.Process.Pid
		if s.o.Reaper != nil {
			inst.untrack = s.o.Reaper.Track(inst.pid)
		}
	}
	if err != nil {
		if inst.pid != 0 {
			killGroup(inst.pid) // the SDK ended the server; this ends what it started
		}
		inst.untrack()
		return nil, fmt.Errorf("%w%s", startError(ctx, err), inst.stderr.note())
	}
	inst.cs = cs
	s.wg.Go(inst.watch)
	return inst, nil
}

// watch waits for the session to end, whoever ends it, and records why.
func (inst *instance) watch() {
	err := inst.cs.Wait()
	if inst.pid != 0 {
		killGroup(inst.pid)
		inst.untrack()
	}
	inst.set.ended(inst, inst.describeEnd(err))
	close(inst.done)
}

// describeEnd says why the session ended, given what Wait returned.
func (inst *instance) describeEnd(err error) string {
	if inst.closing.Load() {
		return "myco ended it"
	}
	if inst.pid == 0 {
		if err == nil {
			return "the server ended the session"
		}
		return "the connection ended: " + err.Error()
	}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return "its process ended (" + exitStatus(ee.ProcessState) + ")" + inst.stderr.note()
	case err == nil:
		return "its process ended (exit status 0)" + inst.stderr.note()
	}
	return "its connection ended: " + err.Error() + inst.stderr.note()
}

// close ends the instance and waits until it is gone: the SDK closes the session (a stdio
// server's stdin, then SIGTERM and SIGKILL); if in-flight calls hold that up past
// killAfter, the process group is killed.
func (inst *instance) close() {
	select {
	case <-inst.done:
		return
	default:
	}
	inst.closing.Store(true)
	// inst's watcher is running, so the Set's WaitGroup is not at zero.
	inst.set.wg.Go(func() { inst.cs.Close() })
	t := time.NewTimer(killAfter)
	defer t.Stop()
	select {
	case <-inst.done:
	case <-t.C:
		if inst.pid != 0 {
			killGroup(inst.pid)
		}
		<-inst.done
	}
}

// waitEnd returns why the session ended, or "" if it still runs, after a call failed on
// it. When wait is set it waits a little for the end (up to killAfter).
func (inst *instance) waitEnd(ctx context.Context, wait bool) string {
	if wait {
		t := time.NewTimer(killAfter)
		defer t.Stop()
		select {
		case <-inst.done:
		case <-t.C:
		case <-ctx.Done():
		}
	}
	select {
	case <-inst.done:
	default:
		return ""
	}
	inst.set.mu.Lock()
	defer inst.set.mu.Unlock()
	return inst.why
}

// killGroup kills the process group led by pid, if it is still there.
func killGroup(pid int) {
	_ = syscall.Kill(-pid, syscall.SIGKILL)
}

// exitStatus describes how a process ended: "exit status 2" or "killed by signal …".
func exitStatus(ps *os.ProcessState) string {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return "killed by signal " + ws.Signal().String()
	}
	return "exit status " + strconv.Itoa(ps.ExitCode())
}

// tail keeps the last max bytes written to it: a server's stderr, for error messages.
type tail struct {
	max int

	mu  sync.Mutex // guards buf
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

// note returns "; its stderr ends: …" with the last lines the server wrote, or "".
func (t *tail) note() string {
	if t == nil {
		return ""
	}
	t.mu.Lock()
	s := strings.TrimSpace(strings.ToValidUTF8(string(t.buf), "\uFFFD"))
	t.mu.Unlock()
	if s == "" {
		return ""
	}
	return "; its stderr ends:\n" + s
}
