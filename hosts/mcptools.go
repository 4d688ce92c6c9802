package hosts

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"myco.dev/agent/model"
	"myco.dev/hosts/mcp"
	"myco.dev/hosts/proto"
	"myco.dev/hosts/tools"
)

// RemoteMCP is an MCP server that runs on a remote host, through the host protocol.
type RemoteMCP struct {
	Host   string // one of the harness's remotes
	Server proto.MCPServer
	// Unavailable, when set, says why the server cannot be started at all (a credential
	// that could not be looked up): it is never listed, and its status says why.
	Unavailable string
}

// MCPState is the state of a configured MCP server, as [Harness.MCPStatuses] tells it.
type MCPState string

// The states of an MCP server.
const (
	MCPPending  MCPState = "pending"  // not listed yet: no session has started since myco did
	MCPListed   MCPState = "listed"   // its tools are known
	MCPFailed   MCPState = "failed"   // its tools could not be listed (Err); tried again later
	MCPDisabled MCPState = "disabled" // enabled = false
)

// MCPStatus is what the user sees of one configured MCP server.
type MCPStatus struct {
	Server    string
	Host      string // Local, or the remote it runs on
	Transport string // "stdio" or "http"
	State     MCPState
	Err       string    // why it failed, for MCPFailed; fit for a terminal
	RetryAt   time.Time // when a discovery tries again, for MCPFailed
	Tools     []mcp.ToolName
	// Running counts the instances that run, across sessions: on the local host only
	// (a remote's are in each owner's inventory).
	Running int
}

// remoteMCPServer is an MCP server on a remote host and what the harness learnt of it.
type remoteMCPServer struct {
	r           *Remote
	cfg         proto.MCPServer
	unavailable bool // it cannot start (err says why): never listed

	// guarded by Harness.mcpMu:
	listed   bool
	tools    []*remoteMCPTool
	err      string
	failures int
	retryAt  time.Time
}

// remoteMCPTool is a tool of an MCP server on a remote host.
type remoteMCPTool struct {
	srv    *remoteMCPServer
	name   string
	remote string
	mapped bool
	spec   model.ToolSpec
}

func (t *remoteMCPTool) Name() string         { return t.name }
func (t *remoteMCPTool) Spec() model.ToolSpec { return t.spec }
func (t *remoteMCPTool) Call(ctx context.Context, owner string, input json.RawMessage) tools.Result {
	return t.srv.r.CallMCP(ctx, owner, t.srv.cfg, t.name, input)
}

// mcpBackoff is the wait before a remote server's tools are asked for again after the
// n-th failure in a row: 1 s, doubling, up to 1 min (as for a local server).
func mcpBackoff(n int) time.Duration {
	d := time.Second
	for i := 1; i < n && d < time.Minute; i++ {
		d *= 2
	}
	return min(d, time.Minute)
}

// Discover lists the tools of every MCP server not listed yet, local and remote, in
// parallel: the local ones as [mcp.Set.Discover] does, each remote's in one mcp_list
// request (attaching the host), bounded by the attach timeout and the servers' startup
// timeouts. A server that failed is asked again only after a backoff. Call it before a
// session's first model request; the tools listed stay for the harness's life.
func (h *Harness) Discover(ctx context.Context) {
	var wg sync.WaitGroup
	if h.mcp != nil {
		wg.Go(func() { h.mcp.Discover(ctx) })
	}
	for _, host := range h.hosts[1:] {
		if servers := h.remoteMCPOf(host); len(servers) > 0 {
			wg.Go(func() { h.discoverRemote(ctx, h.remotes[host], servers) })
		}
	}
	wg.Wait()
}

// remoteMCPOf returns the MCP servers of host, in name order.
func (h *Harness) remoteMCPOf(host string) []*remoteMCPServer {
	var out []*remoteMCPServer
	for _, s := range h.rmcp {
		if s.r.spec.Alias == host {
			out = append(out, s)
		}
	}
	return out
}

