package hostd

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"myco.dev/agent/model"
	"myco.dev/hosts/mcp"
	"myco.dev/hosts/proto"
	"myco.dev/hosts/tools"
)

// MCPOptions configure the MCP servers that controllers run on this host
// ([proto.MCPServer]).
type MCPOptions struct {
	// Env is the host's environment: a server gets its PATH, HOME and LANG, and HOME is
	// where a command or directory that starts with ~/ is.
	Env []string
	// Reaper, when not nil, is told each server's process group (see [mcp.Options]).
	Reaper tools.Reaper
	// Version is the client version announced to servers.
	Version string
}

// maxMCPSets bounds the distinct server configurations a daemon keeps.
const maxMCPSets = 64

// mcpHost holds the MCP servers of one daemon: one [mcp.Set] per distinct configuration,
// made when a controller first lists or calls it, shared by every connection that sends
// the same one, and closed with the daemon. It is safe for concurrent use.
type mcpHost struct {
	o   MCPOptions
	log *slog.Logger

	mu     sync.Mutex // guards the fields below
	sets   map[string]*mcp.Set
	closed bool
}

func newMCPHost(o MCPOptions, log *slog.Logger) *mcpHost {
	return &mcpHost{o: o, log: log, sets: map[string]*mcp.Set{}}
}

// lookupEnv looks a variable up in the host's environment.
func (h *mcpHost) lookupEnv(name string) (string, bool) {
	for _, kv := range slices.Backward(h.o.Env) {
		if k, v, ok := strings.Cut(kv, "="); ok && k == name {
			return v, true
		}
	}
	return "", false
}

// set returns the Set of the server s configures, made on first use.
func (h *mcpHost) set(s proto.MCPServer) (*mcp.Set, error) {
	b, err := json.Marshal(s) // maps in sorted order: one configuration, one key
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(b)
	key := hex.EncodeToString(sum[:])
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case h.closed:
		return nil, errors.New("the host daemon is shutting down")
	case h.sets[key] != nil:
		return h.sets[key], nil
	case len(h.sets) >= maxMCPSets:
		return nil, fmt.Errorf("this host daemon already runs %d MCP server configurations, its limit; it takes new ones once it has restarted (it exits when no controller has used it for a while)", maxMCPSets)
	}
	home, _ := h.lookupEnv("HOME")
	set, err := mcp.New(mcp.Options{
		Servers: []mcp.Server{{
			Name: s.Name, Command: expandHome(s.Command, home), Args: s.Args, Env: s.Env, Dir: expandHome(s.Dir, home),
			StartupTimeout: time.Duration(s.StartupTimeoutMS) * time.Millisecond, ToolTimeout: time.Duration(s.ToolTimeoutMS) * time.Millisecond,
		}},
		LookupEnv: h.lookupEnv, Reaper: h.o.Reaper, Version: h.o.Version, Log: h.log,
	})
	if err != nil {
		return nil, err
	}
	h.sets[key] = set
	return set, nil
}

// expandHome replaces a leading ~/ (or a lone ~) of p with home.
func expandHome(p, home string) string {
	switch {
	case home == "":
		return p
	case p == "~":
		return home
	case strings.HasPrefix(p, "~/"):
		return filepath.Join(home, p[2:])
	}
	return p
}

// list lists the tools of servers, in parallel, starting those not listed yet: one entry
// per server, in order.
func (h *mcpHost) list(ctx context.Context, servers []proto.MCPServer) []proto.MCPListed {
	out := make([]proto.MCPListed, len(servers))
	var wg sync.WaitGroup
	for i, s := range servers {
		wg.Go(func() { out[i] = h.listOne(ctx, s) })
	}
	wg.Wait()
	return out
}

func (h *mcpHost) listOne(ctx context.Context, s proto.MCPServer) proto.MCPListed {
	l := proto.MCPListed{Name: s.Name}
	set, err := h.set(s)
	if err != nil {
		l.Err = err.Error()
		return l
	}
	set.Discover(ctx)
	if st := set.Statuses(); len(st) == 1 && !st[0].Listed {
		l.Err = cmp.Or(st[0].Err, "its tools are not listed yet")
		return l
	}
	for _, t := range set.Tools() {
		spec := t.Spec()
		l.Tools = append(l.Tools, proto.MCPTool{Name: t.Name(), Remote: t.Remote(), Mapped: t.Mapped(), Description: spec.Description, Schema: spec.Schema})
	}
	return l
}

// tool returns the tool a call names: the exposed tool name of the server s configures.
func (h *mcpHost) tool(s proto.MCPServer, name string) tools.Tool {
	return &mcpCall{h: h, server: s, name: name}
}

// release ends owner's instances of every server.
func (h *mcpHost) release(owner string) {
	for _, set := range h.all() {
		set.Release(owner)
	}
}

// inventory adds owner's servers to r, in name order.
func (h *mcpHost) inventory(owner string, r *tools.Resources) {
	for _, set := range h.all() {
		set.Inventory(owner, r)
	}
	slices.SortStableFunc(r.MCP, func(a, b tools.MCPServerInfo) int { return cmp.Compare(a.Server, b.Server) })
}

func (h *mcpHost) all() []*mcp.Set {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Collect(maps.Values(h.sets))
}

// close ends every server and waits for them; sets made after it fail.
func (h *mcpHost) close() {
	h.mu.Lock()
	h.closed = true
	sets := slices.Collect(maps.Values(h.sets))
	h.mu.Unlock()
	var wg sync.WaitGroup
	for _, set := range sets {
		wg.Go(set.Close)
	}
	wg.Wait()
}

// mcpCall is the tool of one call frame with an MCP server: it finds the tool in the
// server's set, listing its tools first when they are not (a daemon that started after
// the controller listed them), and calls it for the owner.
type mcpCall struct {
	h      *mcpHost
	server proto.MCPServer
	name   string
}

func (c *mcpCall) Name() string         { return c.name }
func (c *mcpCall) Spec() model.ToolSpec { return model.ToolSpec{Name: c.name} }

func (c *mcpCall) Call(ctx context.Context, owner string, input json.RawMessage) tools.Result {
	set, err := c.h.set(c.server)
	if err != nil {
		return tools.Errorf("mcp server %s: %v", c.server.Name, err)
	}
	find := func() *mcp.Tool {
		for _, t := range set.Tools() {
			if t.Name() == c.name {
				return t
			}
		}
		return nil
	}
	t := find()
	if t == nil {
		set.Discover(ctx)
		t = find()
	}
	if t == nil {
		if st := set.Statuses(); len(st) == 1 && !st[0].Listed {
			return tools.Errorf("mcp server %s is not available: its tools could not be listed: %s", c.server.Name, cmp.Or(st[0].Err, "it was stopped"))
		}
		return tools.Errorf("mcp server %s has no tool %s", c.server.Name, c.name)
	}
	return t.Call(ctx, owner, input)
}
