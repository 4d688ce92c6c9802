package lineedit

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// entries returns h's entries, newest first, as the editor sees them.
func entries(h *History) []string {
	var out []string
	for i := range h.Len() {
		out = append(out, h.At(i))
	}
	return out
}

func TestHistoryKeptAcrossRuns(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cli-history")
	h, err := OpenHistory(path, 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []string{"first", "two\nlines", "two\nlines", "a\ttab", " secret", "  ", "", "last \x1b]0;x\x07"} {
		if err := h.Append(e); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"last \x1b]0;x\x07", "a" + Tab + "tab", "two" + Newline + "lines", "first"}
	if got := entries(h); !slices.Equal(got, want) {
		t.Errorf("entries = %q, want %q (no repeat, no leading space, no blank)", got, want)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("mode = %v, want 0600", st.Mode().Perm())
	}
	h2, err := OpenHistory(path, 100)
	if err != nil {
		t.Fatal(err)
	}
	if got := entries(h2); !slices.Equal(got, want) {
		t.Errorf("entries after reopening = %q, want %q", got, want)
	}
}

func TestHistoryBounded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cli-history")
	h, err := OpenHistory(path, 3)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range strings.Fields("a b c d e f g h i j") {
		if err := h.Append(e); err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(path)
		if n := strings.Count(string(b), "\n"); n > 6 {
			t.Fatalf("after %s the file has %d lines, want at most 6", e, n)
		}
	}
	if got, want := entries(h), []string{"j", "i", "h"}; !slices.Equal(got, want) {
		t.Errorf("entries = %q, want %q", got, want)
	}
	h2, err := OpenHistory(path, 3)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := entries(h2), []string{"j", "i", "h"}; !slices.Equal(got, want) {
		t.Errorf("entries after reopening = %q, want %q", got, want)
	}
}

func TestHistoryFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "cli-history")
	long := strings.Repeat("x", MaxEntry+1)
	if err := os.WriteFile(path, []byte("\"old\"\nnot json\n\n\"kept\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h, err := OpenHistory(path, 10)
	if err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Errorf("mode = %v, want the file made private (0600)", st.Mode().Perm())
	}
	if got, want := entries(h), []string{"kept", "old"}; !slices.Equal(got, want) {
		t.Errorf("entries = %q, want %q (lines that are not JSON strings skipped)", got, want)
	}
	if err := h.Append(long); err != nil {
		t.Fatal(err)
	}
	if h.Len() != 3 {
		t.Errorf("Len = %d, want the long entry recalled in this run", h.Len())
	}
	if b, _ := os.ReadFile(path); strings.Contains(string(b), "xxxx") {
		t.Error("an entry longer than MaxEntry was saved")
	}
	if _, err := OpenHistory(path, 0); err == nil {
		t.Error("OpenHistory with size 0: no error")
	}
	if _, err := OpenHistory(dir, 10); err == nil {
		t.Error("OpenHistory of a directory: no error")
	}
}
