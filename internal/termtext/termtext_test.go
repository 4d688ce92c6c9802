package termtext

import "testing"

func TestSafe(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"plain text\nwith\ttabs", "plain text\nwith\ttabs"},
		{"héllo wörld ✓", "héllo wörld ✓"},
		{"x\x1b]0;pwned\x07", `x\x1b]0;pwned\x07`},
		{"\x1b]52;c;ZWNobyBoaQ==\x07", `\x1b]52;c;ZWNobyBoaQ==\x07`},
		{"\x1b[2J\x1b[H", `\x1b[2J\x1b[H`},
		{"over\rwrite", `over\x0dwrite`},
		{"c1 \u009b31m csi", `c1 \x9b31m csi`},
		{"raw \x9b byte", `raw \x9b byte`},
		{"del\x7f", `del\x7f`},
		{"bidi \u202egnp.exe", `bidi \u202egnp.exe`},
	} {
		if got := Safe(tt.in); got != tt.want {
			t.Errorf("Safe(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func FuzzSafe(f *testing.F) {
	f.Add("x\x1b]0;t\x07\r\n\u009b\xff")
	f.Fuzz(func(t *testing.T, s string) {
		out := Safe(s)
		if unsafeIndex(out) >= 0 {
			t.Fatalf("Safe(%q) = %q still holds a control character", s, out)
		}
	})
}

func BenchmarkSafeClean(b *testing.B) {
	s := "The quick brown fox jumps over the lazy dog. Ünïcödé too.\n"
	for b.Loop() {
		Safe(s)
	}
}
