package hosts

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"myco.dev/agent/model"
	"myco.dev/hosts/mcp"
	"myco.dev/hosts/proto"
	"myco.dev/hosts/snapshot"
	"myco.dev/hosts/tools"
)

// Local is the name of the in-process host.
const Local = "local"

// Options configures a [Harness].
type Options struct {
	// Tools are the standard host tool services of the local worker (bash, the editor,
	// view_image). Their calls are routed by the `host` field.
	Tools []tools.Tool
	// Root are root-only services (session_meta, session_history, prelude): installed on
	// the local worker only, never routed.
	Root []tools.Tool
	// Remotes are the remote hosts, usually from [LoadSSHConfig]; each gets a lazy
	// [Remote] controller configured by Remote.
	Remotes []RemoteSpec
	Remote  RemoteOptions
	// MCP is the local host's MCP servers; nil means none. Their tools are offered
	// without the host field (a server runs where its configuration says), after the
	// other tools, in name order, once [Harness.Discover] listed them. The caller closes
	// the Set after the harness.
	MCP *mcp.Set
	// RemoteMCP are the MCP servers that run on remote hosts, each on one of Remotes.
	RemoteMCP []RemoteMCP
	// MCPDisabled names the configured MCP servers that are disabled, for
	// [Harness.MCPStatuses].
	MCPDisabled []string
	// Snapshots is the local host's snapshot store ([Harness.Capture] and the others with
	// host "local"); nil means none. The caller closes it after the harness.
	Snapshots *snapshot.Store
	// OpenSnapshots, when Snapshots is nil, opens the local store on its first use (a run
	// that captures nothing never reads the store's indexes); the harness closes what it
	// opened. nil means none.
	OpenSnapshots func() (*snapshot.Store, error)
	// Projects says what the project file of a session's directory offers and what of it
	// is approved; nil means sessions get no project servers. ProjectMCP are the options
	// of the Sets of approved project servers, which the harness makes and closes; their
	// Servers are the offer's.
	Projects   ProjectSource
	ProjectMCP mcp.Options
	Log        *slog.Logger // nil means slog.Default()
}

// Harness routes tool calls by host. It is safe for concurrent use; the caller must Close
// it.
type Harness struct {
	tools   map[string]tools.Tool
	root    map[string]tools.Tool
	order   []string // tool names in declaration order
	remotes map[string]*Remote
	hosts   []string // local, then the remotes in config order
	log     *slog.Logger

	mcp         *mcp.Set
	rmcp        []*remoteMCPServer       // in name order
	mcpListing  map[string]chan struct{} // per remote: one listing at a time
	mcpDisabled []string
	mcpMu       sync.Mutex // guards the listing state of rmcp's servers and tools

	snaps     *snapshot.Store // the local host's; nil when none
	openSnaps func() (*snapshot.Store, error)
	snapMu    sync.Mutex      // guards the fields below
	opened    *snapshot.Store // what openSnaps opened, which Close closes
	openErr   error           // why it could not, kept: one attempt

	projects  ProjectSource
	projMCP   mcp.Options
	projEvery time.Duration       // how often a directory's offer is looked at again
	projMu    sync.Mutex          // guards the fields below
	project   map[string]*project // by directory
	projSets  []*mcp.Set          // every set of project servers started, current or not
	// projClosed: Close ran; no set is started any more.
	projClosed bool
}

