package tools

import (
	"strings"
	"testing"
)

func TestHeadTail(t *testing.T) {
	tests := []struct {
		name   string
		writes []string
		want   string
	}{
		{"small", []string{"abc", "def"}, "abcdef"},
		{"exactly the limit", []string{"0123456789"}, "0123456789"},
		{"omitted", []string{"0123456789", "abcdefgh"}, "01234\n[... 8 bytes omitted ...]\ndefgh"},
		{"many small writes", strings.Split("0123456789abcdefghij", ""), "01234\n[... 10 bytes omitted ...]\nfghij"},
		{"one big write", []string{"0123456789abcdefghij"}, "01234\n[... 10 bytes omitted ...]\nfghij"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := &headTail{max: 10}
			for _, w := range tt.writes {
				h.Write([]byte(w))
			}
			if got := h.String(); got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestClip(t *testing.T) {
	tests := []struct {
		in    string
		limit int
		want  string
	}{
		{"short", 10, "short"},
		{"0123456789abcdefghij", 10, "01234\n[... 10 bytes omitted ...]\nfghij"},
		{"ééééééé", 6, "é\n[... 10 bytes omitted ...]\né"}, // cut at rune boundaries
	}
	for _, tt := range tests {
		if got := clip([]byte(tt.in), tt.limit); got != tt.want {
			t.Errorf("clip(%q, %d) = %q, want %q", tt.in, tt.limit, got, tt.want)
		}
	}
}
