package proto

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"

	"myco.dev/hosts/snapshot"
	"myco.dev/hosts/tools"
)

func TestRoundTrip(t *testing.T) {
	in := json.RawMessage(`{"command":"ls"}`)
	msgs := []Msg{
		{Hello: &Hello{Protocol: Version, Version: "1.2.3", OS: "linux", Arch: "amd64", Shell: "/bin/zsh", Dir: "/home/me", MaxImageBase64Bytes: 100}},
		{ID: 1, Call: &Call{Owner: "rt1", Tool: "bash", Input: in}},
		{ID: 1, Result: &tools.Result{Text: "ok\n", IsError: true}},
		{ID: 2, Err: &Error{Message: "nope"}},
		{ID: 3, Ping: &struct{}{}},
		{ID: 3, Pong: &struct{}{}},
		{ID: 4, Inventory: &InventoryQuery{Owner: "rt1"}},
		{ID: 5, Release: &Release{Owner: "rt1"}},
		{ID: 5, Released: &struct{}{}},
		{ID: 6, Call: &Call{Owner: "rt1", Tool: "bash", Input: in, Key: "k1"}},
		{ID: 7, Fetch: &Fetch{Owner: "rt1", Key: "k1"}},
		{Proxy: &Proxy{MaxImageBase64Bytes: 100}},
		{Hello: &Hello{Protocol: Version, Instance: "d1", PID: 42, GraceSecs: 1800}},
		{ID: 8, Call: &Call{Owner: "rt1", Tool: "bash", Input: in, Key: "k2", Progress: true}},
		{ID: 8, Progress: &Progress{Tail: "half\n"}},
		{Hello: &Hello{Protocol: Version, NoDaemon: "the daemon's directory is a file"}},
		{Hello: &Hello{Protocol: Version, WithoutEnv: []string{"ANTHROPIC_API_KEY", "OPENAI_API_KEY"}}},
		{Err: &Error{Message: "host protocol mismatch", Fatal: true}},
		{ID: 9, MCPList: &MCPList{Servers: []MCPServer{{Name: "db", Command: "postgres-mcp", Args: []string{"--ro"}, Env: map[string]string{"PGHOST": "h"},
			Dir: "~/srv", StartupTimeoutMS: 10000, ToolTimeoutMS: 120000}}}},
		{ID: 9, MCPTools: &MCPTools{Servers: []MCPListed{{Name: "db", Tools: []MCPTool{{Name: "mcp__db__query", Remote: "query",
			Description: "Runs a query.", Schema: json.RawMessage(`{"type":"object"}`)}}}, {Name: "gone", Err: "it did not start"}}}},
		{ID: 10, Call: &Call{Owner: "rt1", Tool: "mcp__db__query", Input: in, Key: "k3", MCP: &MCPServer{Name: "db", Command: "postgres-mcp"}}},
		{ID: 10, Result: &tools.Result{Text: "the server ended", Unknown: true}},
		{ID: 11, Capture: &snapshot.CaptureRequest{Owner: "s1", Dir: "/home/me/p", Files: []string{"/etc/x"}, MaxFiles: 100}},
		{ID: 11, Captured: &snapshot.CaptureResult{ID: "ab", Dir: "/home/me/p", Files: 3, Bytes: 10}},
		{ID: 12, Diff: &Diff{From: "ab", To: "cd", Options: snapshot.DiffOptions{NoPatch: true, Paths: []snapshot.Path{"bad\xff"}}}},
		{ID: 12, Diffed: &snapshot.Diff{From: "ab", To: "cd", Dir: "/p", Changes: []snapshot.Change{{Path: "a", Kind: snapshot.Modified, LinesAdded: 1}}}},
		{ID: 13, Restore: &snapshot.RestoreRequest{From: "cd", To: "ab", Force: []snapshot.Path{"a"}, DryRun: true}},
		{ID: 13, Restored: &Restored{RestoreResult: snapshot.RestoreResult{Restored: []snapshot.Path{"a"}, Conflicts: []snapshot.Conflict{{Path: "b", Reason: snapshot.ReasonChanged}}}, Error: "cut"}},
		{ID: 14, Prune: &Prune{Owner: "s1", Keep: []snapshot.ID{"ab"}}},
		{ID: 14, Pruned: &Pruned{PruneResult: snapshot.PruneResult{Dropped: 2, Freed: 100}, Busy: true}},
		{ID: 15, Size: &struct{}{}},
		{ID: 15, Sized: &Sized{Bytes: 4096}},
		{ID: 16, Err: &Error{Message: "snapshot: not found", Code: CodeNotFound}},
	}
	var buf bytes.Buffer
	w := NewWriter(&buf)
	for _, m := range msgs {
		if err := w.Write(m); err != nil {
			t.Fatal(err)
		}
	}
	if n := strings.Count(buf.String(), "\n"); n != len(msgs) {
		t.Fatalf("%d lines for %d frames:\n%s", n, len(msgs), buf.String())
	}
	r := NewReader(&buf)
	for i, want := range msgs {
		got, err := r.Read(t.Context())
		if err != nil {
			t.Fatalf("Read #%d: %v", i, err)
		}
		gb, _ := json.Marshal(got)
		wb, _ := json.Marshal(want)
		if !bytes.Equal(gb, wb) {
			t.Errorf("Read #%d = %s, want %s", i, gb, wb)
		}
	}
	if _, err := r.Read(t.Context()); !errors.Is(err, io.EOF) {
		t.Errorf("Read at the end = %v, want io.EOF", err)
	}
}

