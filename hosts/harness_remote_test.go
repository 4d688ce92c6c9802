package hosts

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"myco.dev/agent/model"
	"myco.dev/hosts/tools"
	"myco.dev/internal/sshdtest"
)

// tinyPNG is a 1x1 PNG.
var tinyPNG, _ = base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")

// newRemoteHarness returns a harness with the real local tools and one remote, devbox,
// reached through o.SSH.
func newRemoteHarness(t testing.TB, spec RemoteSpec, o RemoteOptions) *Harness {
	t.Helper()
	std := []tools.Tool{
		tools.NewBash(tools.BashOptions{}),
		tools.NewEditor(tools.EditorOptions{}),
		tools.NewImage(tools.ImageOptions{MaxBase64Bytes: o.MaxImageBase64Bytes}),
	}
	if spec.Alias == "" {
		spec.Alias = "devbox"
	}
	if spec.Command == nil {
		spec.Command = []string{mycoBin, "--host-dir", sshdtest.NewDaemonDir(t)}
	}
	h, err := NewHarness(Options{Tools: std, Remotes: []RemoteSpec{spec}, Remote: o, Log: testLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		h.Close()
		for _, tl := range std {
			if c, ok := tl.(interface{ Close() }); ok {
				c.Close()
			}
		}
	})
	return h
}

func hcall(t *testing.T, ex *Executor, tool string, in map[string]any) model.ToolResult {
	t.Helper()
	b, _ := json.Marshal(in)
	return ex.Call(t.Context(), model.ToolCall{ID: "c", Name: tool, Input: b})
}

// runToolSuite drives bash, the editor and view_image on host through the harness; the
// same suite runs against local and against a remote.
func runToolSuite(t *testing.T, ex *Executor, host, dir string) {
	t.Helper()
	file := filepath.Join(dir, "notes.txt")
	img := filepath.Join(dir, "shot.bin")
	if err := os.WriteFile(img, tinyPNG, 0o644); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		tool string
		in   map[string]any
		want string
	}{
		{"bash", map[string]any{"command": "echo hello from $0"}, "hello from"},
		{"str_replace_based_edit_tool", map[string]any{"command": "create", "path": file, "file_text": "one\ntwo\n"}, ""},
		{"str_replace_based_edit_tool", map[string]any{"command": "view", "path": file}, "two"},
		{"str_replace_based_edit_tool", map[string]any{"command": "str_replace", "path": file, "old_str": "two", "new_str": "three"}, ""},
		{"bash", map[string]any{"command": "cat " + file}, "three"},
		{"bash", map[string]any{"action": "start", "command": "bash --noprofile --norc"}, "session_id: b1"},
		{"bash", map[string]any{"action": "write", "session_id": "b1", "input": "echo in-session\n"}, "in-session"},
	}
	for _, s := range steps {
		s.in["host"] = host
		res := hcall(t, ex, s.tool, s.in)
		if res.IsError || !strings.Contains(res.Text, s.want) {
			t.Fatalf("%s %v on %s = %q (error %v), want %q", s.tool, s.in, host, res.Text, res.IsError, s.want)
		}
	}
	res := hcall(t, ex, "view_image", map[string]any{"path": img, "host": host})
	if res.IsError || len(res.Images) != 1 || res.Images[0].MediaType != "image/png" {
		t.Fatalf("view_image on %s = %+v, want one png", host, res)
	}
}

func TestHarnessRemoteSuite(t *testing.T) {
	h := newRemoteHarness(t, RemoteSpec{}, testRemoteOptions(t))
	if got := h.Hosts(); !slices.Equal(got, []string{"local", "devbox"}) {
		t.Fatalf("Hosts = %v", got)
	}
	if s := string(h.Specs()[0].Schema); !strings.Contains(s, `"enum":["local","devbox"]`) {
		t.Errorf("bash schema lacks the host enum: %s", s)
	}
	for _, host := range []string{"local", "devbox"} {
		t.Run(host, func(t *testing.T) { runToolSuite(t, h.For("rt-"+host), host, t.TempDir()) })
	}
}

