package profiles

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"myco.dev/internal/handoff"
)

// Options configures a [Pool].
type Options struct {
	// Command returns the command line and the environment of profile name's worker. The
	// worker takes connections over its file descriptor 3 and prints "ready" on stdout
	// once it serves.
	Command func(name string) (argv, env []string)
	// Stderr receives the workers' stderr: their log lines as they are (a worker's logger
	// names its profile in each), anything else a worker writes (a panic) prefixed with its
	// profile, or with LogJSON made a JSON log line of its own; nil discards it.
	Stderr io.Writer
	// LogJSON says the log is JSON, one object a line, which nothing else may break.
	LogJSON bool
	// Build is the supervisor's build identity: a worker that says another with "ready"
	// (its binary was replaced under a server it was not started from) is stopped and
	// refused, never served beside this one. "" checks none.
	Build        string
	StartTimeout time.Duration // how long a worker may take to be ready; 0 means 30 s
	StopTimeout  time.Duration // how long Close waits for a worker to exit; 0 means 15 s
	Log          *slog.Logger
}

// State is what the pool knows of one profile's worker.
type State struct {
	Profile      string
	Running      bool
	PID          int
	Crashes      int       // crashes in the last crashWindow
	TotalCrashes int       // crashes since the server started, for the metrics
	Retry        time.Time // when a crash-looping worker may start again; zero when it may now
	Error        string    // why it last failed to start or stopped, if it did
}

// WorkerFD is the file descriptor on which a worker inherits its channel.
const WorkerFD = 3

// Sender returns the sender that hands connections to profile name's worker, starting the
// worker as [Pool.Worker] does.
func (p *Pool) Sender(ctx context.Context, name string) (*handoff.Sender, error) {
	snd, _, err := p.Worker(ctx, name)
	return snd, err
}

// StartError reports a worker that exited before it was ready: a missing or invalid
// config, most often. Output is the end of what it said on stderr.
type StartError struct {
	Profile string
	Output  string
	Err     error
}

func (e *StartError) Error() string {
	msg := fmt.Sprintf("profile %s did not start: %v", e.Profile, e.Err)
	if e.Output != "" {
		msg += ": " + e.Output
	}
	return msg
}

func (e *StartError) Unwrap() error { return e.Err }

// BackoffError reports a worker that crashed too often lately: it is started again after
// Until.
type BackoffError struct {
	Profile string
	Crashes int
	Until   time.Time
}

func (e *BackoffError) Error() string {
	return fmt.Sprintf("profile %s crashed %d times in the last %v; it is started again in %v", e.Profile, e.Crashes,
		crashWindow, time.Until(e.Until).Round(time.Second))
}

// ErrClosed reports a request to a pool that is shutting down.
var ErrClosed = errors.New("profiles: the server is shutting down")

const (
	// crashWindow is how long a crash counts toward the backoff.
	crashWindow = 5 * time.Minute
	// startCooldown spaces attempts to start a worker that fails before it is ready (a bad
	// config): each request may try, but not more often than this.
	startCooldown = time.Second
	maxBackoff    = time.Minute
)

// Pool is the set of profile workers of one server. It is safe for concurrent use.
type Pool struct {
	o   Options
	log *slog.Logger

	mu      sync.Mutex // guards the fields below
	workers map[string]*worker
	closed  bool
}

// worker is one profile's worker process and its history.
type worker struct {
	name string

	// Guarded by Pool.mu.
	cmd       *exec.Cmd
	stdin     io.WriteCloser
	ready     chan struct{} // closed once the process serves
	mismatch  error         // the process said another build than the pool's
	done      chan struct{} // closed once the process exited
	starting  bool
	stopping  bool
	startErr  error
	failedAt  time.Time
	crashes   []time.Time
	crashed   int // crashes since the pool started
	lastError string
	tail      *tail
	sender    *handoff.Sender // hands connections to the running process
	starts    int             // processes started so far
}

// New returns a pool of the workers o.Command describes.
func New(o Options) (*Pool, error) {
	if o.Command == nil {
		return nil, errors.New("profiles: a pool needs the workers' command")
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = 30 * time.Second
	}
	if o.StopTimeout <= 0 {
		o.StopTimeout = 15 * time.Second
	}
	if o.Stderr == nil {
		o.Stderr = io.Discard
	}
	p := &Pool{o: o, log: o.Log, workers: map[string]*worker{}}
	if p.log == nil {
		p.log = slog.Default()
	}
	return p, nil
}

// Start starts profile name's worker when none runs and waits until it serves (bounded
// by ctx and StartTimeout). It returns a [*StartError] for a worker that exited before it
// was ready, a [*BackoffError] for one that crashes too often, [ErrClosed] once the pool
// closes.
func (p *Pool) Start(ctx context.Context, name string) error {
	_, _, err := p.Worker(ctx, name)
	return err
}