func TestReadMalformedGoesOn(t *testing.T) {
	input := strings.Join([]string{
		`not json`,
		``,
		`{"id":7}`,
		`{"id":8,"ping":{},"pong":{}}`,
		`[1,2]`,
		`{"id":10,"progress":{"tail":"x"},"pong":{}}`,
		`{"id":9,"ping":{}}`,
	}, "\n") + "\n"
	r := NewReader(strings.NewReader(input))
	tests := []struct {
		name      string
		malformed bool
		id        uint64
	}{
		{"not json", true, 0},
		{"no payload", true, 7},
		{"two payloads", true, 8},
		{"array", true, 0},
		{"progress and another payload", true, 10},
		{"good after bad", false, 9},
	}
	for _, tt := range tests {
		m, err := r.Read(t.Context())
		if tt.malformed != errors.Is(err, ErrMalformed) {
			t.Errorf("%s: Read err = %v, want malformed %v", tt.name, err, tt.malformed)
		}
		if m.ID != tt.id {
			t.Errorf("%s: Read id = %d, want %d", tt.name, m.ID, tt.id)
		}
	}
	if _, err := r.Read(t.Context()); !errors.Is(err, io.EOF) {
		t.Errorf("Read at the end = %v, want io.EOF", err)
	}
}

func TestReadAfterContextEnded(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	r := NewReader(strings.NewReader(""))
	if _, err := r.Read(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Read after cancel = %v, want context.Canceled", err)
	}
}

func TestCheckNamesBothVersions(t *testing.T) {
	if err := Check(Hello{Protocol: Version}, Hello{Protocol: Version, Version: "other"}); err != nil {
		t.Errorf("Check of equal protocols = %v", err)
	}
	err := Check(Hello{Protocol: 1, Version: "0.1.0"}, Hello{Protocol: 2, Version: "0.2.0"})
	var mm *Mismatch
	if !errors.As(err, &mm) {
		t.Fatalf("Check = %v, want a *Mismatch", err)
	}
	for _, want := range []string{"0.1.0", "0.2.0", "protocol 1", "speaks 2", "install the same myco"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Check = %q, lacks %q", err, want)
		}
	}
}

func TestWriterConcurrentLinesStayWhole(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() {
			w.Write(Msg{ID: uint64(i + 1), Result: &tools.Result{Text: strings.Repeat("x", 10000)}})
		})
	}
	wg.Wait()
	r := NewReader(&buf)
	for range 50 {
		if _, err := r.Read(t.Context()); err != nil {
			t.Fatalf("Read: %v", err)
		}
	}
}

// TestLineLimits: a line of max bytes, its newline included, passes both ways, and one byte
// more is refused: the writer sends nothing and can go on; the reader stops for good.
func TestLineLimits(t *testing.T) {
	const max = 300
	frame := func(n int) Msg { // a frame whose line, newline included, is n bytes
		m := Msg{ID: 1, Result: &tools.Result{}}
		b, _ := json.Marshal(m)
		m.Result.Text = strings.Repeat("x", n-len(b)-1)
		return m
	}
	for _, n := range []int{max - 1, max, max + 1, 3 * max} {
		var buf bytes.Buffer
		w := NewWriterSize(&buf, max)
		err := w.Write(frame(n))
		if fits := n <= max; fits != (err == nil) || (!fits && !errors.Is(err, ErrLineTooLong)) {
			t.Errorf("Write of a %d-byte line with limit %d = %v", n, max, err)
		}
		if err != nil && buf.Len() != 0 {
			t.Errorf("Write of a %d-byte line with limit %d wrote %d bytes, want none", n, max, buf.Len())
		}
		if err := w.Write(Msg{ID: 2, Ping: &struct{}{}}); err != nil {
			t.Errorf("Write after a refused frame = %v", err)
		}

		var line bytes.Buffer
		NewWriter(&line).Write(frame(n))
		line.WriteString(`{"id":2,"ping":{}}` + "\n")
		r := NewReaderSize(&line, max)
		_, err = r.Read(t.Context())
		if fits := n <= max; fits != (err == nil) || (!fits && !errors.Is(err, ErrLineTooLong)) {
			t.Errorf("Read of a %d-byte line with limit %d = %v", n, max, err)
		}
		m, err2 := r.Read(t.Context())
		if n <= max && (err2 != nil || m.Ping == nil) {
			t.Errorf("Read after a %d-byte line = %+v, %v, want the ping", n, m, err2)
		}
		if n > max && !errors.Is(err2, ErrLineTooLong) {
			t.Errorf("Read after a line over the limit = %+v, %v, want ErrLineTooLong again", m, err2)
		}
	}
}

// TestRequestReaderHoldsLittle: a reader for controller frames never holds more than
// MaxRequestLine of a line that is far longer.
func TestRequestReaderHoldsLittle(t *testing.T) {
	src := &countingReader{left: 64 << 20}
	r := NewReaderSize(bufio.NewReaderSize(src, 4096), MaxRequestLine)
	if _, err := r.Read(t.Context()); !errors.Is(err, ErrLineTooLong) {
		t.Fatalf("Read of a 64 MiB line = %v, want ErrLineTooLong", err)
	}
	if read := 64<<20 - src.left; read > MaxRequestLine+8192 {
		t.Errorf("the reader took %d bytes of the line before it gave up, want about %d", read, MaxRequestLine)
	}
}

// countingReader yields left bytes of 'x', then io.EOF.
type countingReader struct{ left int }

func (c *countingReader) Read(p []byte) (int, error) {
	if c.left == 0 {
		return 0, io.EOF
	}
	n := min(len(p), c.left)
	for i := range n {
		p[i] = 'x'
	}
	c.left -= n
	return n, nil
}
