package sandbox

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// maxAnswer bounds a line the helper writes; its answers are a few hundred bytes.
const maxAnswer = 64 << 10

// errNotSent says that a request never reached the helper, which was already gone: the
// command can go to another helper.
var errNotSent = errors.New("sandbox: the request was not sent")

// helper is the runner's side of one helper process: the socket to it, the commands it
// started that have not exited yet, and whether it still takes new ones.
type helper struct {
	r      *Runner
	cmd    *exec.Cmd
	stderr *tail
	conn   *net.UnixConn
	print  string    // the spec and files it is fenced in for
	made   time.Time // when its ruleset was built
	exited chan struct{}

	wmu sync.Mutex // serializes requests on conn

	mu      sync.Mutex // guards the fields below
	nextID  uint64
	pending map[uint64]*Process // started or being started, not yet exited
	retired bool                // takes no new commands; closed once pending is empty
	err     error               // why it is gone; nil while it serves
	timer   *time.Timer         // retires it when its ruleset is too old
}

// startHelper starts a helper fenced in as cs says and waits until it is ready.
func (r *Runner) startHelper(cs childSpec, print string) (*helper, error) {
	rs, err := r.f.rulesetFor(cs)
	if err != nil {
		return nil, err
	}
	ours, theirs, err := socketpair()
	if err != nil {
		return nil, err
	}
	defer ours.Close()
	cmd, stderr, err := r.helperCmd(cs, theirs, rs.file)
	if err != nil {
		theirs.Close()
		return nil, err
	}
	err = cmd.Start()
	theirs.Close()
	if err != nil {
		return nil, fmt.Errorf("start the helper: %w", err)
	}
	fc, err := net.FileConn(ours)
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		return nil, fmt.Errorf("the helper's socket: %w", err)
	}
	conn := fc.(*net.UnixConn)
	h := &helper{r: r, cmd: cmd, stderr: stderr, conn: conn, print: print, made: rs.made,
		exited: make(chan struct{}), pending: map[uint64]*Process{}}
	br := bufio.NewReaderSize(conn, maxAnswer)
	if err := h.ready(br); err != nil {
		conn.Close()
		cmd.Process.Kill()
		cmd.Wait()
		if s := strings.TrimSpace(stderr.String()); s != "" {
			err = fmt.Errorf("%w (%s)", err, s)
		}
		return nil, err
	}
	h.mu.Lock()
	h.timer = time.AfterFunc(time.Until(h.made.Add(rulesetTTL)), h.retire)
	h.mu.Unlock()
	r.wg.Go(func() { h.read(br) })
	r.wg.Go(h.wait)
	return h, nil
}

// ready waits for the helper's first line: ready, or why it cannot be.
func (h *helper) ready(br *bufio.Reader) error {
	h.conn.SetReadDeadline(time.Now().Add(readyTimeout))
	defer h.conn.SetReadDeadline(time.Time{})
	line, err := br.ReadSlice('\n')
	if err != nil {
		return fmt.Errorf("the helper did not start: %w", err)
	}
	var rep reply
	if err := json.Unmarshal(line, &rep); err != nil {
		return fmt.Errorf("the helper's first answer: %w", err)
	}
	if !rep.Ready {
		return fmt.Errorf("the helper cannot fence: %s", rep.Err)
	}
	return nil
}

// serves reports whether h takes new commands for files identified by print.
func (h *helper) serves(print string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.err == nil && !h.retired && h.print == print && time.Since(h.made) < rulesetTTL
}

// start asks the helper to start c and waits for its answer.
func (h *helper) start(ctx context.Context, c Command) (*Process, error) {
	h.mu.Lock()
	if h.err != nil {
		h.mu.Unlock()
		return nil, errNotSent
	}
	h.nextID++
	p := &Process{id: h.nextID, answered: make(chan reply, 1), done: make(chan struct{})}
	h.pending[p.id] = p
	h.mu.Unlock()

	if err := h.send(c, p.id); err != nil {
		h.forget(p.id)
		return nil, err
	}
	// A helper that does not answer is stopped or hung: kill it, so that this command
	// fails and the next one gets another.
	t := time.AfterFunc(startTimeout, func() {
		h.kill(fmt.Errorf("%w: it did not answer in %s", ErrHelperGone, startTimeout))
	})
	defer t.Stop()
	var rep reply
	select {
	case rep = <-p.answered:
	case <-p.done:
		select { // an exit is told after the start: then the answer is here
		case rep = <-p.answered:
		default:
			_, err := p.Wait()
			return nil, fmt.Errorf("%w; the command may have started", err)
		}
	case <-ctx.Done():
		// Whichever of this and dispatch comes second kills what was started.
		p.mu.Lock()
		p.abandoned = true
		select {
		case rep := <-p.answered:
			if rep.Err == "" {
				killGroup(rep.Pid)
			}
		default:
		}
		p.mu.Unlock()
		return nil, ctx.Err()
	}
	if rep.Err != "" {
		return nil, errors.New(rep.Err)
	}
	p.watch(ctx, c)
	return p, nil
}

