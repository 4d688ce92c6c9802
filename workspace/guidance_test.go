package workspace

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
)

func TestGuidanceBlock(t *testing.T) {
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(root, "svc", "api")
	write(t, filepath.Join(root, "AGENTS.md"), "root agents")
	write(t, filepath.Join(root, "CLAUDE.md"), "root claude")
	write(t, filepath.Join(sub, "CLAUDE.md"), "sub claude")
	write(t, filepath.Join(sub, "AGENTS.md"), "  \n") // empty: skipped

	got := GuidanceBlock(sub)
	order := []string{"# Project Guidance", "[project guidance " + filepath.Join(root, "AGENTS.md") + "]\nroot agents", "[project guidance " + filepath.Join(root, "CLAUDE.md") + "]\nroot claude", "[project guidance " + filepath.Join(sub, "CLAUDE.md") + "]\nsub claude"}
	at := -1
	for _, s := range order {
		i := strings.Index(got, s)
		if i <= at {
			t.Fatalf("GuidanceBlock: %q missing or out of order in\n%s", s, got)
		}
		at = i
	}
	if strings.Contains(got, filepath.Join(sub, "AGENTS.md")) {
		t.Error("an empty guidance file was included")
	}
	// At the git root itself each file appears once.
	if got := GuidanceBlock(root); strings.Count(got, "root agents") != 1 {
		t.Errorf("GuidanceBlock(root) repeats files:\n%s", got)
	}
	if got := GuidanceBlock(t.TempDir()); got != "" {
		t.Errorf("GuidanceBlock without files = %q, want empty", got)
	}
	// A long file is cut with a marker that says where the rest is.
	write(t, filepath.Join(sub, "AGENTS.md"), strings.Repeat("x", maxGuidanceBytes+10))
	if got := GuidanceBlock(sub); !strings.Contains(got, "cut at 65536 bytes; read the rest of "+filepath.Join(sub, "AGENTS.md")) {
		t.Error("a long guidance file was not cut with a marker")
	}
}

func TestExportManual(t *testing.T) {
	manual := fstest.MapFS{
		"configuration.md": {Data: []byte("# Configuration\nkeys")},
		"hosts.md":         {Data: []byte("# Remote hosts\n")},
		"docs.go":          {Data: []byte("package docs")},
	}
	dir := filepath.Join(t.TempDir(), "manual")
	write(t, filepath.Join(dir, "stale.md"), "from an older version")
	write(t, filepath.Join(dir, "keep.txt"), "not ours")
	write(t, filepath.Join(dir, "hosts.md"), "edited by hand")
	if err := ExportManual(manual, dir); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"configuration.md": "# Configuration\nkeys", "hosts.md": "# Remote hosts\n", "keep.txt": "not ours"} {
		if b, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(b) != want {
			t.Errorf("%s = %q, %v; want %q", name, b, err, want)
		}
	}
	for _, gone := range []string{"stale.md", "docs.go"} {
		if _, err := os.Stat(filepath.Join(dir, gone)); err == nil {
			t.Errorf("%s is in the exported manual", gone)
		}
	}
	block := ManualBlock(manual, dir)
	if !strings.Contains(block, "- "+filepath.Join(dir, "configuration.md")+": Configuration\n- "+filepath.Join(dir, "hosts.md")+": Remote hosts\n") {
		t.Errorf("ManualBlock =\n%s", block)
	}
}
