package hostd

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"myco.dev/hosts/proto"
	"myco.dev/hosts/sandbox"
	"myco.dev/hosts/tools"
	"myco.dev/internal/peercred"
)

// Options configures a [Daemon].
type Options struct {
	// Tools are the tool services every connection shares (bash, the editor). Their
	// resources are keyed by owner and outlive a connection.
	Tools []tools.Tool
	// ConnTools returns the tools that depend on a connection's settings: view_image with
	// the controller's image cap. Nil means none.
	ConnTools func(maxImageBase64Bytes int) []tools.Tool
	// Hello is what the daemon says about itself (binary version, OS, shell, directory);
	// the protocol, instance, pid and grace are filled in.
	Hello proto.Hello
	// Grace is how long an owner's resources are kept after the last connection that used
	// it ended without a release (default 30 min); then they are released.
	Grace time.Duration
	// ResultTTL is how long the result of a call answered on a live connection stays
	// fetchable by key (default 1 min), for a drop the daemon noticed late. The result of
	// a call whose connection had ended is kept until fetched or the owner is released.
	ResultTTL time.Duration
	// IdleExit ends [Daemon.Run] after this long with no connection and no owner
	// (default 10 s).
	IdleExit time.Duration
	// MaxConns bounds the connections [Daemon.Run] serves at once (default 32); it
	// refuses more, saying so in a fatal error frame. Each holds up to
	// [proto.MaxRequestLine] of a frame, several times over while it decodes it.
	MaxConns int
	// CloseTimeout bounds how long [Daemon.Close] waits for calls in flight after it
	// ended the tools' processes (default 5 s): a call that ignores its ctx does not keep
	// the daemon from exiting.
	CloseTimeout time.Duration
	// MCP configures the MCP servers controllers run here ([proto.MCPServer]).
	MCP MCPOptions
	// Snapshots is the directory of the host's snapshot store, opened on the first
	// snapshot frame; "" means the host keeps none (such frames are refused).
	Snapshots string
	// Fence runs the processes of the calls that ask ([proto.Call.Sandbox]) in the
	// sandbox; nil means none (such calls are refused). Hidden are the paths a fenced
	// command may not read (the daemon's directory, myco's home here); TmpRoot is where
	// each owner's private temporary directory is made ("" means the system's).
	Fence   *sandbox.Fence
	Hidden  []string
	TmpRoot string
	Log     *slog.Logger // nil means slog.Default()
}

// Daemon is the per-user host daemon: it owns the tool services and every owner's
// resources (bash sessions and their output, editor read stamps, calls in flight), and
// serves any number of connections, each from one `myco --mode host` proxy. A connection
// that ends without a release leaves its owners' resources in place for Grace, so a
// controller that re-attaches finds them. It is safe for concurrent use; the caller must
// Close it.
type Daemon struct {
	o        Options
	hello    proto.Hello
	log      *slog.Logger
	byName   map[string]tools.Tool
	ctx      context.Context // the daemon's life: calls run under it, not under a connection
	cancel   context.CancelFunc
	calls    sync.WaitGroup // calls in flight
	inFlight atomic.Int64   // how many
	mcp      *mcpHost       // the MCP servers, one set per configuration
	snaps    *snapshots     // the snapshot store

	mu        sync.Mutex // guards the fields below
	owners    map[string]*owner
	conns     int
	connTools map[int][]tools.Tool // by image cap
	idle      time.Time            // when the daemon last became idle; zero while busy
	exiting   bool                 // Run decided to exit idle: connections are no longer served
	closed    bool
}

// owner is what the daemon keeps for one resource owner, besides the tools' own state.
type owner struct {
	conns   map[*connState]bool // live connections that used it
	dropped time.Time           // when the last of them ended without a release
	calls   map[string]*keyedCall
}

// keyedCall is a call made with a key: its result stays fetchable after a drop.
type keyedCall struct {
	done    chan struct{} // closed when res is set
	res     tools.Result
	expires time.Time // zero: kept until fetched or the owner is released
}

// connState is one connection's share of the daemon's state; guarded by Daemon.mu.
type connState struct {
	ended  bool
	owners map[string]bool
}

// NewDaemon returns a daemon over the shared tools.
func NewDaemon(o Options) *Daemon {
	if o.Grace <= 0 {
		o.Grace = 30 * time.Minute
	}
	if o.ResultTTL <= 0 {
		o.ResultTTL = time.Minute
	}
	if o.IdleExit <= 0 {
		o.IdleExit = 10 * time.Second
	}
	if o.MaxConns <= 0 {
		o.MaxConns = 32
	}
	if o.CloseTimeout <= 0 {
		o.CloseTimeout = 5 * time.Second
	}
	log := o.Log
	if log == nil {
		log = slog.Default()
	}
	var id [8]byte
	rand.Read(id[:])
	hello := o.Hello
	hello.Protocol = proto.Version
	hello.Instance = hex.EncodeToString(id[:])
	hello.PID = os.Getpid()
	hello.GraceSecs = int(o.Grace / time.Second)
	if o.Fence != nil {
		s := o.Fence.Support()
		hello.Sandbox = s.String()
		hello.Fences = s.Landlock
	} else {
		hello.Sandbox = "no sandbox: this host daemon has none"
	}
	d := &Daemon{o: o, hello: hello, log: log, byName: map[string]tools.Tool{},
		owners: map[string]*owner{}, connTools: map[int][]tools.Tool{}, idle: time.Now(), mcp: newMCPHost(o.MCP, log),
		snaps: &snapshots{dir: o.Snapshots, log: log}}
	d.ctx, d.cancel = context.WithCancel(context.Background())
	for _, t := range o.Tools {
		d.byName[t.Name()] = t
	}
	return d
}

