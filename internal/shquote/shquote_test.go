package shquote

import (
	"os/exec"
	"testing"
)

// TestQuote: a quoted word reaches the shell as itself, whatever it holds.
func TestQuote(t *testing.T) {
	for _, s := range []string{"plain", "a b", "it's", "$(rm -rf /)", "`x`", "a\nb", "", "-flag", "x;y|z&", `back\slash`, "~root"} {
		out, err := exec.Command("sh", "-c", "printf %s "+Quote(s)).Output()
		if err != nil || string(out) != s {
			t.Errorf("sh got %q (%v) for Quote(%q) = %s", out, err, s, Quote(s))
		}
	}
	for _, tt := range []struct{ in, want string }{
		{"plain", "plain"}, {"user@host:/a/b", "user@host:/a/b"}, {"a b", "'a b'"}, {"it's", `'it'\''s'`},
	} {
		if got := Quote(tt.in); got != tt.want {
			t.Errorf("Quote(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
	if got := Path("~/.local/bin/my co"); got != "~/'.local/bin/my co'" {
		t.Errorf("Path = %s", got)
	}
	if got := Path("~/"); got != "'~/'" {
		t.Errorf("Path(~/) = %s", got)
	}
}
