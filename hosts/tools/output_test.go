package tools

import (
	"context"
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
		{"exactly both ends", []string{"0123456789"}, "0123456789"},
		{"omitted", []string{"0123456789", "abcdefgh"}, "01234\n[... 8 bytes omitted; output was 18 bytes, showing the first and last 5 ...]\ndefgh"},
		{"many small writes", strings.Split("0123456789abcdefghij", ""), "01234\n[... 10 bytes omitted; output was 20 bytes, showing the first and last 5 ...]\nfghij"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHeadTail(5)
			for _, w := range tt.writes {
				h.Write([]byte(w))
			}
			if got := h.String(); got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
		})
	}
}

func contextWithCancel(t *testing.T) (context.Context, context.CancelFunc) {
	return context.WithCancel(t.Context())
}