// Instance returns the daemon's instance id, as its hello says it.
func (d *Daemon) Instance() string { return d.hello.Instance }

// toolsFor returns the tools of a connection with the given image cap, shared first.
func (d *Daemon) toolsFor(maxImage int) []tools.Tool {
	d.mu.Lock()
	defer d.mu.Unlock()
	ts, ok := d.connTools[maxImage]
	if !ok && d.o.ConnTools != nil {
		ts = d.o.ConnTools(maxImage)
		d.connTools[maxImage] = ts
	}
	return append(append([]tools.Tool(nil), d.o.Tools...), ts...)
}

// hold records that cs uses owner name, and returns the owner.
func (d *Daemon) hold(cs *connState, name string) *owner {
	d.mu.Lock()
	defer d.mu.Unlock()
	o := d.owners[name]
	if o == nil {
		o = &owner{conns: map[*connState]bool{}, calls: map[string]*keyedCall{}}
		d.owners[name] = o
	}
	switch {
	case !cs.ended:
		o.conns[cs] = true
		o.dropped = time.Time{}
		cs.owners[name] = true
	case len(o.conns) == 0 && o.dropped.IsZero():
		o.dropped = time.Now() // held by no connection: the grace period runs
	}
	d.idle = time.Time{}
	return o
}

// connEnded lets go of cs: owners no live connection uses start their grace period.
func (d *Daemon) connEnded(cs *connState) {
	d.mu.Lock()
	defer d.mu.Unlock()
	cs.ended = true
	d.conns--
	now := time.Now()
	for name := range cs.owners {
		o := d.owners[name]
		if o == nil {
			continue
		}
		delete(o.conns, cs)
		if len(o.conns) == 0 {
			o.dropped = now
			d.log.Info("owner dropped", "owner", name, "grace", d.o.Grace)
		}
	}
}

// release ends everything owner name holds in every tool and forgets it.
func (d *Daemon) release(name string) {
	d.mu.Lock()
	o := d.owners[name]
	delete(d.owners, name)
	if o != nil {
		for cs := range o.conns {
			delete(cs.owners, name)
		}
	}
	d.mu.Unlock()
	tools.Release(d.o.Tools, name)
	d.mcp.release(name)
}

// housekeep drops expired results, releases owners whose grace has passed, and reports
// whether the daemon has been idle for IdleExit.
func (d *Daemon) housekeep(now time.Time) (idleExit bool) {
	var reap []string
	d.mu.Lock()
	for name, o := range d.owners {
		for key, c := range o.calls {
			if !c.expires.IsZero() && now.After(c.expires) {
				delete(o.calls, key)
			}
		}
		if d.expired(o, now) {
			reap = append(reap, name)
		}
	}
	busy := d.conns > 0 || len(d.owners) > len(reap)
	switch {
	case busy:
		d.idle = time.Time{}
	case d.idle.IsZero():
		d.idle = now
	}
	idleExit = !d.idle.IsZero() && now.Sub(d.idle) >= d.o.IdleExit
	d.mu.Unlock()
	for _, name := range reap {
		d.log.Info("grace period over; releasing", "owner", name)
		d.reap(name, now)
	}
	return idleExit
}