// Worker starts profile name's worker as [Pool.Start] does and returns the sender that
// reaches it (hand it a connection, or dial it) and its generation: how many processes
// have served profile name so far. A new generation is a new process, to which a
// client's kept connections do not lead.
func (p *Pool) Worker(ctx context.Context, name string) (snd *handoff.Sender, generation int, err error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, 0, ErrClosed
	}
	w := p.workers[name]
	if w == nil {
		w = &worker{name: name}
		p.workers[name] = w
	}
	if w.cmd == nil || isClosed(w.done) {
		if err := p.startLocked(w); err != nil {
			p.mu.Unlock()
			return nil, 0, err
		}
	}
	ready, done, gen, snd := w.ready, w.done, w.starts, w.sender
	p.mu.Unlock()
	timer := time.NewTimer(p.o.StartTimeout)
	defer timer.Stop()
	select {
	case <-ready:
		return snd, gen, nil
	case <-done:
		p.mu.Lock()
		defer p.mu.Unlock()
		if w.startErr != nil {
			return nil, 0, w.startErr
		}
		return nil, 0, &StartError{Profile: name, Err: errors.New("the worker exited")}
	case <-timer.C:
		return nil, 0, &StartError{Profile: name, Err: fmt.Errorf("the worker was not ready within %v", p.o.StartTimeout)}
	case <-ctx.Done():
		return nil, 0, context.Cause(ctx)
	}
}

// Running returns the sender that reaches profile name's worker and its generation (see
// [Pool.Worker]) when the worker runs and serves; ok is false, and nothing is started,
// otherwise.
func (p *Pool) Running(name string) (snd *handoff.Sender, generation int, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	w := p.workers[name]
	if p.closed || w == nil || w.cmd == nil || isClosed(w.done) || !isClosed(w.ready) {
		return nil, 0, false
	}
	return w.sender, w.starts, true
}

func isClosed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// startLocked starts w's process, unless it failed to start a moment ago or crashes too
// often. Call with p.mu held.
func (p *Pool) startLocked(w *worker) error {
	now := time.Now()
	if w.startErr != nil && now.Sub(w.failedAt) < startCooldown {
		return w.startErr
	}
	recent := w.crashes[:0]
	for _, c := range w.crashes {
		if now.Sub(c) < crashWindow {
			recent = append(recent, c)
		}
	}
	w.crashes = recent
	if n := len(recent); n >= 2 {
		wait := min(time.Second<<(n-2), maxBackoff)
		if until := recent[n-1].Add(wait); now.Before(until) {
			return &BackoffError{Profile: w.name, Crashes: n, Until: until}
		}
	}
	argv, env := p.o.Command(w.name)
	ours, theirs, err := handoff.Pair()
	if err != nil {
		return err
	}
	defer theirs.Close() // the worker has its own copy once started
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	cmd.ExtraFiles = []*os.File{theirs} // its descriptor 3: WorkerFD
	// Its own process group: a terminal's Ctrl-C reaches the server, which stops the
	// workers by closing their stdin, not each worker at once.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		ours.Close()
		return err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		ours.Close()
		return err
	}
	w.tail = &tail{max: 4 << 10, profile: w.name, json: p.o.LogJSON, out: p.o.Stderr}
	cmd.Stderr = w.tail
	if err := cmd.Start(); err != nil {
		ours.Close()
		w.startErr, w.failedAt = &StartError{Profile: w.name, Err: err}, now
		return w.startErr
	}
	w.cmd, w.stdin, w.ready, w.done, w.starting, w.stopping, w.startErr = cmd, stdin, make(chan struct{}), make(chan struct{}), true, false, nil
	w.starts++
	if w.sender != nil {
		w.sender.Close() // to the previous process
	}
	w.sender = handoff.NewSender(ours)
	p.log.Info("profile worker started", "profile", w.name, "pid", cmd.Process.Pid)
	ready, done := w.ready, w.done
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			word, build, _ := strings.Cut(strings.TrimSpace(sc.Text()), " ")
			if word != "ready" {
				continue
			}
			if p.o.Build != "" && build != p.o.Build {
				// Another build than the server's: a mix of versions is never served. The
				// worker is stopped; its exit, while starting, is its start's error.
				p.mu.Lock()
				w.mismatch = fmt.Errorf("the worker runs build %q, the server build %q: the binary was replaced under the server (an upgrade?); restart the server to run the new one", build, p.o.Build)
				p.mu.Unlock()
				cmd.Process.Kill()
				break
			}
			p.mu.Lock()
			if w.ready == ready { // not a successor's start
				w.starting = false
			}
			p.mu.Unlock()
			close(ready)
			break // a second "ready" must not close it again
		}
		io.Copy(io.Discard, stdout)
	}()
	go func() {
		err := cmd.Wait()
		p.mu.Lock()
		defer p.mu.Unlock()
		switch {
		case w.stopping:
		case w.starting && w.mismatch != nil:
			w.startErr = &StartError{Profile: w.name, Err: w.mismatch}
			p.log.Error("profile worker refused", "profile", w.name, "err", w.mismatch)
			w.failedAt, w.mismatch = time.Now(), nil
			w.lastError = w.startErr.Error()
		case w.starting:
			w.startErr = &StartError{Profile: w.name, Output: w.tail.String(), Err: exitErr(err)}
			w.failedAt = time.Now()
			w.lastError = w.startErr.Error()
		default:
			w.crashes = append(w.crashes, time.Now())
			w.crashed++
			w.lastError = fmt.Sprintf("crashed: %v", exitErr(err))
			p.log.Warn("profile worker crashed; it starts again on the next request", "profile", w.name, "err", exitErr(err))
		}
		close(done)
	}()
	return nil
}

