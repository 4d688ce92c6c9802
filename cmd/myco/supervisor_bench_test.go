package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"myco.dev/internal/fakemodel"
	"myco.dev/internal/procstat"
	"myco.dev/internal/web"
	"myco.dev/profiles"
	"myco.dev/static"
)

// BenchmarkSupervisor measures what the supervisor adds: a request and an event through it
// against the same served directly by the profile's worker over its channel, as ratios
// (goal under 1.2), and a worker's resident memory when idle. The supervisor runs in this
// process, as the server runs it, so that the direct path can reach the same worker.
func BenchmarkSupervisor(b *testing.B) {
	fake := fakemodel.New(b)
	fake.Loop()
	fake.Script(fakemodel.Turn{Text: "Here is **what I found**:\n\n```go\nfunc main() {\n\tfmt.Println(\"hi\")\n}\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |\n"})
	home := profileHome(b, "anthropic-messages", fake.URL, "")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	port := web.PortOf(ln.Addr())
	root := "http://127.0.0.1:" + port
	pool, err := profiles.New(profiles.Options{Command: func(name string) ([]string, []string) {
		return []string{binary(b), "--mode", "profile-worker", "--profile", name},
			append(os.Environ(), "MYCO_HOME="+home, "MYCO_PROFILE="+name, "MYCO_CONFIG=", "MYCO_SERVER_URL="+root+"/profiles/"+name)
	}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	sv := profiles.NewSupervisor(profiles.SupervisorOptions{Workers: pool, Default: "default", Assets: static.New("/static/"),
		Exists: func(name string) bool { return name == "default" }, Port: port, UID: os.Getuid()})
	srv := web.NewServer(sv, nil)
	go srv.Serve(sv.Listener(ln, pool))
	b.Cleanup(func() { srv.Close() })
	snd, _, err := pool.Worker(b.Context(), "default")
	if err != nil {
		b.Fatal(err)
	}
	host := strings.TrimPrefix(root, "http://")
	viaSup := &http.Client{}
	direct := &http.Client{Transport: &http.Transport{DialContext: func(context.Context, string, string) (net.Conn, error) {
		return snd.Dial()
	}}}
	get := func(c *http.Client, base, path string) {
		req, _ := http.NewRequest("GET", base+path, nil)
		req.Host = host
		resp, err := c.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatalf("GET %s = %d", path, resp.StatusCode)
		}
	}
	post := func(path, body string) {
		resp, err := http.Post(root+path, "application/json", strings.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	const n = 41
	// A session page (what a browser asks for) and the smallest API answer.
	resp0, err := http.Post(root+"/profiles/default/api/sessions", "application/json", strings.NewReader(`{"request_id":"page"}`))
	if err != nil {
		b.Fatal(err)
	}
	pageBody, _ := io.ReadAll(resp0.Body)
	resp0.Body.Close()
	pid := between(string(pageBody), `"session_id": "`, `"`)
	page := "/profiles/default/s/" + pid + "/"
	// a session of 20 turns, as a browser shows it
	for i := range 20 {
		post("/profiles/default/api/sessions/"+pid+"/actions", fmt.Sprintf(`{"request_id":"p%d","action":"submit","text":"step %d"}`, i, i))
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			resp, err := http.Get(root + "/profiles/default/api/sessions/" + pid)
			if err != nil {
				b.Fatal(err)
			}
			s, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if strings.Contains(string(s), `"busy": false`) {
				break
			}
		}
	}
	path := "/profiles/default/api/sessions"
	get(viaSup, root, page)
	get(direct, "http://worker", page)
	supPage := medianDur(n, func() { get(viaSup, root, page) })
	dirPage := medianDur(n, func() { get(direct, "http://worker", page) })
	sup := medianDur(n, func() { get(viaSup, root, path) })
	dir := medianDur(n, func() { get(direct, "http://worker", path) })

	// Events: one stream through the supervisor and one straight from the worker; each
	// title change is an event on both.
	resp, err := http.Post(root+"/profiles/default/api/sessions", "application/json", strings.NewReader(`{"request_id":"bench"}`))
	if err != nil {
		b.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	id := between(string(body), `"session_id": "`, `"`)
	open := func(c *http.Client, base string) chan time.Time {
		req, _ := http.NewRequest("GET", base+"/profiles/default/api/events?session="+id, nil)
		req.Host = host
		resp, err := c.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		ch := make(chan time.Time, 256)
		go func() {
			defer resp.Body.Close()
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() {
				if strings.Contains(sc.Text(), `"type":"meta"`) {
					ch <- time.Now()
				}
			}
		}()
		return ch
	}
	// Each stream is subscribed once its headers have come (the worker subscribes first).
	supEv, dirEv := open(viaSup, root), open(direct, "http://worker")
	var supLat, dirLat []time.Duration
	for i := range n {
		start := time.Now()
		post("/profiles/default/api/sessions/"+id+"/actions", fmt.Sprintf(`{"request_id":"t%d","action":"set_title","title":"t%d"}`, i, i))
		supLat = append(supLat, (<-supEv).Sub(start))
		dirLat = append(dirLat, (<-dirEv).Sub(start))
	}
	rss := procstat.KiB(workerPID(b, root, "default"), "VmRSS")
	for b.Loop() {
	}
	b.ReportMetric(float64(supPage.Microseconds()), "µs-page-via-supervisor")
	b.ReportMetric(float64(dirPage.Microseconds()), "µs-page-direct")
	b.ReportMetric(float64(supPage)/float64(dirPage), "x-page")
	b.ReportMetric(float64(sup.Microseconds()), "µs-api-list-via-supervisor")
	b.ReportMetric(float64(dir.Microseconds()), "µs-api-list-direct")
	b.ReportMetric(float64(sup)/float64(dir), "x-api-list")
	se, de := median(supLat), median(dirLat)
	b.ReportMetric(float64(se.Microseconds()), "µs-event-via-supervisor")
	b.ReportMetric(float64(de.Microseconds()), "µs-event-direct")
	b.ReportMetric(float64(se)/float64(de), "x-event")
	b.ReportMetric(float64(rss)/1024, "MiB-idle-worker-rss")
}

func between(s, a, z string) string {
	_, rest, _ := strings.Cut(s, a)
	v, _, _ := strings.Cut(rest, z)
	return v
}

func medianDur(n int, f func()) time.Duration {
	ds := make([]time.Duration, n)
	for i := range ds {
		start := time.Now()
		f()
		ds[i] = time.Since(start)
	}
	return median(ds)
}

func median(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
	return s[len(s)/2]
}