// discoverRemote lists the tools of r's servers that need it, one listing at a time per
// host: a Discover that finds one in flight waits for it.
func (h *Harness) discoverRemote(ctx context.Context, r *Remote, servers []*remoteMCPServer) {
	sem := h.mcpListing[r.spec.Alias]
	select {
	case sem <- struct{}{}:
	case <-ctx.Done():
		return
	}
	defer func() { <-sem }()
	now := time.Now()
	var want []*remoteMCPServer
	var cfgs []proto.MCPServer
	var longest time.Duration
	h.mcpMu.Lock()
	for _, s := range servers {
		if !s.listed && !now.Before(s.retryAt) && !s.unavailable {
			want = append(want, s)
			cfgs = append(cfgs, s.cfg)
			longest = max(longest, time.Duration(cmp.Or(s.cfg.StartupTimeoutMS, int64(mcp.DefaultStartupTimeout/time.Millisecond)))*time.Millisecond)
		}
	}
	h.mcpMu.Unlock()
	if len(want) == 0 {
		return
	}
	// The host bounds each server's start; this bounds a host that does not answer.
	lctx, cancel := context.WithTimeout(ctx, r.o.AttachTimeout+longest+10*time.Second)
	defer cancel()
	listed, err := r.ListMCP(lctx, cfgs)
	if err != nil && ctx.Err() != nil {
		return // the caller gave up: not the host's failure
	}
	h.mcpMu.Lock()
	defer h.mcpMu.Unlock()
	for i, s := range want {
		why := ""
		switch {
		case err != nil:
			why = err.Error()
		case i >= len(listed) || listed[i].Name != s.cfg.Name:
			why = fmt.Sprintf("host %s answered the listing with other servers than it was asked for", r.spec.Alias)
		case listed[i].Err != "":
			why = "host " + r.spec.Alias + ": " + listed[i].Err
		}
		if why != "" {
			s.failures++
			s.retryAt = time.Now().Add(mcpBackoff(s.failures))
			s.err = remoteText(why)
			h.log.Warn("mcp server did not start", "server", s.cfg.Name, "host", r.spec.Alias, "err", s.err, "retry_at", s.retryAt)
			continue
		}
		s.listed, s.failures, s.err = true, 0, ""
		s.tools = h.remoteTools(s, listed[i].Tools)
		h.log.Info("mcp server listed", "server", s.cfg.Name, "host", r.spec.Alias, "tools", len(s.tools))
	}
}

// remoteTools makes the tools a host listed for s, in name order. The host is trusted no
// further than its servers: a name that is not s's (mcp__SERVER__…) or breaks the
// providers' rule is left out, so that a host cannot shadow another tool, a description
// is capped and a schema that is not a JSON object is replaced by an empty one.
func (h *Harness) remoteTools(s *remoteMCPServer, list []proto.MCPTool) []*remoteMCPTool {
	var out []*remoteMCPTool
	prefix := "mcp__" + s.cfg.Name + "__"
	for _, mt := range list {
		if !strings.HasPrefix(mt.Name, prefix) || !mcp.ValidName(mt.Name) || slices.ContainsFunc(out, func(t *remoteMCPTool) bool { return t.name == mt.Name }) {
			h.log.Warn("mcp tool left out: the host listed a name that is not its server's", "server", s.cfg.Name, "host", s.r.spec.Alias, "name", remoteText(mt.Name))
			continue
		}
		desc := mt.Description
		if len(desc) > mcp.MaxDescription+512 { // the host's own cap, and its note on a mapped name
			cut := mcp.MaxDescription
			for cut > 0 && !utf8.RuneStart(desc[cut]) {
				cut--
			}
			desc = desc[:cut] + " […]"
		}
		schema := mt.Schema
		var m map[string]any
		if json.Unmarshal(schema, &m) != nil || m["type"] != "object" {
			schema = json.RawMessage(`{"type":"object","properties":{}}`)
		} else {
			var b bytes.Buffer
			if json.Compact(&b, schema) == nil {
				schema = b.Bytes()
			}
		}
		out = append(out, &remoteMCPTool{srv: s, name: mt.Name, remote: mt.Remote, mapped: mt.Mapped,
			spec: model.ToolSpec{Name: mt.Name, Description: desc, Schema: schema}})
	}
	slices.SortFunc(out, func(a, b *remoteMCPTool) int { return cmp.Compare(a.name, b.name) })
	return out
}

// mcpTools returns the tools of every listed MCP server, local and remote, in name order.
func (h *Harness) mcpTools() []tools.Tool {
	var out []tools.Tool
	if h.mcp != nil {
		for _, t := range h.mcp.Tools() {
			out = append(out, t)
		}
	}
	h.mcpMu.Lock()
	for _, s := range h.rmcp {
		for _, t := range s.tools {
			out = append(out, t)
		}
	}
	h.mcpMu.Unlock()
	slices.SortStableFunc(out, func(a, b tools.Tool) int { return cmp.Compare(a.Name(), b.Name()) })
	return out
}

// mcpTool returns the MCP tool named name, or nil.
func (h *Harness) mcpTool(name string) tools.Tool {
	if !strings.HasPrefix(name, "mcp__") {
		return nil
	}
	for _, t := range h.mcpTools() {
		if t.Name() == name {
			return t
		}
	}
	return nil
}

