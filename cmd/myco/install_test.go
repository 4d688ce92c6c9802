package main

import (
	"bufio"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"myco.dev/internal/needs"
)

// TestGoInstall: `go install ./cmd/myco` from a checkout, with no make step, gives a
// complete binary: its pages load htmx and its SSE extension, and highlight code.
func TestGoInstall(t *testing.T) {
	needs.Long(t, "go install builds myco once more")
	gobin := t.TempDir()
	cmd := exec.Command("go", "install", "./cmd/myco")
	cmd.Dir = "../.."
	cmd.Env = append(os.Environ(), "GOBIN="+gobin, "GOFLAGS=")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go install ./cmd/myco: %v\n%s", err, out)
	}
	home := profileHome(t, "anthropic-messages", "http://127.0.0.1:9/", "")
	srv := exec.Command(filepath.Join(gobin, "myco"), "--addr", "127.0.0.1:0")
	srv.Env = append(os.Environ(), "MYCO_HOME="+home, "MYCO_PROFILE=", "MYCO_CONFIG=")
	out, stderr := startPiped(t, srv)
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("no URL: %v\n%s", err, stderr)
	}
	u := strings.TrimSpace(line)
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if strings.Contains(string(page), "make assets") {
		t.Errorf("the installed binary's page asks for make assets")
	}
	root := u[:strings.Index(u, "/profiles/")]
	for _, m := range regexp.MustCompile(`src="(/static/htmx/[^"]+)"`).FindAllStringSubmatch(string(page), -1) {
		resp, err := http.Get(root + m[1])
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(body), "htmx") {
			t.Errorf("GET %s = %d (%d bytes)", m[1], resp.StatusCode, len(body))
		}
	}
	if n := len(regexp.MustCompile(`src="/static/htmx/`).FindAllString(string(page), -1)); n != 2 {
		t.Errorf("the page loads %d htmx scripts, want htmx and its SSE extension", n)
	}
	// A Python file (an XML lexer, not the built-in Go one) is highlighted.
	ws := filepath.Join(home, "profiles", "default", "workspace")
	if err := os.MkdirAll(ws, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "hello.py"), []byte("def hello():\n    return 42\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	resp, err = http.Get(strings.TrimSuffix(u, "/") + "/workspace/hello.py")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `<span class="ch-k">def</span>`) {
		t.Errorf("the installed binary does not highlight Python:\n%s", body)
	}
}
