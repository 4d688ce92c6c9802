package hosts

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"myco/hosts/proto"
	"myco/hosts/tools"
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
	// MaxImageBase64Bytes is passed to every host (the selected model's image cap); it
	// must be positive.
	MaxImageBase64Bytes int
	// AttachTimeout bounds a connect and hello on first use; 0 disables the bound.
	AttachTimeout time.Duration
	// PingInterval is the liveness ping period of an attached host; 0 sends no pings.
	// PingMisses unanswered pings in a row (default 3) count as a drop.
	PingInterval time.Duration
	PingMisses   int
	// QueryTimeout bounds an inventory or release query; default 2 s.
	QueryTimeout time.Duration
	// Hello is this side's hello (binary version, OS…); Protocol is filled in.
	Hello proto.Hello
	// OnState, when set, is called with a remote's new status each time it attaches,
	// drops or fails to attach, in the order the changes happen. It must not block for
	// long; it is never called with the controller's lock held.
	OnState func(Status)
	Log     *slog.Logger
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
}

// Remote is the controller of one remote host: it attaches lazily on first call with ssh,
// multiplexes concurrent calls by id over the one connection, and re-attaches after a
// drop. It is safe for concurrent use; the caller must Close it.
type Remote struct {
	spec      RemoteSpec
	o         RemoteOptions
	log       *slog.Logger
	attachSem chan struct{} // one attach at a time
	quit      chan struct{} // closed by Close
	wg        sync.WaitGroup

	mu     sync.Mutex // guards the fields below
	conn   *conn
	status Status
	held   map[string]*holding  // owner -> what it holds on the host
	lost   map[string]lostNote  // owner -> a drop to tell its next call about
	inv    map[string]Inventory // owner -> last-known inventory
	closed bool
	events []Status // changes not yet passed to OnState, oldest first

	notifyMu sync.Mutex // serializes OnState calls; taken before mu, never while holding it
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
		log = slog.New(slog.DiscardHandler)
	}
	return &Remote{
		spec: spec, o: o, log: log.With("host", spec.Alias),
		attachSem: make(chan struct{}, 1), quit: make(chan struct{}),
		status: Status{Alias: spec.Alias, State: StateLazy},
		held:   map[string]*holding{}, lost: map[string]lostNote{}, inv: map[string]Inventory{},
	}
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

// CheckCommand returns the non-interactive check a user runs to see what the host runs:
//
//	ssh -o BatchMode=yes ALIAS 'command -v myco; myco --version'
func (r *Remote) CheckCommand() string {
	prog := strings.Join(r.command(), " ")
	return strings.Join(append([]string{"ssh"}, r.sshArgs()...), " ") +
		fmt.Sprintf(" 'command -v %s; %s --version'", r.command()[0], prog)
}

// CheckArgv is [Remote.CheckCommand] as a word list for exec.
func (r *Remote) CheckArgv() []string {
	prog := strings.Join(r.command(), " ")
	return append(append([]string{r.o.SSH}, r.sshArgs()...),
		fmt.Sprintf("command -v %s; %s --version", r.command()[0], prog))
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
	if c, notice, ok := r.current(owner); ok {
		return c, notice, nil
	}
	select {
	case r.attachSem <- struct{}{}:
	case <-ctx.Done():
		return nil, "", ctx.Err()
	}
	defer func() { <-r.attachSem }()
	if c, notice, ok := r.current(owner); ok {
		return c, notice, nil
	}
	r.mu.Lock()
	closed := r.closed
	r.mu.Unlock()
	if closed {
		return nil, "", fmt.Errorf("host %s: the controller is closed", r.spec.Alias)
	}

	actx := ctx
	if r.o.AttachTimeout > 0 {
		var cancel context.CancelFunc
		actx, cancel = context.WithTimeout(ctx, r.o.AttachTimeout)
		defer cancel()
	}
	c, err := r.dial(actx)
	if err != nil {
		if ctx.Err() == nil && actx.Err() != nil {
			err = fmt.Errorf("no hello from the host within %s (attach_timeout_secs)", r.o.AttachTimeout)
		}
		if ctx.Err() == nil {
			err = &AttachError{Alias: r.spec.Alias, Check: r.CheckCommand(), Note: r.spec.Note, Err: err}
		}
		r.mu.Lock()
		r.setStatus(StateError, err.Error(), proto.Hello{})
		r.mu.Unlock()
		r.notify()
		return nil, "", err
	}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		c.close(errors.New("the controller is closed"), time.Second)
		return nil, "", fmt.Errorf("host %s: the controller is closed", r.spec.Alias)
	}
	r.conn = c
	r.setStatus(StateAttached, "", c.host)
	notice := r.takeLost(owner, c.host.Instance)
	r.mu.Unlock()
	r.notify()
	if r.o.PingInterval > 0 {
		r.wg.Go(func() { r.watch(c) })
	}
	r.log.Info("attached", "version", c.host.Version, "os", c.host.OS, "arch", c.host.Arch)
	return c, notice, nil
}

