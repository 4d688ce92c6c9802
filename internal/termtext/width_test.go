package termtext

import (
	"slices"
	"testing"
)

func TestWidth(t *testing.T) {
	for _, tt := range []struct {
		s    string
		want int
	}{
		{"", 0},
		{"abc", 3},
		{"héllo", 5},
		{"e\u0301", 1},  // e and a combining acute accent
		{"日本語", 6},      // wide
		{"ｈｉ", 4},       // fullwidth
		{"한국", 4},       // Hangul syllables
		{"ok ✅", 5},     // an emoji shown wide
		{"a\u200bb", 2}, // a zero-width space
		{"→ ← │ …", 7},
		{`\x1b`, 4}, // an escape, as Safe writes it
	} {
		if got := Width(tt.s); got != tt.want {
			t.Errorf("Width(%q) = %d, want %d", tt.s, got, tt.want)
		}
	}
	if !slices.IsSortedFunc(wideRanges, func(a, b [2]rune) int { return int(a[0] - b[0]) }) {
		t.Error("wideRanges is not sorted")
	}
	for i, r := range wideRanges {
		if r[0] > r[1] || i > 0 && wideRanges[i-1][1] >= r[0] {
			t.Errorf("wideRanges[%d] = %x overlaps or is reversed", i, r)
		}
	}
}

func TestCut(t *testing.T) {
	for _, tt := range []struct {
		s    string
		n    int
		want string
	}{
		{"hello", 5, "hello"},
		{"hello", 4, "hel…"},
		{"hello", 1, "…"},
		{"hello", 0, ""},
		{"日本語", 5, "日本…"},
		{"日本語", 4, "日…"}, // a wide character that would cross the edge goes
		{"e\u0301e\u0301e\u0301", 2, "e\u0301…"},
	} {
		got := Cut(tt.s, tt.n)
		if got != tt.want {
			t.Errorf("Cut(%q, %d) = %q, want %q", tt.s, tt.n, got, tt.want)
		}
		if Width(got) > max(tt.n, 0) {
			t.Errorf("Cut(%q, %d) = %q is %d columns wide", tt.s, tt.n, got, Width(got))
		}
	}
}

func TestExpandTabs(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"no tabs", "no tabs"},
		{"\tx", "        x"},
		{"ab\tc", "ab      c"},
		{"日本\tx", "日本    x"},
		{"12345678\tx", "12345678        x"},
	} {
		if got := ExpandTabs(tt.in); got != tt.want {
			t.Errorf("ExpandTabs(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func FuzzCut(f *testing.F) {
	f.Add("日本語 text\u0301", 5)
	f.Fuzz(func(t *testing.T, s string, n int) {
		n %= 200
		got := Cut(s, n)
		if Width(got) > max(n, 0) {
			t.Fatalf("Cut(%q, %d) = %q, %d columns", s, n, got, Width(got))
		}
	})
}
