package tools

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"
)

// BashSessionInfo describes one of an owner's bash sessions (see [Bash.Sessions]).
type BashSessionInfo struct {
	ID       string    `json:"id"`
	Command  string    `json:"command"`
	State    string    `json:"state"`     // "running" or "exited"
	ExitCode int       `json:"exit_code"` // once exited; -1 when a signal ended it
	Status   string    `json:"status"`    // "running", "exit status 0", "killed by signal killed"
	Started  time.Time `json:"started"`
	Tail     string    `json:"tail"` // the last 4 KiB of captured output
}

// session is one long-lived process started by action=start.
type session struct {
	id, command string
	pid         int
	started     time.Time
	bufMax      int
	done        chan struct{} // closed once the process exited and its output is drained

	stdinMu sync.Mutex // serializes writes to stdin
	stdin   *os.File

	mu       sync.Mutex // guards the fields below
	buf      []byte     // the last bufMax bytes of output
	total    int64      // bytes of output ever produced
	cursor   int64      // total when output was last returned
	changed  chan struct{}
	exited   bool
	status   string
	exitCode int
	used     int64 // the service's use count when the session was last started, written to or read
}

// ownerSessions returns owner's sessions, in no order.
func (b *Bash) ownerSessions(owner string) []*session {
	b.mu.Lock()
	var ss []*session
	if o := b.owners[owner]; o != nil {
		for _, s := range o.sessions {
			ss = append(ss, s)
		}
	}
	b.mu.Unlock()
	return ss
}

// Sessions returns owner's sessions, oldest first.
func (b *Bash) Sessions(owner string) []BashSessionInfo {
	ss := b.ownerSessions(owner)
	slices.SortFunc(ss, func(a, b *session) int { return idNum(a.id) - idNum(b.id) })
	out := make([]BashSessionInfo, 0, len(ss))
	for _, s := range ss {
		out = append(out, s.info())
	}
	return out
}

// Inventory adds [Bash.Sessions] to r, for the inventory.
func (b *Bash) Inventory(owner string, r *Resources) { r.Bash = b.Sessions(owner) }

func idNum(id string) int { n, _ := strconv.Atoi(strings.TrimPrefix(id, "b")); return n }

func (s *session) info() BashSessionInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	tail := s.buf[max(0, len(s.buf)-4096):]
	for len(tail) > 0 && !utf8.RuneStart(tail[0]) {
		tail = tail[1:]
	}
	info := BashSessionInfo{ID: s.id, Command: s.command, State: "running", Started: s.started, Tail: string(tail), Status: "running"}
	if s.exited {
		info.State, info.ExitCode, info.Status = "exited", s.exitCode, s.status
	}
	return info
}

func (b *Bash) start(ctx context.Context, owner, command string, wait time.Duration) Result {
	dir, err := workDir(ctx)
	if err != nil {
		return Errorf("%v", err)
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return Errorf("start session: %v", err)
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		pr.Close()
		pw.Close()
		return Errorf("start session: %v", err)
	}
	cmd := exec.Command(b.opts.Shell, "-c", command)
	cmd.Env, cmd.Dir = withPWD(envFor(ctx, b.opts.Env), dir), dir
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, pw, pw
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// The session outlives the call: its process is not bound to the call's ctx.
	p, err := b.startProc(context.WithoutCancel(ctx), owner, cmd)
	pw.Close()
	inR.Close()
	if err != nil {
		pr.Close()
		inW.Close()
		return Errorf("%v", err)
	}
	untrackGroup := b.track(p.pid)
	s := &session{
		command: command, pid: p.pid, started: time.Now(), bufMax: b.opts.SessionBufferBytes,
		done: make(chan struct{}), stdin: inW, changed: make(chan struct{}), used: b.uses.Add(1),
	}

	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		killGroup(s.pid)
		p.wait()
		untrackGroup()
		pr.Close()
		inW.Close()
		return Errorf("bash is shut down on this host")
	}
	o := b.ownerLocked(owner)
	o.next++
	s.id = "b" + strconv.Itoa(o.next)
	o.sessions[s.id] = s
	pumped := make(chan struct{})
	b.wg.Go(func() {
		defer close(pumped)
		s.pump(pr)
	})
	b.wg.Go(func() {
		ws, err := p.wait()
		killGroup(s.pid) // what the process left behind in its group
		untrackGroup()
		pr.SetReadDeadline(time.Now().Add(time.Second))
		<-pumped
		pr.Close()
		s.stdinMu.Lock()
		inW.Close()
		s.stdinMu.Unlock()
		status, code := exitStatus(ws), ws.ExitStatus()
		if err != nil {
			status, code = err.Error(), -1
		}
		s.finish(status, code)
		close(s.done)
	})
	b.mu.Unlock()

	s.settle(ctx, b.opts.SettleQuiet, wait, false)
	return Result{Text: "session_id: " + s.id + "\n" + s.take(b.opts.MaxOutputBytes) + s.statusLine("")}
}

// session returns owner's session id, or an error result naming it as unknown here.
func (b *Bash) session(owner, id string) (*session, *Result) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if o := b.owners[owner]; o != nil {
		if s := o.sessions[id]; s != nil {
			return s, nil
		}
	}
	r := Errorf("bash session %q is unknown here (sessions are per host and per session runtime; use action=list)", id)
	return nil, &r
}