// NewHarness returns a harness over the local worker's tools.
func NewHarness(o Options) (*Harness, error) {
	h := &Harness{tools: map[string]tools.Tool{}, root: map[string]tools.Tool{}, remotes: map[string]*Remote{},
		hosts: []string{Local}, log: o.Log, projects: o.Projects, projMCP: o.ProjectMCP, projEvery: time.Second, project: map[string]*project{},
		snaps: o.Snapshots, openSnaps: o.OpenSnapshots}
	if h.log == nil {
		h.log = slog.Default()
	}
	if h.projMCP.Log == nil {
		h.projMCP.Log = h.log
	}
	if len(o.Remotes) > 0 && o.Remote.MaxImageBase64Bytes <= 0 {
		return nil, fmt.Errorf("hosts: remotes need a positive MaxImageBase64Bytes, not %d", o.Remote.MaxImageBase64Bytes)
	}
	if o.Remote.Log == nil {
		o.Remote.Log = h.log
	}
	for _, spec := range o.Remotes {
		if spec.Alias == Local || spec.Alias == "" {
			return nil, fmt.Errorf("hosts: %q cannot name a remote host", spec.Alias)
		}
		if _, dup := h.remotes[spec.Alias]; dup {
			return nil, fmt.Errorf("hosts: host %q listed twice", spec.Alias)
		}
		h.remotes[spec.Alias] = NewRemote(spec, o.Remote)
		h.hosts = append(h.hosts, spec.Alias)
	}
	h.mcp, h.mcpDisabled, h.mcpListing = o.MCP, slices.Sorted(slices.Values(o.MCPDisabled)), map[string]chan struct{}{}
	for _, rm := range o.RemoteMCP {
		r, ok := h.remotes[rm.Host]
		switch {
		case !ok:
			return nil, fmt.Errorf("hosts: mcp server %s: unknown host %q", rm.Server.Name, rm.Host)
		case slices.ContainsFunc(h.rmcp, func(s *remoteMCPServer) bool { return s.cfg.Name == rm.Server.Name }):
			return nil, fmt.Errorf("hosts: mcp server %q configured twice", rm.Server.Name)
		}
		h.rmcp = append(h.rmcp, &remoteMCPServer{r: r, cfg: rm.Server, unavailable: rm.Unavailable != "", err: remoteText(rm.Unavailable)})
		h.mcpListing[rm.Host] = make(chan struct{}, 1)
	}
	slices.SortFunc(h.rmcp, func(a, b *remoteMCPServer) int { return cmp.Compare(a.cfg.Name, b.cfg.Name) })
	for _, t := range o.Tools {
		if _, dup := h.tools[t.Name()]; dup {
			return nil, fmt.Errorf("hosts: tool %q installed twice", t.Name())
		}
		h.tools[t.Name()] = t
		h.order = append(h.order, t.Name())
	}
	for _, t := range o.Root {
		if _, dup := h.tools[t.Name()]; dup {
			return nil, fmt.Errorf("hosts: tool %q installed twice", t.Name())
		}
		if _, dup := h.root[t.Name()]; dup {
			return nil, fmt.Errorf("hosts: tool %q installed twice", t.Name())
		}
		h.root[t.Name()] = t
		h.order = append(h.order, t.Name())
	}
	return h, nil
}

// Hosts returns the known host names, local first.
func (h *Harness) Hosts() []string { return slices.Clone(h.hosts) }

// Remote returns the controller of a remote host, or nil.
func (h *Harness) Remote(alias string) *Remote { return h.remotes[alias] }

// SetWithoutEnv replaces the environment variables that the remote hosts' tool processes
// and ssh processes must not get (see [RemoteOptions].WithoutEnv), for the connections
// made from now on. The local tools are told per call ([tools.WithoutEnv]).
func (h *Harness) SetWithoutEnv(names []string) {
	for _, r := range h.remotes {
		r.SetWithoutEnv(names)
	}
}

// Statuses returns the state of every remote host, in [Harness.Hosts] order.
func (h *Harness) Statuses() []Status {
	var out []Status
	for _, name := range h.hosts[1:] {
		out = append(out, h.remotes[name].Status())
	}
	return out
}

// Close ends every remote connection (each host ends the processes it started) and
// the project servers it started, and waits for them. It does not close the local tools
// and the configured MCP servers, which the caller owns.
func (h *Harness) Close() {
	var wg sync.WaitGroup
	for _, r := range h.remotes {
		wg.Go(r.Close)
	}
	wg.Go(h.closeProjects)
	wg.Wait()
	h.snapMu.Lock()
	defer h.snapMu.Unlock()
	if h.opened != nil {
		h.opened.Close()
		h.opened = nil
	}
}

// Specs returns the tool specifications the model sees: routed tools carry an optional
// `host` field listing the known hosts; the tools of the MCP servers listed so far follow,
// in name order, as their servers describe them.
func (h *Harness) Specs() []model.ToolSpec {
	var out []model.ToolSpec
	for _, name := range h.order {
		if t, ok := h.tools[name]; ok {
			out = append(out, withHostField(t.Spec(), h.Hosts()))
		} else {
			out = append(out, h.root[name].Spec())
		}
	}
	for _, t := range h.mcpTools() {
		out = append(out, t.Spec())
	}
	return out
}

