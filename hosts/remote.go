package hosts

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"myco.dev/internal/shquote"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"myco.dev/hosts/proto"
	"myco.dev/internal/termtext"
)

// RemoteSpec is one remote host: an ssh alias and where it was found.
type RemoteSpec struct {
	Alias string
	// Source is the file whose Host line named the alias.
	Source string
	// ConfigFile is passed to ssh with -F when set: the parsed config is not ssh's default.
	ConfigFile string
	// Command is the remote program and any leading words; nil means "myco". It is part
	// of a plain word list, never shell syntax.
	Command []string
	// Note warns that ssh may not see the alias as myco did (a relative Include under
	// -F); it is added to attach errors and check problems.
	Note string
}

// RemoteOptions configures every remote controller of a harness.
type RemoteOptions struct {
	SSH string // the ssh client; default "ssh"
	// MaxImageBase64Bytes is passed to every host: the most its view_image reads, the
	// largest image cap of the catalog. Each call is held to its own model's cap, carried in
	// its ctx ([tools.WithImageLimit]) and checked on the images that come back, so a model
	// switch needs no new host process. It must be positive.
	MaxImageBase64Bytes int
	// AttachTimeout bounds a connect and hello on first use; 0 disables the bound.
	AttachTimeout time.Duration
	// PingInterval is the liveness ping period of an attached host; 0 sends no pings.
	// PingMisses unanswered pings in a row (default 3) count as a drop.
	PingInterval time.Duration
	PingMisses   int
	// QueryTimeout bounds an inventory or release query; default 2 s.
	QueryTimeout time.Duration
	// Hello is this side's hello (binary version, OS…); Protocol and WithoutEnv are
	// filled in.
	Hello proto.Hello
	// WithoutEnv names the environment variables (the model credentials' names) that the
	// processes a remote's tool calls start must not get; the host drops them from those
	// processes' environments. It goes to the host in the hello.
	WithoutEnv []string
	// OnState, when set, is called with a remote's new status each time it attaches,
	// drops or fails to attach, in the order the changes happen. It must not block for
	// long; it is never called with the controller's lock held.
	OnState func(Status)
	Log     *slog.Logger // nil means slog.Default()
}

// State is a remote's connection state.
type State string

// The states of a remote.
const (
	StateLazy     State = "lazy"     // never attached, or released; the next call attaches
	StateAttached State = "attached" // a live host process
	StateDropped  State = "dropped"  // the connection ended; the next call re-attaches
	StateError    State = "error"    // the last attach failed; the next call tries again
)

// Status is what the user sees of a remote.
type Status struct {
	Alias string
	State State
	Err   string      // why it dropped or failed, for StateDropped and StateError
	Since time.Time   // when the state was entered; zero for a remote never used
	Hello proto.Hello // the host's hello, once attached
	// Attaches counts the successful attaches so far: more than 1 in StateAttached is a
	// re-attach.
	Attaches int
	// Warning, in StateAttached, says what the user should know about the host: that it
	// serves without its daemon, so its bash sessions and calls in flight end when the
	// connection drops. Empty when all is well.
	Warning string
}

// Err, Warning and every string of Hello in a Status come from the remote or carry its
// words, filtered for a terminal with [termtext.Safe] where this package takes them in.

// Remote is the controller of one remote host: it attaches lazily on first call with ssh,
// multiplexes concurrent calls by id over the one connection, and re-attaches after a
// drop. It is safe for concurrent use; the caller must Close it.
type Remote struct {
	spec      RemoteSpec
	o         RemoteOptions
	log       *slog.Logger
	attachSem chan struct{} // one attach at a time
	quit      chan struct{} // closed by Close
	// wg counts the controller's goroutines. They are added under mu while not closed,
	// so that none is added once Close may be waiting.
	wg sync.WaitGroup

	mu      sync.Mutex // guards the fields below
	conn    *conn
	dialing *conn // the connection an attach is starting, until it is attached or fails
	status  Status
	held    map[string]*holding  // owner -> what it holds on the host
	lost    map[string]lostNote  // owner -> a drop to tell its next call about
	inv     map[string]Inventory // owner -> last-known inventory
	closed  bool
	events  []Status // changes not yet passed to OnState, oldest first

	notifyMu sync.Mutex // serializes OnState calls; taken before mu, never while holding it

	envMu      sync.Mutex // guards withoutEnv; taken alone
	withoutEnv []string   // o.WithoutEnv, or what SetWithoutEnv set since
}

