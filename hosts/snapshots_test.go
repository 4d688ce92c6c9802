package hosts

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"myco.dev/hosts/snapshot"
	"myco.dev/internal/sshdtest"
)

// TestHarnessSnapshots: the harness captures, diffs, restores and prunes a directory in the
// local store and, through `myco --mode host` and its daemon, in the remote host's store;
// an unknown snapshot is snapshot.ErrNotFound on both, and a harness without a local store
// says so.
func TestHarnessSnapshots(t *testing.T) {
	store, err := snapshot.Open(snapshot.Options{Dir: filepath.Join(t.TempDir(), "snaps")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	state := t.TempDir()
	spec := RemoteSpec{Alias: "devbox", Command: []string{"env", "XDG_STATE_HOME=" + state, mycoBin, "--host-dir", sshdtest.NewDaemonDir(t)}}
	h, err := NewHarness(Options{Remotes: []RemoteSpec{spec}, Remote: testRemoteOptions(t), Snapshots: store, Log: testLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	for _, host := range []string{Local, "devbox"} {
		t.Run(host, func(t *testing.T) {
			dir := t.TempDir()
			file := filepath.Join(dir, "a.txt")
			os.WriteFile(file, []byte("one\n"), 0o644)
			before, err := h.Capture(t.Context(), host, snapshot.CaptureRequest{Owner: "s1", Dir: dir})
			if err != nil {
				t.Fatalf("Capture before: %v", err)
			}
			os.WriteFile(file, []byte("two\n"), 0o644)
			os.Chmod(file, 0o755)
			after, err := h.Capture(t.Context(), host, snapshot.CaptureRequest{Owner: "s1", Dir: dir, Watch: true})
			if err != nil {
				t.Fatalf("Capture after: %v", err)
			}
			if after.Listed != 1 {
				t.Errorf("Capture with the watch listed %d directories, want 1 (the one changed)", after.Listed)
			}
			d, err := h.Diff(t.Context(), host, before.ID, after.ID, snapshot.DiffOptions{})
			if err != nil || len(d.Changes) != 1 || d.Changes[0].Path != "a.txt" || d.Changes[0].After.Mode != 0o755 {
				t.Fatalf("Diff = %+v, %v; want a.txt modified, made executable", d, err)
			}
			res, err := h.Restore(t.Context(), host, snapshot.RestoreRequest{From: after.ID, To: before.ID})
			if err != nil || !slices.Equal(res.Restored, []snapshot.Path{"a.txt"}) {
				t.Fatalf("Restore = %+v, %v", res, err)
			}
			if b, _ := os.ReadFile(file); string(b) != "one\n" {
				t.Errorf("a.txt after the restore = %q, want one", b)
			}
			// The host's watch saw the restore, and then nothing.
			for _, want := range []int{1, 0} {
				again, err := h.Capture(t.Context(), host, snapshot.CaptureRequest{Owner: "s1", Dir: dir, Watch: true})
				if err != nil || again.ID != before.ID || again.Listed != want {
					t.Errorf("Capture with the watch after the restore = %+v, %v; want %s, %d listed", again, err, before.ID, want)
				}
			}
			if _, err := h.Diff(t.Context(), host, before.ID, snapshot.ID(strings.Repeat("1", 64)), snapshot.DiffOptions{}); !errors.Is(err, snapshot.ErrNotFound) {
				t.Errorf("Diff of an unknown snapshot: %v, want ErrNotFound", err)
			}
			if pr, err := h.Prune(t.Context(), host, "s1", []snapshot.ID{before.ID}); err != nil && !errors.Is(err, snapshot.ErrBusy) || pr.Dropped != 1 {
				t.Errorf("Prune = %+v, %v; want one dropped", pr, err)
			}
		})
	}
	// The remote's working directory, when the capture names none.
	res, err := h.Capture(t.Context(), "devbox", snapshot.CaptureRequest{Owner: "s1", MaxFiles: 1_000_000})
	if want := h.Remote("devbox").Status().Hello.Dir; err != nil && !errors.Is(err, snapshot.ErrTooLarge) || res.Dir != want && err == nil {
		t.Errorf("Capture without a directory = %+v, %v; want %s", res, err, want)
	}
	if _, err := h.Capture(t.Context(), "nowhere", snapshot.CaptureRequest{Owner: "s1", Dir: t.TempDir()}); err == nil || !strings.Contains(err.Error(), "devbox") {
		t.Errorf("Capture on an unknown host: %v, want an error naming the known hosts", err)
	}
	bare, err := NewHarness(Options{Log: testLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bare.Capture(t.Context(), Local, snapshot.CaptureRequest{Owner: "s1", Dir: t.TempDir()}); !errors.Is(err, ErrNoSnapshots) {
		t.Errorf("Capture without a local store: %v, want ErrNoSnapshots", err)
	}
	if n, err := h.SnapshotSize(); err != nil || n <= 0 {
		t.Errorf("SnapshotSize = %d, %v", n, err)
	}
}