// exitIdle is housekeep that, when the daemon has been idle for IdleExit, marks it as
// exiting in the same hold of d.mu in which it finds it still idle: a connection counted
// before that keeps the daemon running, one counted after it is closed before its hello.
func (d *Daemon) exitIdle(now time.Time) bool {
	if !d.housekeep(now) {
		return false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.idle.IsZero() {
		return false // a connection or a call since housekeep looked
	}
	d.exiting = true
	return true
}

// expired reports whether o's grace period is over at now; d.mu is held.
func (d *Daemon) expired(o *owner, now time.Time) bool {
	return len(o.conns) == 0 && !o.dropped.IsZero() && now.Sub(o.dropped) >= d.o.Grace
}

// reap releases owner name when its grace period is over at now. housekeep chose it
// under an earlier hold of d.mu: a controller that re-attached since, right at the end of
// the grace period, holds it again, and its sessions live on.
func (d *Daemon) reap(name string, now time.Time) {
	d.mu.Lock()
	o := d.owners[name]
	if o == nil || !d.expired(o, now) {
		d.mu.Unlock()
		d.log.Info("owner taken up again at the end of its grace period; kept", "owner", name)
		return
	}
	delete(d.owners, name) // no connection holds it
	d.mu.Unlock()
	tools.Release(d.o.Tools, name)
	d.mcp.release(name)
}

// Run accepts connections on l, a Unix socket listener, until ctx ends or the daemon has
// been idle for IdleExit, then closes l and waits for the connections. Each connection
// starts with a [proto.Proxy] frame. A connection from a process of another user (its
// peer credentials, where the system tells them) is closed unanswered; one over MaxConns
// is refused with a fatal error frame.
//
// Before it closes l it calls lock, when set, and unlock after: the proxies' start lock,
// so a proxy never starts a new daemon while this one is going away. A connection accepted
// as it decides to go is closed before its hello, so its proxy connects again.
func (d *Daemon) Run(ctx context.Context, l net.Listener, lock func() (unlock func())) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var conns sync.WaitGroup
	slots := make(chan struct{}, d.o.MaxConns)
	accepted := make(chan error, 1)
	conns.Go(func() {
		var warnedCred bool
		for {
			c, err := l.Accept()
			if errors.Is(err, net.ErrClosed) {
				accepted <- err
				return
			}
			if err != nil {
				// Out of descriptors, say: everything the daemon holds is worth a retry.
				d.log.Warn("accept", "err", err)
				select {
				case <-ctx.Done():
					accepted <- err
					return
				case <-time.After(100 * time.Millisecond):
				}
				continue
			}
			if err := checkPeer(c); errors.Is(err, peercred.ErrUnavailable) {
				if !warnedCred {
					warnedCred = true
					d.log.Warn("this system does not tell a socket's peer; the daemon relies on its directory's permissions", "err", err)
				}
			} else if err != nil {
				d.log.Warn("refused a connection", "err", err)
				c.Close()
				continue
			}
			select {
			case slots <- struct{}{}:
			default:
				conns.Go(func() { d.refuse(c) })
				continue
			}
			conns.Go(func() {
				defer func() { <-slots }()
				defer c.Close()
				// The reader blocks on c; closing c when ctx ends lets it go.
				stop := context.AfterFunc(ctx, func() { c.Close() })
				defer stop()
				if err := d.Serve(ctx, c, c, nil); err != nil {
					d.log.Warn("connection", "err", err)
				}
			})
		}
	})
	tick := time.NewTicker(min(max(min(d.o.Grace, d.o.ResultTTL, d.o.IdleExit)/4, 10*time.Millisecond), time.Second))
	defer tick.Stop()
	var err error
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case err = <-accepted:
			break loop
		case now := <-tick.C:
			if !d.housekeep(now) {
				continue
			}
			unlock := func() {}
			if lock != nil {
				unlock = lock()
			}
			if d.exitIdle(time.Now()) { // still idle under the lock
				l.Close()
				unlock()
				d.log.Info("idle; exiting")
				break loop
			}
			unlock()
		}
	}
	l.Close()
	cancel()
	conns.Wait()
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}

// refuse answers a connection over MaxConns with a fatal error frame, after it read the
// proxy's first frame (so that the proxy's write of it does not fail first, which would
// make it think the daemon is going away), bounded by a second.
func (d *Daemon) refuse(c net.Conn) {
	defer c.Close()
	msg := fmt.Sprintf("the host daemon (pid %d) already serves %d connections, its limit, so it refused this one; end some of the myco processes attached to this host, then attach again", os.Getpid(), d.o.MaxConns)
	d.log.Warn("refused a connection over the limit", "max_conns", d.o.MaxConns)
	c.SetDeadline(time.Now().Add(time.Second))
	proto.NewWriter(c).Write(proto.Msg{Err: &proto.Error{Message: msg, Fatal: true}})
	proto.NewReaderSize(c, 4<<10).Read(context.Background())
}

// Close ends every call in flight and every process the tools and MCP servers started,
// and waits for the calls, at most CloseTimeout: a call that ignores its ctx is left behind (the process is
// about to exit). Calls after Close fail.
func (d *Daemon) Close() {
	d.mu.Lock()
	d.closed = true
	var ts []tools.Tool
	for _, c := range d.connTools {
		ts = append(ts, c...)
	}
	d.mu.Unlock()
	d.cancel()
	done := make(chan struct{})
	// Owned by Close until the deadline; after it, by the process's exit.
	go func() {
		defer close(done)
		for _, t := range append(ts, d.o.Tools...) {
			if c, ok := t.(interface{ Close() }); ok {
				c.Close()
			}
		}
		d.mcp.close()
		d.calls.Wait()
		d.snaps.close()
	}()
	select {
	case <-done:
	case <-time.After(d.o.CloseTimeout):
		d.log.Warn("calls still running at the close deadline; not waiting for them", "calls", d.inFlight.Load(), "timeout", d.o.CloseTimeout)
	}
}