func exitErr(err error) error {
	if err == nil {
		return errors.New("it exited")
	}
	return err
}

// States returns what the pool knows of each worker, by profile name.
func (p *Pool) States() []State {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]State, 0, len(p.workers))
	for _, w := range p.workers {
		st := State{Profile: w.name, Crashes: len(w.crashes), TotalCrashes: w.crashed, Error: w.lastError}
		if w.cmd != nil && !isClosed(w.done) {
			st.Running, st.PID = true, w.cmd.Process.Pid
		}
		if n := len(w.crashes); n >= 2 {
			if until := w.crashes[n-1].Add(min(time.Second<<(n-2), maxBackoff)); time.Now().Before(until) {
				st.Retry = until
			}
		}
		out = append(out, st)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Profile < out[j].Profile })
	return out
}

// Close stops every worker by closing its stdin (it stops its sessions, saves them and
// exits), waits for them up to StopTimeout, and kills what is left.
func (p *Pool) Close() {
	p.mu.Lock()
	p.closed = true
	var running []*worker
	for _, w := range p.workers {
		if w.cmd != nil && !isClosed(w.done) {
			w.stopping = true
			w.stdin.Close()
			running = append(running, w)
		}
	}
	p.mu.Unlock()
	// One deadline for all, which stays passed once it has (a timer's channel fires once:
	// the second worker still running would have been waited for without end).
	deadline, cancel := context.WithTimeout(context.Background(), p.o.StopTimeout)
	defer cancel()
	for _, w := range running {
		select {
		case <-w.done:
		case <-deadline.Done():
			p.log.Warn("profile worker did not stop in time; killing it", "profile", w.name, "pid", w.cmd.Process.Pid)
			syscall.Kill(-w.cmd.Process.Pid, syscall.SIGKILL)
			<-w.done
		}
	}
	p.mu.Lock()
	for _, w := range p.workers {
		if w.sender != nil {
			w.sender.Close()
		}
	}
	p.mu.Unlock()
}

// tail keeps the end of what a worker writes to stderr and passes each line on: a log line
// as it is, anything else in the log's format, naming the profile.
type tail struct {
	max     int
	profile string
	json    bool // the log is JSON: every line must be an object
	out     io.Writer

	mu   sync.Mutex // guards the fields below
	buf  []byte
	line []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = t.buf[len(t.buf)-t.max:]
	}
	t.line = append(t.line, p...)
	for {
		i := strings.IndexByte(string(t.line), '\n')
		if i < 0 {
			break
		}
		t.pass(t.line[:i])
		t.line = t.line[i+1:]
	}
	return len(p), nil
}

// pass writes one line of the worker's stderr on: a line of its logger as it is (the
// logger names the profile), in JSON a line of another kind (a panic's) as a log object
// of its own, in text that line after the profile's name.
func (t *tail) pass(line []byte) {
	switch {
	case t.json && len(line) > 0 && line[0] == '{' && json.Valid(line):
		fmt.Fprintf(t.out, "%s\n", line)
	case t.json:
		b, _ := json.Marshal(struct {
			Time    string `json:"time"`
			Level   string `json:"level"`
			Msg     string `json:"msg"`
			Profile string `json:"profile"`
			Stream  string `json:"stream"`
		}{time.Now().Format(time.RFC3339Nano), "ERROR", string(line), t.profile, "stderr"})
		fmt.Fprintf(t.out, "%s\n", b)
	case bytes.HasPrefix(line, []byte("time=")):
		fmt.Fprintf(t.out, "%s\n", line)
	default:
		fmt.Fprintf(t.out, "profile %s: %s\n", t.profile, line)
	}
}

// String returns the end of the output, trimmed.
func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.buf))
}
