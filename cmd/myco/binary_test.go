package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// binary builds the real myco binary once per test run.
func binary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "myco-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "myco")
		out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			buildErr = &buildError{err: err, out: out}
		}
	})
	if buildErr != nil {
		t.Fatalf("build myco: %v", buildErr)
	}
	return binPath
}

type buildError struct {
	err error
	out []byte
}

func (e *buildError) Error() string { return e.err.Error() + "\n" + string(bytes.TrimSpace(e.out)) }

// profileHome writes a MYCO_HOME whose default profile points one model at url.
func profileHome(t testing.TB, protocol, url, extra string) string {
	t.Helper()
	home := t.TempDir()
	dir := filepath.Join(home, "profiles", "default")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := "[models.m]\nprotocol = \"" + protocol + "\"\nbase_url = \"" + url + "\"\ncontext_window = 100000\n" + extra
	if !strings.Contains(extra, "[approvals]") {
		// The tests of other features run in full mode, myco's behaviour before modes
		// (issue 31): their commands write where they like. The modes' own tests set
		// [approvals] (an empty table: the default mode).
		cfg += "\n[approvals]\nmode = \"full\"\n"
	}
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return home
}
