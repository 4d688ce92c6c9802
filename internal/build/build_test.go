package build

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestString(t *testing.T) {
	for _, tt := range []struct {
		name string
		info Info
		want string
	}{
		{"clean", Info{Version: "0.1.0", Module: "v0.0.0-20261204173755-00964be86f35", Revision: "00964be86f3518cc54d00178d57eccb12333d634", ID: "3f2a9c0d1e4b"},
			"0.1.0 (module v0.0.0-20261204173755-00964be86f35, revision 00964be86f35, build 3f2a9c0d1e4b)"},
		{"modified", Info{Version: "0.1.0", Module: "v0.0.0-20261204173755-00964be86f35+dirty", Revision: "00964be86f3518cc", Modified: true, ID: "aa"},
			"0.1.0 (module v0.0.0-20261204173755-00964be86f35+dirty, revision 00964be86f35, modified, build aa)"},
		{"no vcs", Info{Version: "0.1.0-dev", Module: "(devel)", ID: "bb"}, "0.1.0-dev (module (devel), no VCS revision, build bb)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.info.String(); got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestID: the identity comes from the Go build ID, which `go tool buildid` reads too, and
// differs between two builds of the same source with different link flags; a file that is
// not a Go ELF binary is known by its content.
func TestID(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "go.mod"), "module example.com/hello\n\ngo 1.26\n")
	writeFile(t, filepath.Join(dir, "main.go"), "package main\n\nvar note = \"a\"\n\nfunc main() { println(note) }\n")
	build := func(name string, ldflags string) string {
		out := filepath.Join(dir, name)
		cmd := exec.Command("go", "build", "-ldflags="+ldflags, "-o", out, ".")
		cmd.Dir = dir
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build: %v\n%s", err, b)
		}
		return out
	}
	a, b := build("a", "-X main.note=a"), build("b", "-X main.note=b")
	buildID, err := exec.Command("go", "tool", "buildid", a).Output()
	if err != nil {
		t.Fatal(err)
	}
	head, _ := os.ReadFile(a)
	if got, want := elfBuildID(head[:min(len(head), prefix)]), strings.TrimSpace(string(buildID)); got != want {
		t.Errorf("elfBuildID = %q, want what go tool buildid says, %q", got, want)
	}
	if ID(a) == ID(b) || len(ID(a)) != 12 {
		t.Errorf("ID = %q and %q, want two different 12-digit identities", ID(a), ID(b))
	}
	if ID(a) != ID(a) {
		t.Error("ID of one file differs between two reads")
	}
	text := filepath.Join(dir, "main.go")
	if id := ID(text); id == "unknown" || id == ID(a) {
		t.Errorf("ID(main.go) = %q, want one of its content", id)
	}
	if id := ID(filepath.Join(dir, "missing")); id != "unknown" {
		t.Errorf("ID(missing) = %q, want unknown", id)
	}
}

// BenchmarkID measures what --mode host pays at start for its identity: the Go build ID
// read from this test binary's first 32 KiB, and, for comparison, a hash of the whole
// executable, the fallback.
func BenchmarkID(b *testing.B) {
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	b.Run("buildid", func(b *testing.B) {
		for b.Loop() {
			ID(exe)
		}
	})
	b.Run("whole-file", func(b *testing.B) {
		data, _ := os.ReadFile(exe)
		b.SetBytes(int64(len(data)))
		path := filepath.Join(b.TempDir(), "x")
		writeFile(b, path, "not elf"+string(data))
		for b.Loop() {
			ID(path)
		}
	})
}

func writeFile(t testing.TB, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestRelease: the release version is the one a build sets, else a release tag the go
// command stamped as the module's version, else dev; a pseudo-version is no release.
func TestRelease(t *testing.T) {
	for _, tt := range []struct{ version, module, want string }{
		{"0.3.0", "v0.0.0-20261204173755-00964be86f35", "0.3.0"},
		{"", "v0.2.0", "0.2.0"},
		{"", "v0.2.0+dirty", "0.2.0"},
		{"", "v0.3.0-rc.1", "0.3.0-rc.1"},
		{"", "v0.0.0-20261204173755-00964be86f35", "dev"},
		{"", "v0.2.1-0.20261204173755-00964be86f35+dirty", "dev"},
		{"", "(devel)", "dev"},
		{"", "", "dev"},
	} {
		if got := Release(tt.version, tt.module); got != tt.want {
			t.Errorf("Release(%q, %q) = %q, want %q", tt.version, tt.module, got, tt.want)
		}
	}
}
