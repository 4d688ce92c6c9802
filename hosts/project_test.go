package hosts

import (
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"myco.dev/hosts/mcp"
	"myco.dev/hosts/tools"
)

// fakeProjects is a ProjectSource whose offer for one directory a test changes.
type fakeProjects struct {
	dir string

	mu    sync.Mutex // guards offer
	offer ProjectOffer
}

func (f *fakeProjects) Project(dir string) ProjectOffer {
	f.mu.Lock()
	defer f.mu.Unlock()
	if dir != f.dir {
		return ProjectOffer{Dir: dir}
	}
	return f.offer
}

func (f *fakeProjects) set(o ProjectOffer) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.offer = o
}

// A project's servers reach only the sessions of its directory, and only once approved:
// before, a call of their tools says that the user has not approved them; after, their
// tools follow the configured ones in the specs and answer; once the file changed, they
// are no longer offered and a call says why, while the instance a session started keeps
// running until the session releases it.
func TestHarnessProjectServers(t *testing.T) {
	f := fakeMCP(t, "project-fake", t.TempDir())
	dir := t.TempDir()
	offer := ProjectOffer{Dir: dir, File: dir + "/.mcp.json", Sum: "s1",
		Servers: []ProjectServer{{Name: "fake", Server: "project-fake", Command: f.Command}}}
	src := &fakeProjects{dir: dir, offer: offer}
	configured := mcpSet(t, mcp.Server{Name: "fake", Command: f.Command, Env: f.Env})
	h, err := NewHarness(Options{Tools: []tools.Tool{&echoTool{name: "bash"}}, MCP: configured, Projects: src, Log: testLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	h.projEvery = 0 // look at the offer at every use
	h.Discover(t.Context())
	ex, elsewhere := h.ForDir("rt1", dir), h.ForDir("rt2", t.TempDir())

	if names := specNames(ex.Specs()); slices.ContainsFunc(names, isProjectTool) {
		t.Errorf("Specs before the approval = %v, want no project tool", names)
	}
	if res := xcall(t, ex, "mcp__project-fake__echo", `{"text":"hi"}`); !res.IsError || !strings.Contains(res.Text, "the user has not approved the MCP servers of "+offer.File) {
		t.Errorf("a call before the approval = %+v", res)
	}
	if st := h.Project(dir); !st.Offers() || st.Approved || len(st.States) != 0 {
		t.Errorf("Project before the approval = %+v", st)
	}

	offer.Approved = true
	offer.Start = []mcp.Server{{Name: "project-fake", Command: f.Command, Env: f.Env, Dir: dir}}
	src.set(offer)
	names := specNames(ex.Specs())
	if i := slices.Index(names, "mcp__project-fake__echo"); i < 0 || !slices.Contains(names[:i], "mcp__fake__echo") || !slices.IsSorted(names[i:]) {
		t.Errorf("Specs after the approval = %v, want the project's tools after the configured ones, in name order", names)
	}
	if names := specNames(elsewhere.Specs()); slices.ContainsFunc(names, isProjectTool) {
		t.Errorf("Specs of a session in another directory = %v, want no project tool", names)
	}
	if res := xcall(t, elsewhere, "mcp__project-fake__echo", `{}`); !res.IsError || !strings.Contains(res.Text, "this session's directory offers none") {
		t.Errorf("a call from another directory = %+v", res)
	}
	if res := xcall(t, ex, "mcp__project-fake__echo", `{"text":"hi"}`); res.IsError || res.Text != "hi" {
		t.Errorf("echo of the approved project server = %+v", res)
	}
	pid := xcall(t, ex, "mcp__project-fake__pid", `{}`).Text
	if cwd, err := os.Readlink("/proc/" + pid + "/cwd"); err != nil || cwd != dir {
		t.Errorf("the project server's working directory = %q (%v), want the project's, %s", cwd, err, dir)
	}
	if st := h.Project(dir); len(st.States) != 1 || st.States[0].Server != "project-fake" || st.States[0].State != MCPListed || st.States[0].Running != 1 {
		t.Errorf("Project after a call = %+v, want project-fake listed, one instance running", st)
	}
	if got := h.MCPStatuses(); len(got) != 1 || got[0].Server != "fake" {
		t.Errorf("MCPStatuses = %+v, want the configured server only", got)
	}

	offer.Approved, offer.Changed, offer.Sum, offer.Start = false, true, "s2", nil
	src.set(offer)
	if names := specNames(ex.Specs()); slices.ContainsFunc(names, isProjectTool) {
		t.Errorf("Specs after the file changed = %v, want no project tool", names)
	}
	if res := xcall(t, ex, "mcp__project-fake__echo", `{"text":"hi"}`); !res.IsError || !strings.Contains(res.Text, "changed since the user approved its MCP servers") {
		t.Errorf("a call after the file changed = %+v", res)
	}
	if inv := h.Inventory(t.Context(), "rt1")[0].Resources.MCP; len(inv) != 1 || inv[0].Server != "project-fake" || inv[0].State != tools.MCPRunning {
		t.Errorf("inventory after the file changed = %+v, want the running instance kept", inv)
	}
	h.Release("rt1")
	if inv := h.Inventory(t.Context(), "rt1")[0].Resources.MCP; len(inv) != 0 {
		t.Errorf("inventory after Release = %+v, want none", inv)
	}
}

func isProjectTool(name string) bool { return strings.HasPrefix(name, "mcp__project-") }
