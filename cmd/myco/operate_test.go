package main

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestHealthAndPprof: /healthz at the server's root answers 200 with the build and each
// profile worker's state; with --pprof, Go's profiler answers at the root (the
// supervisor) and under the profile (its worker), and without it neither does.
func TestHealthAndPprof(t *testing.T) {
	home := profileHome(t, "anthropic-messages", "http://127.0.0.1:9/", "")
	get := func(url string) (int, string) {
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	_, u, _ := startServer(t, home, "--pprof")
	root := u[:strings.Index(u, "/profiles/")]
	code, body := get(root + "/healthz")
	var h struct {
		Status, Version string
		Profiles        []struct {
			Profile string
			Running bool
			PID     int
		}
	}
	if err := json.Unmarshal([]byte(body), &h); code != 200 || err != nil || h.Status != "ok" || !strings.Contains(h.Version, "build ") ||
		len(h.Profiles) != 1 || h.Profiles[0].Profile != "default" || !h.Profiles[0].Running || h.Profiles[0].PID == 0 {
		t.Errorf("/healthz = %d %s (%v)", code, body, err)
	}
	if code, body := get(root + "/debug/pprof/heap?debug=1"); code != 200 || !strings.Contains(body, "heap profile") {
		t.Errorf("the supervisor's pprof = %d %.100q", code, body)
	}
	if code, body := get(u + "debug/pprof/goroutine?debug=1"); code != 200 || !strings.Contains(body, "goroutine profile") {
		t.Errorf("the worker's pprof = %d %.100q", code, body)
	}

	_, u2, _ := startServer(t, home)
	root2 := u2[:strings.Index(u2, "/profiles/")]
	if code, _ := get(root2 + "/debug/pprof/"); code != http.StatusNotFound {
		t.Errorf("pprof without --pprof = %d, want 404", code)
	}
	if code, _ := get(u2 + "debug/pprof/"); code != http.StatusNotFound {
		t.Errorf("the worker's pprof without --pprof = %d, want 404", code)
	}
}
