package humanize

import (
	"testing"
	"time"
)

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
		{500, 0, "500 of 0 tokens (0%)"},
	} {
		if got := ContextMeter(tt.used, tt.window); got != tt.want {
			t.Errorf("ContextMeter(%d, %d) = %q, want %q", tt.used, tt.window, got, tt.want)
		}
	}
}

func TestThousands(t *testing.T) {
	for _, tt := range []struct {
		n    int
		want string
	}{
		{0, "0"}, {999, "999"}, {1000, "1,000"}, {123456, "123,456"}, {1000000, "1,000,000"}, {-1234, "-1,234"},
	} {
		if got := Thousands(tt.n); got != tt.want {
			t.Errorf("Thousands(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
}

func TestDuration(t *testing.T) {
	for _, tt := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0 ms"}, {12 * time.Millisecond, "12 ms"}, {1500 * time.Millisecond, "1.5 s"}, {125 * time.Second, "2m5s"},
	} {
		if got := Duration(tt.d); got != tt.want {
			t.Errorf("Duration(%v) = %q, want %q", tt.d, got, tt.want)
		}
	}
}

func TestCost(t *testing.T) {
	for _, tt := range []struct {
		amount float64
		known  bool
		want   string
	}{
		{0, true, "$0.00"},
		{0, false, "cost unknown"},
		{1.5, false, "cost unknown"},
		{0.4249, true, "$0.42"},
		{12.345, true, "$12.35"},
		{0.0031, true, "$0.0031"},
		{0.00031234, true, "$0.00031"},
		{0.01, true, "$0.01"},
		{0.008, true, "$0.008"},
	} {
		if got := Cost(tt.amount, tt.known); got != tt.want {
			t.Errorf("Cost(%g, %v) = %q, want %q", tt.amount, tt.known, got, tt.want)
		}
	}
}