// send writes the request for c: its length with the descriptors, then the request.
func (h *helper) send(c Command, id uint64) error {
	req := request{ID: id, Path: c.Path, Args: c.Args, Env: c.Env, Dir: c.Dir}
	body, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("sandbox: encode the request: %w", err)
	}
	files := make([]*os.File, max(3, len(c.Files)))
	copy(files, c.Files)
	var null *os.File
	fds := make([]int, len(files))
	for i, f := range files {
		if f == nil {
			if null == nil {
				if null, err = os.OpenFile(os.DevNull, os.O_RDWR, 0); err != nil {
					return fmt.Errorf("sandbox: %w", err)
				}
				defer null.Close()
			}
			f = null
		}
		fds[i] = int(f.Fd())
	}
	hdr := binary.BigEndian.AppendUint32(nil, uint32(len(body)))
	h.wmu.Lock()
	defer h.wmu.Unlock()
	n, _, err := h.conn.WriteMsgUnix(hdr, unix.UnixRights(fds...), nil)
	runtime.KeepAlive(files)
	if n == 0 && err != nil {
		h.fail(fmt.Errorf("%w: %w", ErrHelperGone, err))
		return errNotSent
	}
	if err == nil {
		_, err = h.conn.Write(append(hdr[n:], body...))
	}
	if err != nil {
		err = fmt.Errorf("%w: send the command: %w", ErrHelperGone, err)
		h.fail(err)
		return err
	}
	return nil
}

// read reads the helper's answers until its socket ends, then makes sure it exits.
func (h *helper) read(br *bufio.Reader) {
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			h.kill(fmt.Errorf("%w: an answer of more than %d bytes", ErrHelperGone, maxAnswer))
			break
		}
		if err != nil {
			h.fail(fmt.Errorf("%w: %w", ErrHelperGone, err))
			break
		}
		var rep reply
		if err := json.Unmarshal(line, &rep); err != nil {
			h.kill(fmt.Errorf("%w: a wrong answer: %w", ErrHelperGone, err))
			break
		}
		h.dispatch(rep)
	}
	// It exits at the end of its socket, after killing what it started; give it a
	// moment for that.
	t := time.NewTimer(2 * time.Second)
	defer t.Stop()
	select {
	case <-h.exited:
	case <-t.C:
		h.cmd.Process.Kill()
	}
}

// wait waits for the helper process to exit.
func (h *helper) wait() {
	err := h.cmd.Wait()
	why := "exited"
	if err != nil {
		why = err.Error()
	}
	if s := strings.TrimSpace(h.stderr.String()); s != "" {
		why += ": " + s
	}
	h.fail(fmt.Errorf("%w (%s)", ErrHelperGone, why))
	close(h.exited)
	h.r.ended(h)
}

// dispatch hands an answer to its process.
func (h *helper) dispatch(rep reply) {
	if !rep.Exited && rep.Err == "" && !inSession(rep.Pid, h.cmd.Process.Pid) {
		// Only a helper taken over would name a process it did not start, to have its
		// group killed.
		h.kill(fmt.Errorf("%w: it named process %d, which it did not start", ErrHelperGone, rep.Pid))
		return
	}
	h.mu.Lock()
	p := h.pending[rep.ID]
	if p == nil {
		h.mu.Unlock()
		return
	}
	switch {
	case rep.Exited:
		delete(h.pending, rep.ID)
		drained := h.retired && len(h.pending) == 0
		h.mu.Unlock()
		p.finish(syscall.WaitStatus(rep.Status), nil)
		if drained {
			h.close()
		}
		return
	case rep.Err != "":
		delete(h.pending, rep.ID)
	default:
		p.Pid = rep.Pid
	}
	h.mu.Unlock()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.abandoned {
		if rep.Err == "" {
			killGroup(rep.Pid)
		}
		return
	}
	p.answered <- rep
}

// forget drops process id, which was never started.
func (h *helper) forget(id uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.pending, id)
}

// fail records that the helper is gone, for err, and fails the processes that wait for
// it. The first reason stays.
func (h *helper) fail(err error) {
	h.mu.Lock()
	if h.err != nil {
		h.mu.Unlock()
		return
	}
	h.err = err
	pending := h.pending
	h.pending = map[uint64]*Process{}
	if h.timer != nil {
		h.timer.Stop()
	}
	h.mu.Unlock()
	h.conn.Close()
	for _, p := range pending {
		p.finish(0, err)
	}
}

// kill fails the helper for err and kills it.
func (h *helper) kill(err error) {
	h.fail(err)
	h.cmd.Process.Kill()
}

// retire makes the helper take no new commands and closes it once its commands exited.
func (h *helper) retire() {
	h.mu.Lock()
	h.retired = true
	idle := len(h.pending) == 0
	h.mu.Unlock()
	if idle {
		h.close()
	}
}

// close closes the helper's socket: it exits at its end.
func (h *helper) close() {
	h.fail(fmt.Errorf("%w: closed", ErrHelperGone))
}

// shutdown kills the process groups of the helper's commands and closes it.
func (h *helper) shutdown() {
	h.mu.Lock()
	var pids []int
	for _, p := range h.pending {
		if p.Pid > 0 {
			pids = append(pids, p.Pid)
		}
	}
	h.mu.Unlock()
	for _, pid := range pids {
		killGroup(pid)
	}
	h.close()
}
