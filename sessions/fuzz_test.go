package sessions

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzDecode feeds arbitrary files to the loader and its upgrade path. Whatever loads must
// survive a round trip through a version 5 log with the same threads and messages.
func FuzzDecode(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.session"))
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Decode("fuzz.session", data)
		if err != nil {
			return
		}
		for _, th := range s.Threads {
			_ = th.History()
			_ = th.Executable()
		}
		st := NewStore(t.TempDir())
		if !idPattern.MatchString(s.ID) {
			return
		}
		if _, err := st.rewrite(s.ID, wholeRecords(s)); err != nil {
			t.Fatalf("re-encode a loaded session: %v", err)
		}
		back, err := st.Load(t.Context(), s.ID)
		if err != nil {
			t.Fatalf("load a re-encoded session: %v", err)
		}
		if len(back.Threads) != len(s.Threads) {
			t.Fatalf("round trip: %d threads, want %d", len(back.Threads), len(s.Threads))
		}
		for i, th := range s.Threads {
			if len(back.Threads[i].Entries) != len(th.Entries) {
				t.Fatalf("round trip thread %s: %d messages, want %d", th.ID, len(back.Threads[i].Entries), len(th.Entries))
			}
		}
	})
}