// NewRemote returns the lazy controller of spec; nothing connects until the first call.
func NewRemote(spec RemoteSpec, o RemoteOptions) *Remote {
	if o.SSH == "" {
		o.SSH = "ssh"
	}
	if o.PingMisses <= 0 {
		o.PingMisses = 3
	}
	if o.QueryTimeout <= 0 {
		o.QueryTimeout = 2 * time.Second
	}
	o.Hello.Protocol = proto.Version
	log := o.Log
	if log == nil {
		log = slog.Default()
	}
	return &Remote{
		spec: spec, o: o, log: log.With("host", spec.Alias),
		attachSem: make(chan struct{}, 1), quit: make(chan struct{}),
		status: Status{Alias: spec.Alias, State: StateLazy},
		held:   map[string]*holding{}, lost: map[string]lostNote{}, inv: map[string]Inventory{},
		withoutEnv: slices.Clone(o.WithoutEnv),
	}
}

// SetWithoutEnv replaces the names of [RemoteOptions].WithoutEnv for the connections made
// from now on (a changed config's credential variables): the ssh process they start and
// the hello they send. A connection made before keeps the names it was made with.
func (r *Remote) SetWithoutEnv(names []string) {
	r.envMu.Lock()
	r.withoutEnv = slices.Clone(names)
	r.envMu.Unlock()
}

// without returns the names of WithoutEnv in force now.
func (r *Remote) without() []string {
	r.envMu.Lock()
	defer r.envMu.Unlock()
	return slices.Clone(r.withoutEnv)
}

// Spec returns the remote's spec.
func (r *Remote) Spec() RemoteSpec { return r.spec }

func (r *Remote) command() []string {
	if len(r.spec.Command) == 0 {
		return []string{"myco"}
	}
	return r.spec.Command
}

func (r *Remote) sshArgs() []string {
	args := []string{"-o", "BatchMode=yes"}
	if r.spec.ConfigFile != "" {
		args = append(args, "-F", r.spec.ConfigFile)
	}
	return append(args, r.spec.Alias)
}

// Argv returns the command line that attaches the host: a plain word list,
//
//	ssh -o BatchMode=yes [-F FILE] ALIAS myco --mode host --max-image-base64-bytes N
func (r *Remote) Argv() []string {
	argv := append([]string{r.o.SSH}, r.sshArgs()...)
	argv = append(argv, r.command()...)
	return append(argv, "--mode", "host", "--max-image-base64-bytes", strconv.Itoa(r.o.MaxImageBase64Bytes))
}

// CheckCommand returns the non-interactive check a user runs to see what the host runs,
// quoted for a POSIX shell:
//
//	ssh -o BatchMode=yes ALIAS 'command -v myco; myco --version'
func (r *Remote) CheckCommand() string {
	words := []string{"ssh"}
	for _, a := range r.sshArgs() {
		words = append(words, shquote.Path(a))
	}
	return strings.Join(append(words, shquote.Path(r.checkLine())), " ")
}

// CheckArgv is [Remote.CheckCommand] as a word list for exec.
func (r *Remote) CheckArgv() []string {
	return append(append([]string{r.o.SSH}, r.sshArgs()...), r.checkLine())
}

// checkLine is the remote shell's command line of the check.
func (r *Remote) checkLine() string {
	var prog []string
	for _, w := range r.command() {
		prog = append(prog, shquote.Path(w))
	}
	return fmt.Sprintf("command -v %s; %s --version", prog[0], strings.Join(prog, " "))
}

// Status returns the remote's state.
func (r *Remote) Status() Status {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.status
}

