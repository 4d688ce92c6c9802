package hosts

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"myco.dev/hosts/proto"
)

// conn is one attached host process: ssh (or, in tests, any command) speaking the host
// protocol on its stdin and stdout. Its stderr is kept, bounded, for error messages.
type conn struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout io.Reader
	w      *proto.Writer
	stderr *tailBuffer
	log    *slog.Logger
	hello  chan helloResult // the host's first frame; buffered
	done   chan struct{}    // closed when the connection has ended and the process is waited for
	onEnd  func(*conn)      // called once, before done closes

	mu      sync.Mutex // guards the fields below
	next    uint64
	pending map[uint64]chan proto.Msg
	onProg  map[uint64]func(tail string) // a pending call's progress reporter
	// readEnded is set when the host's output ended, before stdin is closed: from then on
	// nothing more is sent, though the end is recorded only once the process is reaped.
	readEnded bool
	ended     bool
	fatal     string      // the host's fatal error frame, when it sent one
	reason    error       // why the controller ended it, when it did
	err       error       // why it ended; set before done closes
	host      proto.Hello // the host's hello
}

type helloResult struct {
	hello *proto.Hello
	err   error
}

// startConn starts argv with environment env. The caller runs readLoop on a goroutine it
// owns.
func startConn(argv, env []string, log *slog.Logger) (*conn, error) {
	c := &conn{
		cmd:     exec.Command(argv[0], argv[1:]...),
		stderr:  &tailBuffer{max: 8 << 10},
		log:     log,
		hello:   make(chan helloResult, 1),
		done:    make(chan struct{}),
		pending: map[uint64]chan proto.Msg{},
		onProg:  map[uint64]func(string){},
	}
	c.cmd.Stderr = c.stderr
	c.cmd.Env = env
	// Its own process group: a terminal's Ctrl-C cancels the turn, not the connection.
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// A background ssh (ControlPersist) may keep stderr open; do not wait for it.
	c.cmd.WaitDelay = time.Second
	var err error
	if c.stdin, err = c.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	if c.stdout, err = c.cmd.StdoutPipe(); err != nil {
		return nil, err
	}
	if err := c.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", argv[0], err)
	}
	c.w = proto.NewWriterSize(cutWriter{c.stdin}, proto.MaxRequestLine)
	return c, nil
}

// cutWriter is the host's stdin under the frame writer, which writes each frame in one
// Write: a failed write that had sent part of its frame says so, since the host may have
// read that part (and, at the end of its input, taken a frame short of only its newline).
type cutWriter struct{ w io.Writer }

func (cw cutWriter) Write(p []byte) (int, error) {
	n, err := cw.w.Write(p)
	if err != nil && n > 0 {
		err = fmt.Errorf("%w (%d of its %d bytes were written): %w", errCut, n, len(p), err)
	}
	return n, err
}

// errCut is a write to the host that failed after part of its frame went out.
var errCut = errors.New("the frame was cut short")

// readLoop reads frames until the host's stdout ends, then reaps the process and ends
// the connection. Lines before the hello that are not frames (a login script printing to
// stdout) are skipped and remembered for the error message.
func (c *conn) readLoop() {
	r := proto.NewReader(c.stdout)
	first := true
	var junk []string
	var err error
	for {
		var m proto.Msg
		m, err = r.Read(context.Background())
		if errors.Is(err, proto.ErrMalformed) {
			if first {
				if len(junk) < 3 {
					junk = append(junk, err.Error())
				}
				continue
			}
			c.log.Warn("malformed frame from host", "err", err)
			continue
		}
		if err != nil {
			break
		}
		if first {
			first = false
			switch {
			case m.Hello != nil:
				h := safeHello(*m.Hello)
				c.hello <- helloResult{hello: &h}
			case m.Err != nil:
				c.hello <- helloResult{err: errors.New(remoteText(m.Err.Message))}
			default:
				c.hello <- helloResult{err: errors.New("the host's first frame was not a hello")}
			}
			continue
		}
		if m.ID == 0 {
			switch {
			case m.Err != nil && m.Err.Fatal:
				c.mu.Lock()
				c.fatal = remoteText(m.Err.Message)
				c.mu.Unlock()
			case m.Err != nil:
				c.log.Warn("host error", "message", m.Err.Message)
			}
			continue
		}
		if m.Progress != nil {
			// Not a response: pass it on when the call asked for it, ignore it otherwise
			// (an unknown id, or a call already answered).
			c.mu.Lock()
			report := c.onProg[m.ID]
			c.mu.Unlock()
			if report != nil {
				report(m.Progress.Tail)
			}
			continue
		}
		c.mu.Lock()
		ch := c.pending[m.ID]
		delete(c.pending, m.ID)
		delete(c.onProg, m.ID)
		c.mu.Unlock()
		if ch != nil {
			ch <- m
		}
	}
	// Reaping the process may take seconds (a background ssh holding stderr open); calls
	// made meanwhile must not be written to the stdin closed here: they were never sent.
	c.mu.Lock()
	c.readEnded = true
	c.mu.Unlock()
	c.stdin.Close()
	waitErr := c.wait(2 * time.Second)

	c.mu.Lock()
	c.ended = true
	switch {
	case c.reason != nil:
		c.err = c.reason
	default:
		c.err = c.exitError(err, waitErr, junk, !first)
	}
	c.pending, c.onProg = nil, nil
	c.mu.Unlock()
	if first {
		c.hello <- helloResult{err: c.err}
	}
	if c.onEnd != nil {
		c.onEnd(c)
	}
	close(c.done)
}

