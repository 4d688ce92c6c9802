package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"myco.dev/internal/fakemodel"
)

// bareClient is the floor of a start-up: a Go program that posts one request to the model
// and exits, with nothing else to do.
const bareClient = `package main

import (
	"net/http"
	"os"
	"strings"
)

func main() {
	resp, err := http.Post(os.Args[1]+"/v1/messages", "application/json", strings.NewReader(` + "`" + `{"model":"m","max_tokens":8,"stream":true,"messages":[{"role":"user","content":"hi"}]}` + "`" + `))
	if err != nil {
		os.Exit(1)
	}
	resp.Body.Close()
}
`

// durableClient is the floor with myco's durability: before it posts, it makes a new file
// durable as myco makes a new session (a temporary file written and synced, renamed into
// place, its directory synced) and appends and syncs the input, as myco's first checkpoint
// does: the same writes and fsyncs, one after another, and then the request.
const durableClient = `package main

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
)

func main() {
	dir := os.Args[2]
	tmp := filepath.Join(dir, ".s.tmp")
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		os.Exit(1)
	}
	f.Write([]byte(strings.Repeat("m", 248)))
	f.Sync()
	f.Close()
	name := filepath.Join(dir, "s")
	os.Rename(tmp, name)
	d, _ := os.Open(dir)
	d.Sync()
	d.Close()
	f, _ = os.OpenFile(name, os.O_WRONLY|os.O_APPEND, 0)
	f.Write([]byte(strings.Repeat("i", 995)))
	f.Sync()
	f.Close()
	resp, err := http.Post(os.Args[1]+"/v1/messages", "application/json", strings.NewReader(` + "`" + `{"model":"m","max_tokens":8,"stream":true,"messages":[{"role":"user","content":"hi"}]}` + "`" + `))
	if err != nil {
		os.Exit(1)
	}
	resp.Body.Close()
	os.Remove(name)
}
`

// BenchmarkFirstRequest measures how long myco -p takes from its start to its first model
// request (a new durable session: the session file and the prompt saved first), against a
// bare Go client that only posts a request (x-floor), and against the same client when it
// first makes the same writes durable (x-durable-floor, the issue's "floor with the same
// durability"; goal: at most 1.5).
func BenchmarkFirstRequest(b *testing.B) {
	dir := b.TempDir()
	os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module bare\n\ngo 1.22\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "main.go"), []byte(bareClient), 0o600)
	bare := filepath.Join(dir, "bare")
	build := exec.Command("go", "build", "-o", bare, ".")
	build.Dir = dir
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("build the bare client: %v\n%s", err, out)
	}
	ddir := filepath.Join(dir, "durable")
	os.MkdirAll(ddir, 0o700)
	os.WriteFile(filepath.Join(ddir, "go.mod"), []byte("module durable\n\ngo 1.22\n"), 0o600)
	os.WriteFile(filepath.Join(ddir, "main.go"), []byte(durableClient), 0o600)
	durable := filepath.Join(dir, "durable-client")
	build = exec.Command("go", "build", "-o", durable, ".")
	build.Dir = ddir
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("build the durable client: %v\n%s", err, out)
	}

	fake := fakemodel.New(b)
	fake.Loop()
	fake.Script(fakemodel.Turn{Text: "ok"})
	home := profileHome(b, "anthropic-messages", fake.URL, "")
	// The durable client's file goes where myco's sessions go: the same file system.
	sessions := filepath.Join(home, "profiles", "default", "session")
	os.MkdirAll(sessions, 0o700)
	bin := binary(b)
	first := func(name string, args ...string) time.Duration {
		n := len(fake.Requests())
		cmd := exec.Command(name, args...)
		cmd.Env = append(os.Environ(), "MYCO_HOME="+home, "MYCO_PROFILE=", "MYCO_CONFIG=")
		cmd.Dir = dir
		start := time.Now()
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%s: %v\n%s", name, err, out)
		}
		reqs := fake.Requests()
		if len(reqs) != n+1 {
			b.Fatalf("%s made %d requests, want 1", name, len(reqs)-n)
		}
		return reqs[n].Received.Sub(start)
	}
	first(bin, "-p", "hi") // the caches warm, the profile's directories made
	first(bare, fake.URL)
	first(durable, fake.URL, sessions)
	const n = 15
	var myco, floor, dfloor []time.Duration
	for range n {
		myco = append(myco, first(bin, "-p", "hi"))
		floor = append(floor, first(bare, fake.URL))
		dfloor = append(dfloor, first(durable, fake.URL, sessions))
	}
	for b.Loop() {
	}
	m, f, d := median(myco), median(floor), median(dfloor)
	b.ReportMetric(float64(m.Microseconds())/1000, "ms-myco-p-first-request")
	b.ReportMetric(float64(f.Microseconds())/1000, "ms-bare-client-first-request")
	b.ReportMetric(float64(d.Microseconds())/1000, "ms-durable-client-first-request")
	b.ReportMetric(float64(m)/float64(f), "x-floor")
	b.ReportMetric(float64(m)/float64(d), "x-durable-floor")
}