// AttachError is a failed attach: the host could not be reached or did not speak the
// protocol. Its message carries ssh's own words and the check to run.
type AttachError struct {
	Alias string
	Check string // the non-interactive check command
	Note  string // the spec's note, if any
	Err   error
}

func (e *AttachError) Error() string {
	msg := fmt.Sprintf("host %s: could not attach: %v. Check what a non-interactive ssh runs there: %s", e.Alias, e.Err, e.Check)
	if e.Note != "" {
		msg += ". Note: " + e.Note
	}
	return msg
}

func (e *AttachError) Unwrap() error { return e.Err }

// Attach connects the host now, unless it is attached, and returns its hello.
func (r *Remote) Attach(ctx context.Context) (proto.Hello, error) {
	c, _, err := r.attach(ctx, "")
	if err != nil {
		return proto.Hello{}, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.host, nil
}

// attach returns the live connection, connecting it first when there is none, and the
// notice owner's next call carries about an earlier connection.
func (r *Remote) attach(ctx context.Context, owner string) (*conn, string, error) {
	if c, notice, err := r.current(ctx, owner); c != nil || err != nil {
		return c, notice, err
	}
	select {
	case r.attachSem <- struct{}{}:
	case <-ctx.Done():
		return nil, "", ctx.Err()
	}
	defer func() { <-r.attachSem }()
	if c, notice, err := r.current(ctx, owner); c != nil || err != nil {
		return c, notice, err
	}
	r.mu.Lock()
	closed := r.closed
	r.mu.Unlock()
	if closed {
		return nil, "", r.closedErr()
	}

	actx := ctx
	if r.o.AttachTimeout > 0 {
		var cancel context.CancelFunc
		actx, cancel = context.WithTimeout(ctx, r.o.AttachTimeout)
		defer cancel()
	}
	c, err := r.dial(actx)
	if err != nil {
		r.mu.Lock()
		r.dialing = nil
		if r.closed {
			// Close ended the attach (or came first): nothing to report after it.
			r.mu.Unlock()
			return nil, "", r.closedErr()
		}
		if ctx.Err() == nil && actx.Err() != nil {
			err = fmt.Errorf("no hello from the host within %s (attach_timeout_secs)", r.o.AttachTimeout)
		}
		if ctx.Err() == nil {
			err = &AttachError{Alias: r.spec.Alias, Check: r.CheckCommand(), Note: r.spec.Note, Err: err}
		}
		r.setStatus(StateError, err.Error(), proto.Hello{})
		r.mu.Unlock()
		r.notify()
		return nil, "", err
	}
	r.mu.Lock()
	r.dialing = nil
	if r.closed {
		r.mu.Unlock()
		c.close(errors.New("the controller is closed"), time.Second)
		return nil, "", r.closedErr()
	}
	if err := c.endErr(); err != nil {
		// The host ended right after its hello (a fatal frame, an exit): its end found no
		// attached connection to drop, so the drop is recorded here, not an attached corpse.
		r.setStatus(StateDropped, err.Error(), proto.Hello{})
		r.mu.Unlock()
		r.notify()
		r.log.Warn("host dropped", "err", err)
		return nil, "", &AttachError{Alias: r.spec.Alias, Check: r.CheckCommand(), Note: r.spec.Note, Err: err}
	}
	r.conn = c
	r.setStatus(StateAttached, "", c.host)
	notice := r.takeLost(owner, c.host.Instance)
	if r.o.PingInterval > 0 {
		r.wg.Go(func() { r.watch(c) })
	}
	r.mu.Unlock()
	r.notify()
	r.log.Info("attached", "version", c.host.Version, "os", c.host.OS, "arch", c.host.Arch)
	if c.host.NoDaemon != "" {
		r.log.Warn("the host serves without its daemon: its bash sessions end when the connection drops", "why", c.host.NoDaemon)
	}
	return c, notice, nil
}

// current returns the attached connection and the notice owner's next call carries, or
// no connection when there is none. A connection whose host's output ended sends nothing
// more, though its end is recorded only once its process is reaped (seconds, when a
// background ssh holds its stderr open): current waits for that, so that the drop and its
// notices come before the next attach, and returns no connection.
func (r *Remote) current(ctx context.Context, owner string) (*conn, string, error) {
	r.mu.Lock()
	c := r.conn
	if c == nil {
		r.mu.Unlock()
		return nil, "", nil
	}
	c.mu.Lock()
	ending := c.readEnded
	c.mu.Unlock()
	if !ending {
		defer r.mu.Unlock()
		return c, r.takeLost(owner, c.host.Instance), nil
	}
	r.mu.Unlock()
	select {
	case <-c.done: // ended has run: r.conn is no longer c
		return nil, "", nil
	case <-ctx.Done():
		return nil, "", ctx.Err()
	}
}

// closedErr is the error of an attach that Close ended or came after.
func (r *Remote) closedErr() error {
	return fmt.Errorf("host %s: the controller is closed", r.spec.Alias)
}

// dial starts the ssh process and exchanges hellos. The connection is r.dialing from its
// start, for Close to end; the caller resets it.
func (r *Remote) dial(ctx context.Context) (*conn, error) {
	c, err := startConn(r.Argv(), r.sshEnv(), r.log)
	if err != nil {
		return nil, err
	}
	c.onEnd = r.ended
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		c.abort(r.closedErr())
		c.readLoop() // reaps the process
		return nil, r.closedErr()
	}
	r.dialing = c
	r.wg.Go(c.readLoop)
	r.mu.Unlock()
	// A failed write shows as the host's end below, unless the hello is too long to send.
	hello := r.o.Hello
	hello.WithoutEnv = r.without()
	if err := c.w.Write(proto.Msg{Hello: &hello}); errors.Is(err, proto.ErrLineTooLong) {
		err = fmt.Errorf("this controller's hello is too long to send (too many WithoutEnv names?): %w", err)
		c.abort(err)
		<-c.done
		return nil, err
	}
	select {
	case h := <-c.hello:
		if h.err != nil {
			c.abort(h.err)
			<-c.done
			return nil, h.err
		}
		if err := proto.Check(r.o.Hello, *h.hello); err != nil {
			c.abort(err)
			<-c.done
			return nil, err
		}
		c.mu.Lock()
		c.host = *h.hello
		c.mu.Unlock()
		return c, nil
	case <-ctx.Done():
		c.abort(ctx.Err())
		<-c.done
		return nil, ctx.Err()
	}
}

