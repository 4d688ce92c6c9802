package main

import (
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"myco.dev/internal/fakemodel"
)

// TestServeApproveLinkOnTerminal (issue 31): a server started on a terminal says the link
// that gives a browser the approval capability, so that a newcomer's browser can answer
// the first approval without another command, and the link works (it sets the cookie,
// the key of MYCO_HOME); a server whose output is piped (a service, a script, a log
// collector) never prints the key.
func TestServeApproveLinkOnTerminal(t *testing.T) {
	fake := fakemodel.New(t)
	home := profileHome(t, "anthropic-messages", fake.URL, "")
	p := startPaneArgs(t, home, "--addr 127.0.0.1:0", 400)
	link := regexp.MustCompile(`http://127\.0\.0\.1:\d+/profiles/default/approve\?key=[0-9a-f]{64}`)
	screen := p.wait("the approval link", func(s string) bool { return link.MatchString(s) })
	key, err := os.ReadFile(filepath.Join(home, "approval.key"))
	if err != nil {
		t.Fatal(err)
	}
	url := link.FindString(screen)
	if !strings.HasSuffix(url, "key="+strings.TrimSpace(string(key))) {
		t.Errorf("the link %s is not of MYCO_HOME's key", url)
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }, Timeout: 10 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if cookie := resp.Header.Get("Set-Cookie"); resp.StatusCode != http.StatusSeeOther || !strings.Contains(cookie, "myco_approval="+strings.TrimSpace(string(key))) || !strings.Contains(cookie, "HttpOnly") {
		t.Errorf("opening the link = %s, Set-Cookie %q; want 303 with the key in an HttpOnly cookie", resp.Status, cookie)
	}

	piped := profileHome(t, "anthropic-messages", fake.URL, "")
	_, _, stderr := startServer(t, piped)
	for end := time.Now().Add(10 * time.Second); !strings.Contains(stderr.String(), "forward its port") && time.Now().Before(end); {
		time.Sleep(20 * time.Millisecond)
	}
	if out := stderr.String(); !strings.Contains(out, "forward its port") || strings.Contains(out, "approve?key=") {
		t.Errorf("a server with its output piped said:\n%s\nwant the forward hint and no approval link", out)
	}
}
