package main

import (
	"net/http"
	"strconv"
	"strings"
	"testing"

	"myco.dev/internal/fakemodel"
)

// TestOneServerPerHome (issue 29): a second server on a MYCO_HOME that a server serves
// exits non-zero naming the first (its pid and URL) and what to do, and the first goes on;
// myco -p works beside it, as does a server on another MYCO_HOME.
func TestOneServerPerHome(t *testing.T) {
	fake := fakemodel.New(t, fakemodel.Turn{Text: "beside it"})
	home := profileHome(t, "anthropic-messages", fake.URL, "")
	first, url, _ := startServer(t, home)

	stdout, stderr, status := runOneShot(t, home, "--addr", "127.0.0.1:0")
	if status == 0 || stdout != "" || !strings.Contains(stderr, "already serves MYCO_HOME "+home) ||
		!strings.Contains(stderr, "pid "+strconv.Itoa(first.Process.Pid)) || !strings.Contains(stderr, url) {
		t.Errorf("a second server on the same home = %d, stdout %q, stderr %q; want a refusal naming pid %d and %s",
			status, stdout, stderr, first.Process.Pid, url)
	}
	resp, err := http.Get(strings.Replace(url, "/profiles/default/", "/healthz", 1))
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("the first server after the refusal: %v %v", resp, err)
	}
	resp.Body.Close()
	if out, stderr, status := runOneShot(t, home, "-p", "hi"); status != 0 || out != "beside it\n" {
		t.Errorf("myco -p beside the server = %d %q %q", status, out, stderr)
	}
	startServer(t, profileHome(t, "anthropic-messages", fake.URL, "")) // another home serves
}