// ended records that c is gone: the remote drops to StateDropped, and every owner that
// used it gets a notice on its next call.
func (r *Remote) ended(c *conn) {
	r.mu.Lock()
	if r.conn != c {
		r.mu.Unlock()
		return // a failed attach, already reported
	}
	r.conn = nil
	if r.closed {
		r.setStatus(StateLazy, "", proto.Hello{})
		r.mu.Unlock()
		return
	}
	r.setStatus(StateDropped, c.err.Error(), proto.Hello{})
	defer r.notify()
	defer r.mu.Unlock()
	r.log.Warn("host dropped", "err", c.err)
	for owner, h := range r.held {
		if _, ok := r.lost[owner]; ok {
			continue // the earliest drop names the instance that held the resources
		}
		r.lost[owner] = lostNote{instance: h.instance, sessions: slices.Clone(h.sessions), at: time.Now(), err: c.err}
	}
}

// setStatus enters state and queues the change for OnState; r.mu is held.
func (r *Remote) setStatus(state State, why string, hello proto.Hello) {
	n := r.status.Attaches
	if state == StateAttached {
		n++
	}
	r.status = Status{Alias: r.spec.Alias, State: state, Err: termtext.Safe(why), Since: time.Now(), Hello: hello, Attaches: n, Warning: NoDaemonWarning(hello)}
	if r.o.OnState != nil && state != StateLazy {
		r.events = append(r.events, r.status)
	}
}

