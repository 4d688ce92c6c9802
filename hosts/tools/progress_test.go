package tools

import (
	"context"
	"io"
	"strings"
	"sync"
	"testing"
)

func TestProgressWriter(t *testing.T) {
	big := strings.Repeat("x", ProgressBytes)
	tests := []struct {
		name   string
		writes []string
		want   string
	}{
		{"small", []string{"abc", "def"}, "abcdef"},
		{"one big write", []string{"head", big + "end"}, big[3:] + "end"},
		{"many writes past the limit", []string{big, "1", "2"}, big[2:] + "12"},
		{"cut at a rune boundary", []string{strings.Repeat("é", ProgressBytes/2) + "z"}, strings.Repeat("é", ProgressBytes/2-1) + "z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			w := ProgressWriter(WithProgress(t.Context(), func(tail string) { got = append(got, tail) }), io.Discard)
			for _, s := range tt.writes {
				w.Write([]byte(s))
			}
			if len(got) != len(tt.writes) || got[len(got)-1] != tt.want {
				t.Errorf("reports %d, last %q; want %d, last %q", len(got), got[len(got)-1], len(tt.writes), tt.want)
			}
		})
	}
	if w := ProgressWriter(context.Background(), io.Discard); w != io.Discard {
		t.Error("without a reporter ProgressWriter must return the writer itself")
	}
}

// bash exec reports its output while it runs.
func TestBashExecReportsProgress(t *testing.T) {
	var mu sync.Mutex
	var last string
	ctx := WithProgress(t.Context(), func(tail string) { mu.Lock(); last = tail; mu.Unlock() })
	res := newTestBash(t, BashOptions{}).Call(ctx, "o1", []byte(`{"action":"exec","command":"echo one; echo two"}`))
	if res.IsError {
		t.Fatalf("exec: %s", res.Text)
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.HasSuffix(last, "two\n") {
		t.Errorf("last progress = %q, want the output so far", last)
	}
}
