package main

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestHealthAndPprof: /healthz at the server's root answers 200 with the build and each
// profile worker's state; with --pprof, Go's profiler answers at the root (the
// supervisor) and under the profile (its worker), and without it neither does. Another
// site's page cannot run it: its requests are refused with forbidden_origin, at once,
// and the owner's profile, asked at the same time, is taken.
func TestHealthAndPprof(t *testing.T) {
	home := profileHome(t, "anthropic-messages", "http://127.0.0.1:9/", "")
	get := func(url string, header ...string) (int, string) {
		req, _ := http.NewRequest("GET", url, nil)
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
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
	for _, base := range []string{root + "/", u} {
		for _, path := range []string{"debug/pprof/profile?seconds=2", "debug/pprof/trace?seconds=2", "debug/pprof/heap"} {
			for _, header := range [][]string{
				{"Sec-Fetch-Site", "cross-site"},                                  // an image or a no-cors fetch
				{"Origin", "http://evil.example", "Sec-Fetch-Site", "cross-site"}, // a cors fetch
			} {
				// The owner's own profile runs meanwhile: nothing of another site's is.
				var wg sync.WaitGroup
				var ownCode int
				var ownBody string
				if strings.Contains(path, "profile?") {
					wg.Go(func() { ownCode, ownBody = get(base+"debug/pprof/profile?seconds=1", "Sec-Fetch-Site", "none") })
				}
				start := time.Now()
				code, body := get(base+path, header...)
				if code != http.StatusForbidden || !strings.Contains(body, `"forbidden_origin"`) || time.Since(start) > time.Second {
					t.Errorf("GET %s%s with %q = %d after %v, %.200q; want 403 forbidden_origin at once", base, path, header, code, time.Since(start), body)
				}
				wg.Wait()
				if strings.Contains(path, "profile?") && ownCode != 200 {
					t.Errorf("the owner's profile at %s beside another site's = %d %.200q, want 200", base, ownCode, ownBody)
				}
			}
		}
	}

	_, u2, _ := startServer(t, profileHome(t, "anthropic-messages", "http://127.0.0.1:9/", "")) // one server per MYCO_HOME
	root2 := u2[:strings.Index(u2, "/profiles/")]
	if code, _ := get(root2 + "/debug/pprof/"); code != http.StatusNotFound {
		t.Errorf("pprof without --pprof = %d, want 404", code)
	}
	if code, _ := get(u2 + "debug/pprof/"); code != http.StatusNotFound {
		t.Errorf("the worker's pprof without --pprof = %d, want 404", code)
	}
}
