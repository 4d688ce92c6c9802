package views

import "testing"

func TestContextMeter(t *testing.T) {
	for _, tt := range []struct {
		used, window int
		want         string
	}{
		{72_000, 200_000, "72k of 200k tokens (36%)"},
		{0, 200_000, "0 of 200k tokens (0%)"},
		{950, 32_768, "950 of 32k tokens (3%)"},
		{7_250, 32_768, "7.2k of 32k tokens (22%)"},
		{123_456, 1_000_000, "123k of 1M tokens (12%)"},
		{1_250_000, 2_000_000, "1.2M of 2M tokens (63%)"},
	} {
		if got := ContextMeter(tt.used, tt.window); got != tt.want {
			t.Errorf("ContextMeter(%d, %d) = %q, want %q", tt.used, tt.window, got, tt.want)
		}
	}
}
