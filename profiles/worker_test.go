package profiles

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"myco.dev/internal/handoff"
	"myco.dev/internal/web"
)

// TestServeWorker: a worker serves its handler to what its supervisor dials over the
// channel, says "ready" once it does, and when its stdin closes stops its work and
// returns.
func TestServeWorker(t *testing.T) {
	ours, theirs, err := handoff.Pair()
	if err != nil {
		t.Fatal(err)
	}
	defer ours.Close()
	fc, err := net.FileConn(theirs)
	theirs.Close()
	if err != nil {
		t.Fatal(err)
	}
	stdin, closeStdin := io.Pipe()
	stdout, sayReady := io.Pipe()
	stopped := make(chan struct{})
	served := make(chan error, 1)
	go func() {
		served <- ServeWorker(t.Context(), fc.(*net.UnixConn), WorkerOptions{Profile: "work", Stdin: stdin, Stdout: sayReady,
			Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "from the worker") }),
			Stop:    func() { close(stopped) }})
	}()
	if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || line != "ready\n" {
		t.Fatalf("the worker said %q, %v; want ready", line, err)
	}
	snd := handoff.NewSender(ours)
	client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) { return snd.Dial() }}}
	resp, err := client.Get("http://127.0.0.1/profiles/work/")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "from the worker" {
		t.Errorf("a request dialled over the channel = %q, want the handler's answer", b)
	}
	client.CloseIdleConnections()
	closeStdin.Close()
	select {
	case err := <-served:
		if err != nil {
			t.Errorf("ServeWorker = %v after its stdin closed, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ServeWorker still serves 10 s after its stdin closed")
	}
	select {
	case <-stopped:
	default:
		t.Error("the worker's work was not stopped")
	}
}

// TestWorkerEnv: a worker's environment has its profile's variables once, whatever the
// server's had, and no MYCO_CONFIG; the worker reads its instance back from it.
func TestWorkerEnv(t *testing.T) {
	environ := []string{"PATH=/bin", "MYCO_PROFILE=other", "MYCO_HOME=rel", "MYCO_CONFIG=/c.toml", "MYCO_SERVER_TOKEN=x", "MYCO_SERVER_URL=old"}
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "t")
	token, err := web.NewTokenFile(tokenFile)
	if err != nil {
		t.Fatal(err)
	}
	env := WorkerEnv(environ, "/home/u/.myco", "work", "http://127.0.0.1:8080/profiles/work", tokenFile)
	want := []string{"PATH=/bin", "MYCO_PROFILE=work", "MYCO_HOME=/home/u/.myco", "MYCO_SERVER_URL=http://127.0.0.1:8080/profiles/work",
		"MYCO_SERVER_TOKEN_FILE=" + tokenFile}
	if !slices.Equal(env, want) {
		t.Errorf("WorkerEnv = %q, want %q", env, want)
	}
	getenv := func(k string) string {
		for _, kv := range env {
			if v, ok := strings.CutPrefix(kv, k+"="); ok {
				return v
			}
		}
		return ""
	}
	srv, err := WorkerServer(getenv)
	if err != nil || srv.Port != "8080" || srv.Token != token || srv.URL != "http://127.0.0.1:8080/profiles/work" {
		t.Errorf("WorkerServer = %+v, %v; want port 8080 and the token", srv, err)
	}
	if _, err := WorkerServer(func(string) string { return "" }); err == nil {
		t.Error("WorkerServer without MYCO_SERVER_URL: no error")
	}
}
