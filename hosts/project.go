package hosts

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"myco.dev/hosts/mcp"
	"myco.dev/hosts/tools"
)

// The MCP servers a session's directory offers (its project's .mcp.json), started only
// once the person approved them. A [ProjectSource] says what a directory offers and which
// of it is approved; the harness keeps one mcp.Set per directory for the approved servers
// of the file's current content, looked at again at most once a second, and offers their
// tools to the sessions of that directory only, after the configured tools.

// ProjectServerPrefix begins the name of a project's server in its tools' names
// (mcp__project-NAME__TOOL): config.ProjectServerPrefix, which this package does not import.
const ProjectServerPrefix = "project-"

// ErrProjectChanged is the error of an approval of a project file whose content changed
// since the person was shown it.
var ErrProjectChanged = errors.New("the project's MCP file changed since it was shown")

// ProjectSource says what the project file of a directory offers, and what of it the
// person approved; engine.Projects is one. It is called at most once a second per
// directory, and must be safe for concurrent use.
type ProjectSource interface {
	Project(dir string) ProjectOffer
}

// ProjectOffer is what a directory's project file offers.
type ProjectOffer struct {
	Dir  string
	File string // the file; "" when the directory has none
	// Sum is the digest of the file's bytes, which an approval is of.
	Sum string
	// Problem says why nothing in the file can be used (not a regular file, not JSON).
	Problem string
	// Approved: the person approved the file with this content. Changed: they approved
	// another content of it, so this one needs approving again.
	Approved, Changed bool
	Servers           []ProjectServer // in name order
	// Start are the servers to start, resolved: set only when Approved, without the ones
	// with a Problem; a server whose variable is not set has Unavailable set.
	Start []mcp.Server
}

// Offers reports whether the directory has a project file.
func (o ProjectOffer) Offers() bool { return o.File != "" }

// ProjectServer is one server of a project's file, as the file writes it.
type ProjectServer struct {
	Name   string // the file's name of it
	Server string // its name in tools' names: project-NAME
	// Command, Args and Env (values as written, with their ${VAR}) of a stdio server; URL
	// and Headers of an HTTP one.
	Command string
	Args    []string
	Env     map[string]string
	URL     string
	Headers map[string]string
	// Vars are the variables of myco's environment its env and headers read.
	Vars []string
	// Problem says why myco does not start it, approved or not.
	Problem string
}

// ProjectStatus is a directory's offer with the states of the servers the harness started
// for it: one [MCPStatus] per server of Start, in name order (Server is project-NAME).
type ProjectStatus struct {
	ProjectOffer
	States []MCPStatus
}

// project is the harness's state of one directory's project servers.
type project struct {
	mu      sync.Mutex // guards the fields below
	checked time.Time
	offer   ProjectOffer
	set     *mcp.Set // the approved servers of offer.Sum; nil when none
}

// projectOf returns the state of dir's project servers, the offer looked at again when
// it is more than a second old: a set is started for a newly approved content, and a set
// whose approval no longer holds is no longer offered (its instances end with their
// owners, never under a running call). nil when the harness has no source.
func (h *Harness) projectOf(dir string) *project {
	if h.projects == nil || dir == "" {
		return nil
	}
	h.projMu.Lock()
	p := h.project[dir]
	if p == nil {
		p = &project{}
		h.project[dir] = p
	}
	closed := h.projClosed
	h.projMu.Unlock()
	p.mu.Lock()
	defer p.mu.Unlock()
	if closed || time.Since(p.checked) < h.projEvery {
		return p
	}
	p.checked = time.Now()
	offer := h.projects.Project(dir)
	if p.set != nil && (!offer.Approved || offer.Sum != p.offer.Sum) {
		// The set stays in projSets for Release, Inventory and Close: its instances
		// belong to sessions, and end with them.
		h.log.Info("the project's approved mcp servers changed: their tools are no longer offered", "dir", dir)
		p.set = nil
	}
	if offer.Approved && p.set == nil && len(offer.Start) > 0 {
		o := h.projMCP
		o.Servers = offer.Start
		set, err := mcp.New(o)
		if err != nil {
			h.log.Error("the project's mcp servers cannot be started", "dir", dir, "err", err)
		} else {
			h.projMu.Lock()
			if h.projClosed {
				h.projMu.Unlock()
				set.Close()
			} else {
				h.projSets = append(h.projSets, set)
				h.projMu.Unlock()
				p.set = set
			}
		}
	}
	p.offer = offer
	return p
}

// projectSet returns the current set of dir's approved project servers, or nil.
func (h *Harness) projectSet(dir string) *mcp.Set {
	p := h.projectOf(dir)
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.set
}

