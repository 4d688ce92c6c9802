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

// BenchmarkFirstRequest measures how long myco -p takes from its start to its first model
// request (a new durable session: the session file and the prompt saved first), against a
// bare Go client that only posts a request (the floor), as a ratio (goal: at most 1.5).
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
	fake := fakemodel.New(b)
	fake.Loop()
	fake.Script(fakemodel.Turn{Text: "ok"})
	home := profileHome(b, "anthropic-messages", fake.URL, "")
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
	const n = 15
	var myco, floor []time.Duration
	for range n {
		myco = append(myco, first(bin, "-p", "hi"))
		floor = append(floor, first(bare, fake.URL))
	}
	for b.Loop() {
	}
	m, f := median(myco), median(floor)
	b.ReportMetric(float64(m.Microseconds())/1000, "ms-myco-p-first-request")
	b.ReportMetric(float64(f.Microseconds())/1000, "ms-bare-client-first-request")
	b.ReportMetric(float64(m)/float64(f), "x-floor")
}