func (r *Remote) current(owner string) (*conn, string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.conn == nil {
		return nil, "", false
	}
	return r.conn, r.takeLost(owner, r.conn.host.Instance), true
}

// holding is what one owner holds on the host: its bash sessions, on the host daemon
// instance that keeps them.
type holding struct {
	instance string
	sessions []string
}

// lostNote is a drop an owner's next call hears about.
type lostNote struct {
	instance string   // the daemon instance that held the owner's resources
	sessions []string // the bash sessions the owner started there
	at       time.Time
	err      error
}

// takeLost returns and forgets the notice owner's next call carries about a drop, now
// that the host daemon instance answers; r.mu is held. On the same instance the owner's
// resources were kept; on another they are gone.
func (r *Remote) takeLost(owner, instance string) string {
	n, ok := r.lost[owner]
	if !ok {
		return ""
	}
	delete(r.lost, owner)
	if n.instance != "" && n.instance == instance {
		return fmt.Sprintf("[myco: the connection to host %s dropped at %s (%v) and was re-established to the same host daemon, which kept this runtime's bash sessions and editor read stamps; output produced meanwhile is returned by action=read.]\n",
			r.spec.Alias, n.at.Format(time.TimeOnly), n.err)
	}
	delete(r.held, owner)
	what := "its editor read stamps are gone (view files again before editing them)"
	if len(n.sessions) > 0 {
		what = fmt.Sprintf("bash sessions %s started there are gone, and so are its editor read stamps", strings.Join(n.sessions, ", "))
	}
	return fmt.Sprintf("[myco: the earlier connection to host %s ended at %s (%v); %s. This call re-attached to a new host process.]\n",
		r.spec.Alias, n.at.Format(time.TimeOnly), n.err, what)
}

// noteCall records that owner holds resources on the host that answered with hello, and
// a bash session it started.
func (r *Remote) noteCall(instance, owner, tool, action string, res tools.Result) {
	r.mu.Lock()
	defer r.mu.Unlock()
	h := r.held[owner]
	if h == nil || h.instance != instance {
		h = &holding{instance: instance}
		r.held[owner] = h
	}
	if tool == "bash" && action == "start" && !res.IsError {
		if id, ok := strings.CutPrefix(res.Text, "session_id: "); ok {
			id, _, _ = strings.Cut(id, "\n")
			h.sessions = append(h.sessions, id)
		}
	}
}