// withHostField adds the optional host property to a tool's JSON schema.
func withHostField(spec model.ToolSpec, hosts []string) model.ToolSpec {
	var schema map[string]any
	if err := json.Unmarshal(spec.Schema, &schema); err != nil {
		return spec
	}
	props, _ := schema["properties"].(map[string]any)
	if props == nil {
		props = map[string]any{}
		schema["properties"] = props
	}
	props["host"] = map[string]any{
		"type":        "string",
		"enum":        hosts,
		"description": "Host to run on: " + strings.Join(hosts, ", ") + ". Omitted means local. Resources such as bash session ids are per host.",
	}
	b, err := json.Marshal(schema)
	if err != nil {
		return spec
	}
	spec.Schema = b
	return spec
}

// For returns the tool executor of one session runtime: every resource its calls create
// belongs to owner.
func (h *Harness) For(owner string) *Executor { return &Executor{h: h, owner: owner} }

// ForDir is [Harness.For] for a session that works in dir: it also has the tools of the
// servers that dir's project offers and the person approved.
func (h *Harness) ForDir(owner, dir string) *Executor {
	return &Executor{h: h, owner: owner, dir: dir}
}

// Release ends every resource owner holds on every host. An attached remote is asked
// with a bounded wait; a remote that is not attached is not connected.
func (h *Harness) Release(owner string) {
	for _, t := range h.tools {
		if r, ok := t.(tools.Releaser); ok {
			r.Release(owner)
		}
	}
	if h.mcp != nil {
		h.mcp.Release(owner)
	}
	h.releaseProjects(owner)
	var wg sync.WaitGroup
	for _, r := range h.remotes {
		wg.Go(func() { r.Release(context.Background(), owner) })
	}
	wg.Wait()
}

// Inventory returns owner's tool resources on every host, local first. Local is observed
// directly; attached remotes are queried concurrently with a bounded wait, and remotes
// that are not attached (or do not answer) give their last-known data, marked as such.
func (h *Harness) Inventory(ctx context.Context, owner string) []Inventory {
	out := make([]Inventory, len(h.hosts))
	var localTools []tools.Tool
	for _, name := range h.order {
		if t, ok := h.tools[name]; ok {
			localTools = append(localTools, t)
		}
	}
	out[0] = Inventory{Host: Local, Resources: tools.Inventory(localTools, owner), Observed: time.Now()}
	if h.mcp != nil {
		h.mcp.Inventory(owner, &out[0].Resources)
	}
	h.inventoryProjects(owner, &out[0].Resources)
	var wg sync.WaitGroup
	for i, name := range h.hosts[1:] {
		wg.Go(func() { out[i+1] = h.remotes[name].Inventory(ctx, owner) })
	}
	wg.Wait()
	for i := range out {
		h.mcpInventory(&out[i])
	}
	return out
}

// Executor runs tool calls on behalf of one owner. It satisfies the agent's tool interface.
type Executor struct {
	h     *Harness
	owner string
	dir   string // the session's directory, whose project servers it has; "" for none

	mu         sync.Mutex // guards the field below
	discovered *mcp.Set   // the project set this executor had listed
}

// Owner returns the resource owner of this executor.
func (e *Executor) Owner() string { return e.owner }

// Specs returns the harness's tool specifications, then the tools of the approved servers
// of the project in the executor's directory, in name order. The first time it sees a set
// of them (an executor's first request, or the first after an approval), it lists their
// tools first, as a session's start does for the configured servers: bounded by each
// server's startup timeout, a failed one asked again after its backoff.
func (e *Executor) Specs() []model.ToolSpec {
	specs := e.h.Specs()
	set := e.h.projectSet(e.dir)
	if set == nil {
		return specs
	}
	e.mu.Lock()
	first := e.discovered != set
	e.discovered = set
	e.mu.Unlock()
	if first {
		set.Discover(context.Background()) // no ctx here: each server bounds its own start
	}
	for _, t := range e.h.projectTools(e.dir) {
		specs = append(specs, t.Spec())
	}
	return specs
}