// wait reaps the process, killing its group when it does not exit within grace.
func (c *conn) wait(grace time.Duration) error {
	exited := make(chan error, 1)
	go func() { exited <- c.cmd.Wait() }()
	select {
	case err := <-exited:
		return err
	case <-time.After(grace):
		c.kill()
		return <-exited
	}
}

func (c *conn) kill() {
	if c.cmd.Process != nil {
		_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
	}
}

// abort ends the connection at once for reason.
func (c *conn) abort(reason error) {
	c.mu.Lock()
	if c.reason == nil && !c.ended {
		c.reason = reason
	}
	c.mu.Unlock()
	c.kill()
}

// close ends the connection cleanly: the host sees its stdin close and ends every process
// it started; after grace the process group is killed.
func (c *conn) close(reason error, grace time.Duration) {
	c.mu.Lock()
	if c.reason == nil && !c.ended {
		c.reason = reason
	}
	c.mu.Unlock()
	c.stdin.Close()
	select {
	case <-c.done:
	case <-time.After(grace):
		c.kill()
		<-c.done
	}
}

// endErr returns why the connection ended, or nil while it has not: err is set together
// with ended, before onEnd runs and done closes.
func (c *conn) endErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// exitError describes how the host process ended, with ssh's own words; c.mu is held.
func (c *conn) exitError(readErr, waitErr error, junk []string, attached bool) error {
	var sb strings.Builder
	var ee *exec.ExitError
	switch {
	case c.fatal != "":
		fmt.Fprintf(&sb, "the host ended the connection: %s", c.fatal)
	case readErr != nil && !errors.Is(readErr, io.EOF):
		fmt.Fprintf(&sb, "reading from the host: %v", readErr)
	case waitErr == nil:
		sb.WriteString("the host process exited")
	case errors.As(waitErr, &ee) && ee.ExitCode() == 255 && attached:
		sb.WriteString("ssh exited with status 255: the connection dropped, or the host process was killed")
	case errors.As(waitErr, &ee) && ee.ExitCode() == 255:
		sb.WriteString("ssh exited with status 255: it could not connect or log in")
	case errors.As(waitErr, &ee) && ee.ExitCode() == 127:
		sb.WriteString("the remote command was not found (exit status 127): myco is not on the host's non-interactive PATH")
	case errors.As(waitErr, &ee) && ee.ExitCode() < 0:
		fmt.Fprintf(&sb, "the host process was %v", waitErr)
	case errors.As(waitErr, &ee):
		fmt.Fprintf(&sb, "the host process exited with status %d", ee.ExitCode())
	default:
		fmt.Fprintf(&sb, "the host process ended: %v", waitErr)
	}
	if s := c.stderr.String(); s != "" {
		fmt.Fprintf(&sb, "; it said: %q", s)
	}
	if len(junk) > 0 {
		fmt.Fprintf(&sb, "; before any frame its stdout carried lines that are not the protocol (does a login script print to stdout?): %s", strings.Join(junk, "; "))
	}
	return errors.New(sb.String())
}

// request sends m with a fresh id and waits for the response with that id.
func (c *conn) request(ctx context.Context, m proto.Msg) (proto.Msg, error) {
	return c.requestProgress(ctx, m, nil)
}

// requestProgress is [conn.request] that passes the progress frames with m's id to report,
// when set, from the read loop, until the response arrives; report must not block.
func (c *conn) requestProgress(ctx context.Context, m proto.Msg, report func(tail string)) (proto.Msg, error) {
	ch := make(chan proto.Msg, 1)
	c.mu.Lock()
	if c.readEnded {
		c.mu.Unlock()
		return proto.Msg{}, errNotSent
	}
	c.next++
	m.ID = c.next
	c.pending[m.ID] = ch
	if report != nil {
		c.onProg[m.ID] = report
	}
	c.mu.Unlock()
	forget := func() {
		c.mu.Lock()
		delete(c.pending, m.ID)
		delete(c.onProg, m.ID)
		c.mu.Unlock()
	}
	if err := c.w.Write(m); err != nil {
		forget()
		if errors.Is(err, proto.ErrLineTooLong) {
			return proto.Msg{}, err // nothing was sent; the connection goes on
		}
		c.mu.Lock()
		closed := c.readEnded
		c.mu.Unlock()
		cut := errors.Is(err, errCut)
		if closed && !cut {
			return proto.Msg{}, errNotSent // the read loop closed stdin before the write
		}
		select {
		case <-c.done:
			if cut {
				return proto.Msg{}, errConnEnded
			}
			return proto.Msg{}, errNotSent // not a byte of m went out
		case <-time.After(time.Second):
			return proto.Msg{}, fmt.Errorf("write to the host: %w", err)
		}
	}
	select {
	case resp := <-ch:
		return resp, nil
	case <-c.done:
		select {
		case resp := <-ch:
			return resp, nil
		default:
			return proto.Msg{}, errConnEnded
		}
	case <-ctx.Done():
		forget()
		return proto.Msg{}, ctx.Err()
	}
}

// errConnEnded is returned by request when the connection ended first; the reason is
// conn.endErr.
var errConnEnded = errors.New("the connection to the host ended")

// errNotSent is returned by request when the connection had ended, or its host's output
// had, before m was sent: the host never saw it.
var errNotSent = fmt.Errorf("%w before the request was sent", errConnEnded)

// hostHello returns the host's hello.
func (c *conn) hostHello() proto.Hello {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.host
}

// tailBuffer keeps the last max bytes written to it. It is safe for concurrent use.
type tailBuffer struct {
	max int

	mu sync.Mutex // guards b
	b  []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append([]byte(nil), t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

// String returns the kept bytes, trimmed.
func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.b))
}
