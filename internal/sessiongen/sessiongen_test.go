package sessiongen_test

import (
	"testing"

	"myco.dev/internal/sessiongen"
	"myco.dev/sessions"
)

// TestWrite: what it writes, package sessions loads: the metadata, every message, the
// turns' ends and the usage.
func TestWrite(t *testing.T) {
	dir := t.TempDir()
	ids, err := sessiongen.Write(dir, sessiongen.Options{Sessions: 3, Messages: 50, Dirs: []string{"/a", "/b"}})
	if err != nil {
		t.Fatal(err)
	}
	store := sessions.NewStore(dir)
	for _, id := range ids {
		s, err := store.Load(t.Context(), id)
		if err != nil {
			t.Fatalf("Load(%s): %v", id, err)
		}
		if n := len(s.Latest().Entries); n < 50 || s.Title == "" || s.Spent().Output == 0 {
			t.Errorf("session %s: %d messages, title %q, spent %+v", id, n, s.Title, s.Spent())
		}
	}
	list, err := store.List(t.Context())
	if err != nil || len(list) != 3 || list[0].Turns == 0 || list[0].Preview == "" {
		t.Errorf("List = %+v, %v", list, err)
	}
}