// NoDaemonWarning says plainly what a host's hello without a daemon means for the user
// (as [Status.Warning] and [CheckResult.Warnings] do), or returns "" for a hello from a
// daemon. Filter h first when it comes straight from a remote; a [Remote]'s is.
func NoDaemonWarning(h proto.Hello) string {
	if h.NoDaemon == "" {
		return ""
	}
	return fmt.Sprintf("no host daemon (%s): bash sessions and calls in flight there end when the ssh connection drops", h.NoDaemon)
}

// notify passes the queued changes to OnState in order; r.mu is not held.
func (r *Remote) notify() {
	if r.o.OnState == nil {
		return
	}
	r.notifyMu.Lock()
	defer r.notifyMu.Unlock()
	for {
		r.mu.Lock()
		evs := r.events
		r.events = nil
		r.mu.Unlock()
		if len(evs) == 0 {
			return
		}
		for _, st := range evs {
			r.o.OnState(st)
		}
	}
}

// watch pings the attached host and treats PingMisses unanswered pings in a row as a drop.
func (r *Remote) watch(c *conn) {
	t := time.NewTicker(r.o.PingInterval)
	defer t.Stop()
	answered := make(chan bool, 1) // at most one ping in flight
	inFlight, misses := false, 0
	for {
		select {
		case <-c.done:
			return
		case <-r.quit:
			return
		case ok := <-answered:
			inFlight = false
			if ok {
				misses = 0
			} else {
				misses++
			}
		case <-t.C:
			c.mu.Lock()
			ending := c.readEnded
			c.mu.Unlock()
			if ending {
				// The host's output ended; its end is recorded once it is reaped. Pings are
				// not sent meanwhile, and missing them is not why it ended.
				return
			}
			if inFlight {
				misses++
			}
			if misses >= r.o.PingMisses {
				c.abort(fmt.Errorf("the host did not answer %d liveness pings in a row (one every %s)", misses, r.o.PingInterval))
				return
			}
			if !inFlight {
				inFlight = true
				r.wg.Go(func() {
					ctx, cancel := context.WithTimeout(context.Background(), time.Duration(r.o.PingMisses+1)*r.o.PingInterval)
					defer cancel()
					m, err := c.request(ctx, proto.Msg{Ping: &struct{}{}})
					answered <- err == nil && m.Pong != nil
				})
			}
		}
	}
}

// Close ends the connection, if any, and an attach in progress, and waits for the
// controller's goroutines; nothing is reported to OnState after it returned. It is a
// clean end: it first releases every owner that holds resources there (bounded by
// QueryTimeout), so the host ends their processes now rather than keeping them for a
// re-attach.
func (r *Remote) Close() {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	r.closed = true
	c, dialing := r.conn, r.dialing
	owners := slices.Collect(maps.Keys(r.held))
	close(r.quit)
	r.mu.Unlock()
	if dialing != nil {
		dialing.abort(errors.New("the controller is closed"))
	}
	if c != nil {
		var wg sync.WaitGroup
		for _, owner := range owners {
			wg.Go(func() {
				ctx, cancel := context.WithTimeout(context.Background(), r.o.QueryTimeout)
				defer cancel()
				if _, err := c.request(ctx, proto.Msg{Release: &proto.Release{Owner: owner}}); err != nil {
					r.log.Warn("release", "owner", owner, "err", err)
				}
			})
		}
		wg.Wait()
		c.close(errors.New("the controller closed the connection"), 3*time.Second)
	}
	r.wg.Wait()
	// Changes queued before closed was set (an attach that had just succeeded) are passed
	// on now, or by the notify under way, before Close returns; none is queued after.
	r.notify()
}

// sshEnv is the environment of the ssh processes: this process's own without the
// variables WithoutEnv names (the model credentials). A process's environment is readable
// in /proc by the user's other processes, the agent's commands among them, even when this
// one's is not.
func (r *Remote) sshEnv() []string {
	env, drop := os.Environ(), r.without()
	if len(drop) == 0 {
		return env
	}
	return slices.DeleteFunc(env, func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		return slices.Contains(drop, name)
	})
}
