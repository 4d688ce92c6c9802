package hostd

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"myco.dev/hosts/proto"
	"myco.dev/hosts/snapshot"
)

// TestDaemonSnapshots: the snapshot frames capture a directory in the host's store
// (opened on first use, its directory made), diff two captures, restore, size and prune,
// and a snapshot the store does not hold is an error with its code.
func TestDaemonSnapshots(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state", "myco", "snapshots", "box")
	d := NewDaemon(Options{Snapshots: state, Log: testLog(t)})
	t.Cleanup(d.Close)
	c := connect(t, d)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("one\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	capture := func(id uint64) snapshot.CaptureResult {
		t.Helper()
		c.send(t, proto.Msg{ID: id, Capture: &snapshot.CaptureRequest{Owner: "s1", Dir: dir}})
		m := c.read(t)
		if m.ID != id || m.Captured == nil {
			t.Fatalf("capture = %+v, want captured", m)
		}
		return *m.Captured
	}
	before := capture(1)
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("two\n"), 0o644)
	after := capture(2)

	c.send(t, proto.Msg{ID: 3, Diff: &proto.Diff{From: before.ID, To: after.ID}})
	if m := c.read(t); m.Diffed == nil || len(m.Diffed.Changes) != 1 || !strings.Contains(m.Diffed.Changes[0].Patch, "+two") {
		t.Fatalf("diff = %+v, want a.txt modified", m)
	}
	c.send(t, proto.Msg{ID: 4, Restore: &snapshot.RestoreRequest{From: after.ID, To: before.ID}})
	if m := c.read(t); m.Restored == nil || !slices.Equal(m.Restored.Restored, []snapshot.Path{"a.txt"}) || m.Restored.Error != "" {
		t.Fatalf("restore = %+v, want a.txt restored", m)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "a.txt")); string(b) != "one\n" {
		t.Errorf("a.txt after the restore = %q", b)
	}
	c.send(t, proto.Msg{ID: 5, Size: &struct{}{}})
	if m := c.read(t); m.Sized == nil || m.Sized.Bytes <= 0 {
		t.Fatalf("size = %+v", m)
	}
	c.send(t, proto.Msg{ID: 6, Prune: &proto.Prune{Owner: "s1", Keep: []snapshot.ID{before.ID}}})
	if m := c.read(t); m.Pruned == nil || m.Pruned.Dropped != 1 {
		t.Fatalf("prune = %+v, want one dropped", m)
	}
	c.send(t, proto.Msg{ID: 7, Diff: &proto.Diff{From: before.ID, To: snapshot.ID(strings.Repeat("0", 64))}})
	if m := c.read(t); m.Err == nil || m.Err.Code != proto.CodeNotFound {
		t.Fatalf("diff of an unknown snapshot = %+v, want an error coded %s", m, proto.CodeNotFound)
	}
	if info, err := os.Stat(state); err != nil || info.Mode().Perm() != 0o700 {
		t.Errorf("the store's directory: %v, %v; want it made, 0700", info, err)
	}
}

// TestDaemonNoSnapshotStore: a daemon without a store refuses the snapshot frames with
// their code, and goes on.
func TestDaemonNoSnapshotStore(t *testing.T) {
	d := NewDaemon(Options{Log: testLog(t)})
	t.Cleanup(d.Close)
	c := connect(t, d)
	c.send(t, proto.Msg{ID: 1, Size: &struct{}{}})
	if m := c.read(t); m.Err == nil || m.Err.Code != proto.CodeNoStore {
		t.Fatalf("size without a store = %+v, want an error coded %s", m, proto.CodeNoStore)
	}
	c.send(t, proto.Msg{ID: 2, Ping: &struct{}{}})
	if m := c.read(t); m.Pong == nil {
		t.Fatalf("ping after = %+v", m)
	}
}

func TestSnapshotDir(t *testing.T) {
	for _, tt := range []struct{ state, home, host, want string }{
		{"/st", "/home/me", "box", "/st/myco/snapshots/box"},
		{"", "/home/me", "box", "/home/me/.local/state/myco/snapshots/box"},
		{"rel", "/home/me", "box", "/home/me/.local/state/myco/snapshots/box"},
		{"", "/home/me", "", "/home/me/.local/state/myco/snapshots/host"},
		{"", "/home/me", "a/b", "/home/me/.local/state/myco/snapshots/host"},
		{"", "", "box", ""},
	} {
		if got := SnapshotDir(tt.state, tt.home, tt.host); got != tt.want {
			t.Errorf("SnapshotDir(%q, %q, %q) = %q, want %q", tt.state, tt.home, tt.host, got, tt.want)
		}
	}
}