// mcpUnavailable returns the error result of a call of a tool that no listed server
// has, when its name is that of a configured server whose tools could not be listed
// (the model saw them in another session, or guesses): it says why. ok is false for any
// other name.
func (h *Harness) mcpUnavailable(name string) (res tools.Result, ok bool) {
	for _, st := range h.MCPStatuses() {
		if strings.HasPrefix(name, "mcp__"+st.Server+"__") && st.State != MCPListed {
			switch st.State {
			case MCPDisabled:
				return tools.Errorf("mcp server %s is disabled in the configuration (enabled = false), so %s is not available", st.Server, name), true
			case MCPFailed:
				return tools.Errorf("mcp server %s is not available: its tools could not be listed: %s", st.Server, st.Err), true
			default:
				return tools.Errorf("mcp server %s is not available: its tools are not listed yet", st.Server), true
			}
		}
	}
	return tools.Result{}, false
}

// mcpRetry lists the tools again when name is a tool of a server whose tools could not be
// listed and whose backoff has passed, so that a server that failed is started again on
// its next use, and returns the tool if it is now listed.
func (h *Harness) mcpRetry(ctx context.Context, name string) tools.Tool {
	due := false
	for _, st := range h.MCPStatuses() {
		if strings.HasPrefix(name, "mcp__"+st.Server+"__") && st.State == MCPFailed && !st.RetryAt.IsZero() && !time.Now().Before(st.RetryAt) {
			due = true
		}
	}
	if !due {
		return nil
	}
	h.Discover(ctx)
	return h.mcpTool(name)
}

// MCPStatuses returns the state of every configured MCP server, in name order.
func (h *Harness) MCPStatuses() []MCPStatus {
	var out []MCPStatus
	if h.mcp != nil {
		for _, st := range h.mcp.Statuses() {
			s := MCPStatus{Server: st.Server, Host: Local, Transport: st.Transport, Tools: st.Tools, Running: st.Running, RetryAt: st.RetryAt}
			switch {
			case st.Listed:
				s.State = MCPListed
			case st.Err != "":
				s.State, s.Err = MCPFailed, remoteText(st.Err)
			default:
				s.State = MCPPending
			}
			out = append(out, s)
		}
	}
	h.mcpMu.Lock()
	for _, rs := range h.rmcp {
		s := MCPStatus{Server: rs.cfg.Name, Host: rs.r.spec.Alias, Transport: "stdio", RetryAt: rs.retryAt}
		switch {
		case rs.listed:
			s.State, s.RetryAt = MCPListed, time.Time{}
		case rs.err != "":
			s.State, s.Err = MCPFailed, rs.err
		default:
			s.State = MCPPending
		}
		for _, t := range rs.tools {
			s.Tools = append(s.Tools, mcp.ToolName{Name: t.name, Remote: t.remote, Mapped: t.mapped})
		}
		out = append(out, s)
	}
	h.mcpMu.Unlock()
	for _, name := range h.mcpDisabled {
		out = append(out, MCPStatus{Server: name, State: MCPDisabled})
	}
	slices.SortFunc(out, func(a, b MCPStatus) int { return cmp.Compare(a.Server, b.Server) })
	return out
}

// mcpInventory adds to inv, one host's inventory, the MCP servers of that host whose
// tools could not be listed (unavailable to every owner), and sorts its MCP servers.
func (h *Harness) mcpInventory(inv *Inventory) {
	for _, st := range h.MCPStatuses() {
		if st.Host == inv.Host && st.State == MCPFailed {
			inv.Resources.MCP = append(inv.Resources.MCP, mcp.UnlistedInfo(st.Server, st.Err))
		}
	}
	slices.SortStableFunc(inv.Resources.MCP, func(a, b tools.MCPServerInfo) int { return cmp.Compare(a.Server, b.Server) })
}

// ListMCP asks the host for the tools of servers ([proto.MCPList]), attaching it first
// when needed. The answer has one entry per server, in order.
func (r *Remote) ListMCP(ctx context.Context, servers []proto.MCPServer) ([]proto.MCPListed, error) {
	c, _, err := r.attach(ctx, "")
	if err != nil {
		return nil, err
	}
	m, err := c.request(ctx, proto.Msg{MCPList: &proto.MCPList{Servers: servers}})
	switch {
	case errors.Is(err, errConnEnded):
		if why := c.endErr(); why != nil {
			err = why
		}
		return nil, fmt.Errorf("host %s: the connection ended while it listed the MCP servers' tools: %w", r.spec.Alias, err)
	case err != nil:
		return nil, fmt.Errorf("host %s: %w", r.spec.Alias, err)
	case m.Err != nil:
		return nil, fmt.Errorf("host %s: %s", r.spec.Alias, m.Err.Message)
	case m.MCPTools == nil:
		return nil, fmt.Errorf("host %s answered the listing with a frame that is not mcp_tools", r.spec.Alias)
	}
	return m.MCPTools.Servers, nil
}