func (b *Bash) write(ctx context.Context, owner, id, input string, wait time.Duration) Result {
	s, errRes := b.session(owner, id)
	if errRes != nil {
		return *errRes
	}
	if input == "" {
		return Errorf("input is empty; to wait for output use action=read with timeout_secs")
	}
	s.touch(b.uses.Add(1))
	if !strings.HasSuffix(input, "\n") {
		input += "\n"
	}
	s.mu.Lock()
	exited, status := s.exited, s.status
	s.mu.Unlock()
	if exited {
		return Errorf("bash session %q has exited (%s); action=read returns its remaining output, action=kill removes it", id, status)
	}
	s.stdinMu.Lock()
	s.stdin.SetWriteDeadline(time.Now().Add(wait))
	_, err := s.stdin.Write([]byte(input))
	s.stdinMu.Unlock()
	if err != nil {
		return Result{Text: fmt.Sprintf("write to bash session %q: %v\n", id, err) + s.take(b.opts.MaxOutputBytes) + s.statusLine(""), IsError: true}
	}
	s.settle(ctx, b.opts.SettleQuiet, wait, false)
	return Result{Text: s.take(b.opts.MaxOutputBytes) + s.statusLine("")}
}

func (b *Bash) read(ctx context.Context, owner, id string, wait time.Duration) Result {
	s, errRes := b.session(owner, id)
	if errRes != nil {
		return *errRes
	}
	s.touch(b.uses.Add(1))
	if wait > 0 {
		s.settle(ctx, b.opts.SettleQuiet, wait, true)
	}
	return Result{Text: s.take(b.opts.MaxOutputBytes) + s.statusLine("")}
}

func (b *Bash) kill(owner, id string) Result {
	s, errRes := b.session(owner, id)
	if errRes != nil {
		return *errRes
	}
	s.kill()
	s.waitDone(2 * time.Second)
	b.mu.Lock()
	if o := b.owners[owner]; o != nil {
		delete(o.sessions, id)
	}
	b.mu.Unlock()
	return Result{Text: s.take(b.opts.MaxOutputBytes) + s.statusLine("") + "\nsession " + id + " is killed and forgotten"}
}

func (b *Bash) list(owner string) Result {
	ss := b.Sessions(owner)
	if len(ss) == 0 {
		return Result{Text: "no bash sessions (action=start starts one)"}
	}
	var sb strings.Builder
	for _, s := range ss {
		fmt.Fprintf(&sb, "%s\t%s\tstarted %s\t%s\n", s.ID, s.Status, s.Started.Format(time.DateTime), s.Command)
	}
	return Result{Text: sb.String()}
}

// touch records that the session was used; n orders its uses among the service's.
func (s *session) touch(n int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.used = n
}

// pump copies the process output into the buffer until the pipe ends.
func (s *session) pump(r *os.File) {
	p := make([]byte, 32<<10)
	for {
		n, err := r.Read(p)
		if n > 0 {
			s.mu.Lock()
			s.buf = append(s.buf, p[:n]...)
			if len(s.buf) > s.bufMax {
				s.buf = s.buf[len(s.buf)-s.bufMax:]
			}
			s.total += int64(n)
			close(s.changed)
			s.changed = make(chan struct{})
			s.mu.Unlock()
		}
		if err != nil {
			return
		}
	}
}

func (s *session) finish(status string, code int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.exited, s.status, s.exitCode = true, status, code
}

// kill kills the session's process group if it still runs.
func (s *session) kill() {
	s.mu.Lock()
	exited := s.exited
	s.mu.Unlock()
	if !exited {
		killGroup(s.pid)
	}
}

func (s *session) waitDone(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-s.done:
	case <-t.C:
	}
}

// settle waits until the output has been quiet for quiet, the process ended, ctx ended,
// or max passed. With first it waits for some unread output before the quiet period
// counts.
func (s *session) settle(ctx context.Context, quiet, max time.Duration, first bool) {
	deadline := time.NewTimer(max)
	defer deadline.Stop()
	s.mu.Lock()
	seen := !first || s.total > s.cursor
	s.mu.Unlock()
	for {
		s.mu.Lock()
		changed := s.changed
		s.mu.Unlock()
		var quietC <-chan time.Time
		if seen {
			t := time.NewTimer(quiet)
			defer t.Stop()
			quietC = t.C
		}
		select {
		case <-changed:
			seen = true
		case <-quietC:
			return
		case <-s.done:
			return
		case <-deadline.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

// take returns the output not yet returned, bounded to limit bytes, and marks it
// returned.
func (s *session) take(limit int) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	start := s.total - int64(len(s.buf))
	from := max(s.cursor, start)
	dropped := from - s.cursor
	data := s.buf[from-start:]
	s.cursor = s.total
	text := clip(data, limit)
	if dropped > 0 {
		text = fmt.Sprintf("[... %d earlier bytes dropped from the session buffer ...]\n", dropped) + text
	}
	if text == "" {
		text = "[no new output]"
	}
	if !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	return text
}

// statusLine says whether the session runs: "[session b1: running]".
func (s *session) statusLine(prefix string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.exited {
		return fmt.Sprintf("[session %s: %sexited, %s]", s.id, prefix, s.status)
	}
	return fmt.Sprintf("[session %s: %srunning]", s.id, prefix)
}