func TestHarnessSessionsArePerHost(t *testing.T) {
	h := newRemoteHarness(t, RemoteSpec{}, testRemoteOptions(t))
	ex := h.For("rt1")
	if res := hcall(t, ex, "bash", map[string]any{"action": "start", "command": "exec cat"}); res.IsError {
		t.Fatal(res.Text)
	}
	res := hcall(t, ex, "bash", map[string]any{"action": "read", "session_id": "b1", "host": "devbox"})
	if !res.IsError || !strings.HasPrefix(res.Text, "host devbox: ") || !strings.Contains(res.Text, `"b1" is unknown`) {
		t.Errorf("reading local's b1 on devbox = %q, want the per-host error naming devbox", res.Text)
	}
	if res := hcall(t, ex, "bash", map[string]any{"action": "read", "session_id": "b1"}); res.IsError {
		t.Errorf("reading b1 on local = %q", res.Text)
	}
	res = hcall(t, ex, "bash", map[string]any{"command": "true", "host": "nowhere"})
	if !res.IsError || !strings.Contains(res.Text, "local, devbox") {
		t.Errorf("unknown host = %q, want the known hosts", res.Text)
	}
}

func TestHarnessRootOnlyRejectedRemotely(t *testing.T) {
	meta := &echoTool{name: "session_meta"}
	h, err := NewHarness(Options{Root: []tools.Tool{meta}, Remotes: []RemoteSpec{{Alias: "devbox"}}, Remote: RemoteOptions{MaxImageBase64Bytes: 1}})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	res := h.For("rt1").Call(t.Context(), model.ToolCall{ID: "c", Name: "session_meta", Input: json.RawMessage(`{"host":"devbox"}`)})
	if !res.IsError || !strings.Contains(res.Text, "root-only") || len(meta.got) != 0 {
		t.Errorf("root-only on devbox = %+v, tool saw %v", res, meta.got)
	}
	if st := h.Remote("devbox").Status(); st.State != StateLazy {
		t.Errorf("a rejected call touched the remote: %+v", st)
	}
}

func TestHarnessInventoryAndRelease(t *testing.T) {
	h := newRemoteHarness(t, RemoteSpec{}, testRemoteOptions(t))
	ex := h.For("rt1")
	hcall(t, ex, "bash", map[string]any{"action": "start", "command": "exec cat"})
	inv := h.Inventory(t.Context(), "rt1")
	if len(inv) != 2 || inv[0].Host != "local" || !hasBash(inv[0], "b1") || !inv[1].LastKnown {
		t.Fatalf("Inventory = %+v, want local's b1 and devbox last-known (lazy)", inv)
	}
	if st := h.Remote("devbox").Status(); st.State != StateLazy {
		t.Fatalf("Inventory connected devbox: %+v", st)
	}
	hcall(t, ex, "bash", map[string]any{"action": "start", "command": "exec cat", "host": "devbox"})
	inv = h.Inventory(t.Context(), "rt1")
	if inv[1].LastKnown || !hasBash(inv[1], "b1") {
		t.Fatalf("devbox inventory = %+v", inv[1])
	}
	h.Release("rt1")
	for _, host := range []string{"local", "devbox"} {
		if res := hcall(t, ex, "bash", map[string]any{"action": "list", "host": host}); !strings.Contains(res.Text, "no bash sessions") {
			t.Errorf("list on %s after Release = %q", host, res.Text)
		}
	}
}

func TestHarnessRejectsBadRemotes(t *testing.T) {
	for _, o := range []Options{
		{Remotes: []RemoteSpec{{Alias: "local"}}, Remote: RemoteOptions{MaxImageBase64Bytes: 1}},
		{Remotes: []RemoteSpec{{Alias: "a"}, {Alias: "a"}}, Remote: RemoteOptions{MaxImageBase64Bytes: 1}},
		{Remotes: []RemoteSpec{{Alias: "a"}}},
	} {
		if _, err := NewHarness(o); err == nil {
			t.Errorf("NewHarness(%+v) accepted it", o.Remotes)
		}
	}
}