// Call routes one tool call and returns its result. When ctx carries an image limit (see
// [tools.WithImageLimit]: the cap of the session's current model), a result whose image is
// over it, from any tool on any host, becomes an error result that says so.
func (e *Executor) Call(ctx context.Context, call model.ToolCall) model.ToolResult {
	res := e.call(ctx, call)
	return model.ToolResult{CallID: call.ID, Text: res.Text, Images: res.Images, IsError: res.IsError, Unknown: res.Unknown}
}

func (e *Executor) call(ctx context.Context, call model.ToolCall) tools.Result {
	input := call.Input
	if len(input) == 0 {
		input = json.RawMessage("{}")
	}
	if t, ok := e.h.root[call.Name]; ok {
		host, _, err := splitHost(input)
		if err != nil {
			return tools.Errorf("%s: %v", call.Name, err)
		}
		if host != "" && host != Local {
			return tools.Errorf("%s is a root-only tool that runs on the local host only; host %q was given", call.Name, host)
		}
		return capImages(ctx, t.Call(ctx, e.owner, input), "", input)
	}
	if t := e.h.mcpTool(call.Name); t != nil {
		// An MCP server runs where its configuration says: the input goes to it as it is.
		return capImages(ctx, t.Call(ctx, e.owner, input), "", input)
	}
	if t := e.projectTool(ctx, call.Name); t != nil {
		return capImages(ctx, t.Call(ctx, e.owner, input), "", input)
	}
	t, ok := e.h.tools[call.Name]
	if !ok {
		if res, ok := e.h.projectUnavailable(e.dir, call.Name); ok && e.dir != "" {
			return res
		}
		if res, ok := e.h.mcpUnavailable(call.Name); ok {
			// A server that failed is started again on its next use, after its backoff.
			if t := e.h.mcpRetry(ctx, call.Name); t != nil {
				return capImages(ctx, t.Call(ctx, e.owner, input), "", input)
			}
			if res, ok = e.h.mcpUnavailable(call.Name); ok {
				return res
			}
		}
		return tools.Errorf("unknown tool %q; the tools are: %s", call.Name, strings.Join(e.h.order, ", "))
	}
	host, rest, err := splitHost(input)
	if err != nil {
		return tools.Errorf("%s: %v", call.Name, err)
	}
	if host == "" || host == Local {
		return capImages(ctx, t.Call(ctx, e.owner, rest), "", rest)
	}
	r, ok := e.h.remotes[host]
	if !ok {
		return tools.Errorf("unknown host %q; the known hosts are: %s", host, strings.Join(e.h.hosts, ", "))
	}
	if f, ok := tools.SandboxFrom(ctx); ok {
		return capImages(ctx, r.CallFenced(ctx, e.owner, call.Name, rest, proto.Sandbox{ReadOnly: f.ReadOnly, Network: f.Spec.Network}), "host "+host+": ", rest)
	}
	return capImages(ctx, r.Call(ctx, e.owner, call.Name, rest), "host "+host+": ", rest)
}

// capImages holds a result with images to the image limit in ctx (see [tools.CapImages]),
// naming the image by the path field of the call's input, if any.
func capImages(ctx context.Context, res tools.Result, where string, input json.RawMessage) tools.Result {
	if len(res.Images) == 0 {
		return res
	}
	var in struct {
		Path string `json:"path"`
	}
	_ = json.Unmarshal(input, &in)
	return tools.CapImages(ctx, res, where, in.Path)
}

// splitHost removes the host field from a tool input.
func splitHost(input json.RawMessage) (host string, rest json.RawMessage, err error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(input, &fields); err != nil {
		return "", nil, fmt.Errorf("input is not a JSON object: %w", err)
	}
	raw, ok := fields["host"]
	if !ok {
		return "", input, nil
	}
	if err := json.Unmarshal(raw, &host); err != nil {
		return "", nil, fmt.Errorf("field host must be a string")
	}
	delete(fields, "host")
	rest, err = json.Marshal(fields)
	if err != nil {
		return "", nil, err
	}
	return host, rest, nil
}
