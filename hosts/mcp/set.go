package mcp

import (
	"cmp"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"myco.dev/hosts/tools"
)

// Options configures a [Set]. Zero fields take the defaults shown.
type Options struct {
	Servers []Server
	// LookupEnv is where a stdio server's PATH, HOME and LANG come from; nil means the
	// host process's environment.
	LookupEnv func(string) (string, bool)
	// Reaper, when not nil, is told each stdio server's process group, so that the groups
	// die with the host process however it ends (see myco.dev/internal/reaper).
	Reaper tools.Reaper
	// MaxResultBytes caps the text of one result (default 256 KiB, the editor's view cap);
	// MaxImageBase64Bytes caps each image, measured on its base64 (default 5 MiB; the
	// current model's cap applies too, see [tools.WithImageLimit]).
	MaxResultBytes      int
	MaxImageBase64Bytes int
	// InitialBackoff is the wait before a server that failed is started again (default
	// 1 s); it doubles with each failure in a row, up to MaxBackoff (default 1 min).
	InitialBackoff time.Duration
	MaxBackoff     time.Duration
	// Version is the client version myco announces to servers; default "dev".
	Version string
	// Now tells the time of backoffs; nil means time.Now. Tests set it.
	Now func() time.Time
	Log *slog.Logger
}

// Set is the MCP servers of one host and the tools they offer. See the package
// documentation for the lifetimes of its servers. It is safe for concurrent use; the
// caller must Close it.
type Set struct {
	o       Options
	log     *slog.Logger
	client  *mcp.Client
	servers []*server // in name order
	wg      sync.WaitGroup

	mu     sync.Mutex // guards the fields below, and those of server, slot and instance that say so
	tools  []*Tool    // of every listed server, in name order
	slots  map[slotKey]*slot
	closed bool
}

// server is one configured server and what discovery learnt of it.
type server struct {
	cfg Server

	// guarded by Set.mu:
	listed      bool
	tools       []*Tool
	spare       *instance     // the instance that listed the tools, until an owner takes it
	discovering chan struct{} // closed when the discovery in flight ends; nil when none
	failures    int           // discoveries failed in a row
	retryAt     time.Time     // the next discovery waits until then
	err         string        // why the last discovery failed
}

// slot is an owner's instance of one server, and its backoff. Guarded by Set.mu.
type slot struct {
	inst     *instance     // nil before the first start; may have ended
	starting chan struct{} // closed when the start in flight ends; nil when none
	failures int           // starts and ends that failed in a row
	retryAt  time.Time     // no start before then
	why      string        // why the last instance ended or the last start failed
}

type slotKey struct{ owner, server string }

// New returns the set of servers o configures; it starts none ([Set.Discover] does).
// A server that is configured wrongly (no command or url, both, a bad name, plain http to
// a host that is not loopback) is an error, and so is a name used twice.
func New(o Options) (*Set, error) {
	if o.LookupEnv == nil {
		o.LookupEnv = os.LookupEnv
	}
	if o.MaxResultBytes <= 0 {
		o.MaxResultBytes = 256 << 10
	}
	if o.MaxImageBase64Bytes <= 0 {
		o.MaxImageBase64Bytes = 5 << 20
	}
	if o.InitialBackoff <= 0 {
		o.InitialBackoff = time.Second
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = time.Minute
	}
	if o.Version == "" {
		o.Version = "dev"
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	s := &Set{o: o, log: o.Log, slots: map[slotKey]*slot{}}
	for _, cfg := range o.Servers {
		cfg, err := cfg.check()
		if err != nil {
			return nil, err
		}
		if slices.ContainsFunc(s.servers, func(x *server) bool { return x.cfg.Name == cfg.Name }) {
			return nil, fmt.Errorf("mcp: server %q configured twice", cfg.Name)
		}
		s.servers = append(s.servers, &server{cfg: cfg})
	}
	slices.SortFunc(s.servers, func(a, b *server) int { return cmp.Compare(a.cfg.Name, b.cfg.Name) })
	s.client = mcp.NewClient(&mcp.Implementation{Name: "myco", Version: o.Version}, &mcp.ClientOptions{
		// No roots, sampling or elicitation: a server learns nothing of the machine from
		// the client, and cannot ask it for model calls or for the user.
		Capabilities: &mcp.ClientCapabilities{},
		Logger:       o.Log,
	})
	return s, nil
}

// Tools returns the tools of every listed server, in name order. The list only grows,
// when a Discover lists a server that had failed; for a given set of working servers it
// is the same, in the same order, with the same specs.
func (s *Set) Tools() []*Tool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.tools)
}

// Status is the state of one server, for the runtime notes and `myco mcp list`.
type Status struct {
	Server    string
	Transport string     // "stdio" or "http"
	Listed    bool       // its tools are known
	Tools     []ToolName // its tools, in order
	Err       string     // why the last discovery failed; "" once listed
	RetryAt   time.Time  // when a Discover tries again, after a failure
	Running   int        // instances running, across owners (the spare included)
}

// ToolName is a tool's exposed name and the name its server knows it by: they differ
// when Mapped (see [ExposedName]).
type ToolName struct {
	Name   string `json:"name"`
	Remote string `json:"remote"`
	Mapped bool   `json:"mapped,omitempty"`
}

// Statuses returns the state of every server, in name order.
func (s *Set) Statuses() []Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Status, 0, len(s.servers))
	for _, srv := range s.servers {
		st := Status{Server: srv.cfg.Name, Transport: srv.cfg.Transport(), Listed: srv.listed, Err: srv.err, RetryAt: srv.retryAt}
		for _, t := range srv.tools {
			st.Tools = append(st.Tools, ToolName{Name: t.name, Remote: t.remote, Mapped: t.mapped})
		}
		if srv.spare != nil {
			st.Running++
		}
		for k, sl := range s.slots {
			if k.server == srv.cfg.Name && sl.inst != nil && sl.inst.why == "" {
				st.Running++
			}
		}
		out = append(out, st)
	}
	return out
}

// Release ends every server instance owner started. It returns at once: the servers are
// ended in the background (stdin closed, then SIGTERM and SIGKILL to a process group that
// does not exit), and [Set.Close] waits for them.
func (s *Set) Release(owner string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, sl := range s.slots {
		if k.owner != owner {
			continue
		}
		delete(s.slots, k)
		if sl.inst != nil && sl.inst.why == "" {
			s.wg.Go(sl.inst.close) // under mu with closed false: Close is not waiting yet
		}
	}
}

// Close ends every server instance and waits for them and for every goroutine of the
// Set. Calls after Close answer an error.
func (s *Set) Close() {
	s.mu.Lock()
	var insts []*instance
	if !s.closed {
		s.closed = true
		for k, sl := range s.slots {
			delete(s.slots, k)
			if sl.inst != nil {
				insts = append(insts, sl.inst)
			}
		}
		for _, srv := range s.servers {
			if srv.spare != nil {
				insts = append(insts, srv.spare)
				srv.spare = nil
			}
		}
	}
	s.mu.Unlock()
	var wg sync.WaitGroup
	for _, inst := range insts {
		wg.Go(inst.close)
	}
	wg.Wait()
	s.wg.Wait()
}
