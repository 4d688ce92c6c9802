package hosts

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"myco.dev/internal/needs"
)

// buildHello builds a tiny Go program for goos/goarch into path, with cgo as given.
func buildHello(t *testing.T, dir, path, goos, goarch, cgo string) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
		os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/hello\n\ngo 1.26\n"), 0o600)
		os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n\nimport \"os/user\"\n\nfunc main() { user.Current() }\n"), 0o600)
	}
	cmd := exec.Command("go", "build", "-o", path, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOOS="+goos, "GOARCH="+goarch, "CGO_ENABLED="+cgo, "GOFLAGS=")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build for %s/%s: %v\n%s", goos, goarch, err, out)
	}
}

// TestPickBinary: the binary sent to a remote is one of its platform, read from the
// executable's header, and static on Linux; the release binaries beside the running one
// are candidates; none that fits is a refusal that says how to make one.
func TestPickBinary(t *testing.T) {
	needs.Program(t, "gcc", "apt-get install -y gcc") // a cgo build, linked against glibc
	src, bin := t.TempDir(), t.TempDir()
	self := filepath.Join(bin, "myco")
	buildHello(t, src, self, "linux", "amd64", "1")
	buildHello(t, src, filepath.Join(bin, "myco-linux-arm64"), "linux", "arm64", "0")
	buildHello(t, src, filepath.Join(bin, "myco-darwin-arm64"), "darwin", "arm64", "0")
	os.WriteFile(filepath.Join(bin, "myco-linux-riscv64"), []byte("#!/bin/sh\n"), 0o755) // not an executable myco knows

	b, err := ReadBinary(self)
	if err != nil || b.GOOS != "linux" || b.GOARCH != "amd64" || b.Static {
		t.Fatalf("ReadBinary(cgo build) = %+v, %v; want linux/amd64, not static", b, err)
	}
	bins := Binaries(self)
	if len(bins) != 3 {
		t.Fatalf("Binaries = %+v, want the running one and the two release binaries", bins)
	}
	for _, tt := range []struct {
		goos, goarch, want, err string
	}{
		{"linux", "arm64", "myco-linux-arm64", ""},
		{"darwin", "arm64", "myco-darwin-arm64", ""},
		{"linux", "amd64", "", "linked against this machine's C library"},
		{"freebsd", "amd64", "", "no myco here is built for freebsd/amd64 (here: linux/amd64, darwin/arm64, linux/arm64)"},
	} {
		got, err := PickBinary(bins, self, tt.goos, tt.goarch)
		switch {
		case tt.err == "" && (err != nil || filepath.Base(got.Path) != tt.want):
			t.Errorf("PickBinary(%s/%s) = %+v, %v; want %s", tt.goos, tt.goarch, got, err, tt.want)
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err) || !strings.Contains(err.Error(), "make release")):
			t.Errorf("PickBinary(%s/%s) = %v, want a refusal saying %q and how to build one", tt.goos, tt.goarch, err, tt.err)
		}
	}
	static := filepath.Join(bin, "myco-static")
	buildHello(t, src, static, "linux", "amd64", "0")
	if got, err := PickBinary(Binaries(static), static, "linux", "amd64"); err != nil || got.Path != static {
		t.Errorf("PickBinary of a static running binary = %+v, %v; want it", got, err)
	}
}