// TestHarnessImageLimitPerCall: the hosts run with the largest cap of the catalog (here
// the launch model's), and each call is held to the cap of the session's current model,
// carried in its ctx: after a switch to a smaller model, view_image of an image between the
// two caps is refused, on local by the tool and on a remote by the controller, with the
// sizes, the cap and the model; a switch back lets it through.
func TestHarnessImageLimitPerCall(t *testing.T) {
	h := newRemoteHarness(t, RemoteSpec{}, testRemoteOptions(t)) // 1 MiB, the launch model's cap
	ex := h.For("rt1")
	img := filepath.Join(t.TempDir(), "mid.png")
	if err := os.WriteFile(img, append(append([]byte(nil), tinyPNG...), make([]byte, 3000)...), 0o644); err != nil {
		t.Fatal(err)
	}
	b64 := tools.Base64Len(int64(len(tinyPNG) + 3000))
	launch := tools.ImageLimit{MaxBase64Bytes: 1 << 20, Model: "big"}
	small := tools.ImageLimit{MaxBase64Bytes: 3000, Model: "small"}
	for _, host := range []string{"local", "devbox"} {
		t.Run(host, func(t *testing.T) {
			view := func(l tools.ImageLimit) model.ToolResult {
				b, _ := json.Marshal(map[string]any{"path": img, "host": host})
				return ex.Call(tools.WithImageLimit(t.Context(), l), model.ToolCall{ID: "c", Name: "view_image", Input: b})
			}
			if res := view(launch); res.IsError || len(res.Images) != 1 {
				t.Fatalf("view under the launch model = %+v, want the image", res)
			}
			res := view(small)
			want := fmt.Sprintf("is %d bytes of base64 (about %d bytes on disk), over the limit of the current model small: max_image_base64_bytes = 3000", b64, b64/4*3)
			if !res.IsError || len(res.Images) != 0 || !strings.Contains(res.Text, img+" "+want) || !strings.Contains(res.Text, "Scale it down or crop it") {
				t.Errorf("view after the switch to the small model = %+v, want a refusal %q", res, want)
			}
			if host != "local" && !strings.HasPrefix(res.Text, "host devbox: ") {
				t.Errorf("the remote refusal = %q, want it to name the host", res.Text)
			}
			if res := view(launch); res.IsError || len(res.Images) != 1 {
				t.Errorf("view after the switch back = %+v, want the image", res)
			}
		})
	}
}

// hasBash reports whether inv lists bash session id.
func hasBash(inv Inventory, id string) bool {
	return slices.ContainsFunc(inv.Resources.Bash, func(s tools.BashSessionInfo) bool { return s.ID == id })
}

// TestHarnessWorkDirLocalOnly: a call's session directory (tools.WithWorkDir) is where
// local bash starts; a remote host's bash starts where its host process does, as before.
func TestHarnessWorkDirLocalOnly(t *testing.T) {
	h := newRemoteHarness(t, RemoteSpec{}, testRemoteOptions(t))
	ex := h.For("rt1")
	proj := t.TempDir()
	pwd := func(host string) model.ToolResult {
		b, _ := json.Marshal(map[string]any{"command": "pwd", "host": host})
		return ex.Call(tools.WithWorkDir(t.Context(), proj), model.ToolCall{ID: "c", Name: "bash", Input: b})
	}
	if res := pwd("local"); res.IsError || res.Text != proj+"\n[exit status 0]" {
		t.Errorf("pwd on local = %q, want %s", res.Text, proj)
	}
	if res := pwd("devbox"); res.IsError || strings.Contains(res.Text, proj) {
		t.Errorf("pwd on devbox = %q, want the host process's directory, not the session's", res.Text)
	}
}
