package profiles

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"myco.dev/internal/handoff"
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