// dial starts the ssh process and exchanges hellos.
func (r *Remote) dial(ctx context.Context) (*conn, error) {
	c, err := startConn(r.Argv(), r.log)
	if err != nil {
		return nil, err
	}
	c.onEnd = r.ended
	r.wg.Go(c.readLoop)
	// A failed write shows as the host's end below.
	_ = c.w.Write(proto.Msg{Hello: &r.o.Hello})
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
	r.status = Status{Alias: r.spec.Alias, State: state, Err: why, Since: time.Now(), Hello: hello, Attaches: n}
	if r.o.OnState != nil && state != StateLazy {
		r.events = append(r.events, r.status)
	}
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

// Call runs tool on the host for owner, attaching first when needed. Failures to attach
// and host-side errors come back as error results that say what happened. A call in
// flight when the connection drops re-attaches at once: when the same host daemon answers,
// the call's result is fetched from it by key; otherwise its outcome is unknown.
func (r *Remote) Call(ctx context.Context, owner, tool string, input json.RawMessage) tools.Result {
	c, notice, err := r.attach(ctx, owner)
	if err != nil {
		if ctx.Err() != nil {
			return tools.Errorf("host %s: cancelled while attaching: %v", r.spec.Alias, context.Cause(ctx))
		}
		return tools.Errorf("%v", err)
	}
	key := newCallKey()
	m, err := c.request(ctx, proto.Msg{Call: &proto.Call{Owner: owner, Tool: tool, Input: input, Key: key}})
	if errors.Is(err, errNotSent) {
		// The connection ended before the call went out, so it never ran: send it once
		// more on a fresh connection.
		var more string
		if c, more, err = r.attach(ctx, owner); err != nil {
			return tools.Errorf("host %s: the connection ended before this call was sent (it did not run), and attaching again failed: %v", r.spec.Alias, err)
		}
		notice += more
		m, err = c.request(ctx, proto.Msg{Call: &proto.Call{Owner: owner, Tool: tool, Input: input, Key: key}})
	}
	var res tools.Result
	switch {
	case errors.Is(err, errNotSent):
		res = tools.Errorf("host %s: the connection ended twice before this call was sent; it did not run", r.spec.Alias)
	case errors.Is(err, errConnEnded):
		res = r.recoverCall(ctx, c, owner, tool, input, key)
	case err != nil && ctx.Err() != nil:
		res = tools.Errorf("host %s: cancelled; the call may still be running there (calls over the host pipe cannot be cancelled mid-flight)", r.spec.Alias)
	case err != nil:
		res = tools.Errorf("host %s: %v", r.spec.Alias, err)
	default:
		res = r.answer(c, owner, tool, input, m)
	}
	if notice != "" {
		res.Text = notice + res.Text
	}
	return res
}

// answer turns the host's response to a call into the call's result.
func (r *Remote) answer(c *conn, owner, tool string, input json.RawMessage, m proto.Msg) tools.Result {
	switch {
	case m.Err != nil:
		return tools.Errorf("host %s: %s", r.spec.Alias, m.Err.Message)
	case m.Result == nil:
		return tools.Errorf("host %s: the host answered the call with a frame that is not a result", r.spec.Alias)
	}
	res := *m.Result
	res.Unknown = false // only this side decides that
	r.noteCall(c.hostHello().Instance, owner, tool, action(input), res)
	if res.IsError {
		res.Text = "host " + r.spec.Alias + ": " + res.Text // the per-host tool error, say where
	}
	return res
}

// recoverCall learns the outcome of a call whose connection c ended while it was in
// flight: it re-attaches and, when the same host daemon answers, fetches the result by
// key. Anything else is an unknown outcome.
func (r *Remote) recoverCall(ctx context.Context, c *conn, owner, tool string, input json.RawMessage, key string) tools.Result {
	dropped := c.endErr()
	instance := c.hostHello().Instance
	unknown := func(why string) tools.Result {
		return tools.Result{Unknown: true, Text: fmt.Sprintf(
			"host %s: the connection ended while this call was in flight (%v)%s. The call's outcome is unknown: it may have run. Inspect its effects on %s before repeating it.",
			r.spec.Alias, dropped, why, r.spec.Alias)}
	}
	if instance == "" {
		return unknown(", and the host kept nothing across it")
	}
	nc, notice, err := r.attach(ctx, owner)
	if err != nil {
		return unknown(fmt.Sprintf(", and attaching again to ask for its result failed: %v", err))
	}
	var res tools.Result
	if now := nc.hostHello().Instance; now != instance {
		res = unknown(fmt.Sprintf(", and the host daemon that ran it is gone: another instance (%s, was %s) answered the re-attach", now, instance))
	} else {
		m, err := nc.request(ctx, proto.Msg{Fetch: &proto.Fetch{Owner: owner, Key: key}})
		switch {
		case err != nil:
			res = unknown(fmt.Sprintf("; asking the host daemon for its result failed too: %v", err))
		case m.Err != nil:
			res = unknown(fmt.Sprintf("; the host daemon no longer holds its result: %s", m.Err.Message))
		default:
			res = r.answer(nc, owner, tool, input, m)
			res.Text = fmt.Sprintf("[myco: the connection to host %s dropped while this call ran (%v); myco re-attached to the same host daemon, which kept the call running. This is its result.]\n", r.spec.Alias, dropped) + res.Text
			notice = "" // said already
		}
	}
	if notice != "" {
		res.Text = notice + res.Text
	}
	return res
}

// newCallKey returns a key that names one call among its owner's.
func newCallKey() string {
	var b [12]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// action returns a bash input's action field.
func action(input json.RawMessage) string {
	var in struct {
		Action string `json:"action"`
	}
	_ = json.Unmarshal(input, &in)
	return in.Action
}

// Inventory is one host's tool resources of one owner.
type Inventory struct {
	Host string
	// Resources is keyed by tool name, as the host reports it; nil when never observed.
	Resources json.RawMessage
	Observed  time.Time // when Resources was observed; zero when never
	// LastKnown marks Resources as earlier data: the host is not attached or the query
	// failed (Err says why). It does not claim the host is empty.
	LastKnown bool
	Err       string
}

// Inventory asks an attached host for owner's resources, waiting at most QueryTimeout.
// It never connects a lazy remote: a host that is not attached answers with the
// last-known data, marked as such.
func (r *Remote) Inventory(ctx context.Context, owner string) Inventory {
	r.mu.Lock()
	c := r.conn
	last := r.inv[owner]
	state := r.status.State
	r.mu.Unlock()
	last.Host = r.spec.Alias
	if c == nil {
		last.LastKnown = true
		last.Err = fmt.Sprintf("host %s is %s; inventory does not connect it", r.spec.Alias, state)
		return last
	}
	ctx, cancel := context.WithTimeout(ctx, r.o.QueryTimeout)
	defer cancel()
	m, err := c.request(ctx, proto.Msg{Inventory: &proto.InventoryQuery{Owner: owner}})
	switch {
	case errors.Is(err, errConnEnded):
		err = c.endErr()
	case err == nil && m.Err != nil:
		err = errors.New(m.Err.Message)
	case err == nil && m.Resources == nil:
		err = errors.New("the host answered with a frame that is not resources")
	}
	if err != nil {
		last.LastKnown = true
		last.Err = fmt.Sprintf("inventory query to host %s: %v", r.spec.Alias, err)
		return last
	}
	inv := Inventory{Host: r.spec.Alias, Resources: slices.Clone(*m.Resources), Observed: time.Now()}
	r.mu.Lock()
	r.inv[owner] = inv
	r.mu.Unlock()
	return inv
}

// Release ends every resource owner holds on the host, waiting at most QueryTimeout, and
// forgets what the controller kept for owner. It asks an attached host; when the
// connection dropped while owner held resources there, it attaches again (bounded by
// AttachTimeout) so the host daemon ends them now rather than after its grace period. It
// never connects a remote owner has not used.
func (r *Remote) Release(ctx context.Context, owner string) {
	r.mu.Lock()
	c := r.conn
	_, dropped := r.lost[owner]
	delete(r.held, owner)
	delete(r.inv, owner)
	r.mu.Unlock()
	if c == nil && dropped {
		var err error
		if c, _, err = r.attach(ctx, owner); err != nil {
			r.log.Warn("release after a drop", "owner", owner, "err", err)
			return
		}
	}
	r.mu.Lock()
	delete(r.lost, owner)
	r.mu.Unlock()
	if c == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, r.o.QueryTimeout)
	defer cancel()
	if _, err := c.request(ctx, proto.Msg{Release: &proto.Release{Owner: owner}}); err != nil {
		r.log.Warn("release", "owner", owner, "err", err)
	}
}

// Close ends the connection, if any, and waits for the controller's goroutines. It is a
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
	c := r.conn
	owners := slices.Collect(maps.Keys(r.held))
	close(r.quit)
	r.mu.Unlock()
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
}