// ProjectChanged makes the harness look at dir's offer again at its next use, however
// recently it looked: an approval made in this process is in use at once.
func (h *Harness) ProjectChanged(dir string) {
	h.projMu.Lock()
	p := h.project[dir]
	h.projMu.Unlock()
	if p != nil {
		p.mu.Lock()
		p.checked = time.Time{}
		p.mu.Unlock()
	}
}

// DiscoverProject lists the tools of dir's approved project servers that are not listed
// yet (a failed one after its backoff), as [Harness.Discover] does for the configured
// ones.
func (h *Harness) DiscoverProject(ctx context.Context, dir string) {
	if set := h.projectSet(dir); set != nil {
		set.Discover(ctx)
	}
}

// Project returns what dir's project file offers and the states of the servers started
// for it. It starts nothing.
func (h *Harness) Project(dir string) ProjectStatus {
	p := h.projectOf(dir)
	if p == nil {
		return ProjectStatus{}
	}
	p.mu.Lock()
	st := ProjectStatus{ProjectOffer: p.offer}
	set := p.set
	p.mu.Unlock()
	if set != nil {
		for _, s := range set.Statuses() {
			ms := MCPStatus{Server: s.Server, Host: Local, Transport: s.Transport, Tools: s.Tools, Running: s.Running, RetryAt: s.RetryAt}
			switch {
			case s.Listed:
				ms.State = MCPListed
			case s.Err != "":
				ms.State, ms.Err = MCPFailed, remoteText(s.Err)
			default:
				ms.State = MCPPending
			}
			st.States = append(st.States, ms)
		}
	}
	return st
}

// projectTools returns the tools of dir's approved project servers that are listed and
// named unlike every other tool, in name order.
func (h *Harness) projectTools(dir string) []*mcp.Tool {
	set := h.projectSet(dir)
	if set == nil {
		return nil
	}
	var out []*mcp.Tool
	for _, t := range set.Tools() {
		if _, ok := h.tools[t.Name()]; ok || h.root[t.Name()] != nil || h.mcpTool(t.Name()) != nil {
			continue // a configured tool keeps its name
		}
		out = append(out, t)
	}
	return out
}

// projectUnavailable returns the error result of a call of a project server's tool that
// dir does not offer now (never approved, its file changed, not listed), saying why; ok
// is false for a name that is no project server's.
func (h *Harness) projectUnavailable(dir, name string) (tools.Result, bool) {
	if !strings.HasPrefix(name, "mcp__"+ProjectServerPrefix) {
		return tools.Result{}, false
	}
	st := h.Project(dir)
	for _, s := range st.States {
		if strings.HasPrefix(name, "mcp__"+s.Server+"__") && s.State == MCPFailed {
			return tools.Errorf("mcp server %s of the project's %s is not available: its tools could not be listed: %s", s.Server, st.File, s.Err), true
		}
	}
	switch {
	case !st.Offers():
		return tools.Errorf("%s is the tool of a project's MCP server, and this session's directory offers none", name), true
	case st.Changed:
		return tools.Errorf("%s changed since the user approved its MCP servers, so myco does not start them until the user approves them again", st.File), true
	case !st.Approved:
		return tools.Errorf("the user has not approved the MCP servers of %s, so myco does not start them", st.File), true
	}
	return tools.Errorf("%s is not a tool of the approved MCP servers of %s", name, st.File), true
}

// releaseProjects ends owner's instances of every project server.
func (h *Harness) releaseProjects(owner string) {
	for _, set := range h.projectSets() {
		set.Release(owner)
	}
}

// inventoryProjects adds owner's instances of project servers to r.
func (h *Harness) inventoryProjects(owner string, r *tools.Resources) {
	for _, set := range h.projectSets() {
		set.Inventory(owner, r)
	}
}

func (h *Harness) projectSets() []*mcp.Set {
	h.projMu.Lock()
	defer h.projMu.Unlock()
	return slices.Clone(h.projSets)
}

// closeProjects ends every project server the harness started.
func (h *Harness) closeProjects() {
	h.projMu.Lock()
	h.projClosed = true
	sets := h.projSets
	h.projSets = nil
	h.projMu.Unlock()
	var wg sync.WaitGroup
	for _, set := range sets {
		wg.Go(set.Close)
	}
	wg.Wait()
}

// projectTool returns the tool named name of the approved project servers of e's
// directory, or nil. A server that failed is started again on a call of its tool, after
// its backoff.
func (e *Executor) projectTool(ctx context.Context, name string) tools.Tool {
	if e.dir == "" || !strings.HasPrefix(name, "mcp__"+ProjectServerPrefix) {
		return nil
	}
	find := func() tools.Tool {
		for _, t := range e.h.projectTools(e.dir) {
			if t.Name() == name {
				return t
			}
		}
		return nil
	}
	if t := find(); t != nil {
		return t
	}
	e.h.DiscoverProject(ctx, e.dir)
	return find()
}
