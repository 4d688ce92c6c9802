package model

import (
	"errors"
	"io"
	"strings"
	"testing"
)

func TestEvents(t *testing.T) {
	in := ": OPENROUTER PROCESSING\n\n" +
		"event: message_start\ndata: {\"a\":1}\n\n" +
		"data: {\"b\":2}\r\n\r\n" +
		"data: line1\ndata: line2\n\n" +
		"event: lonely\n\n" +
		"data: [DONE]\n\n" +
		"data: {\"cut\":"
	var got []Event
	for ev, err := range Events(strings.NewReader(in), 0) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ev)
	}
	want := []Event{
		{Name: "message_start", Data: `{"a":1}`, N: 1, Offset: 25},
		{Data: `{"b":2}`, N: 2, Offset: 61},
		{Data: "line1\nline2", N: 3, Offset: 78},
		{Data: "[DONE]", N: 4, Offset: 118},
	}
	if len(got) != len(want) {
		t.Fatalf("Events = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("event %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

// endlessReader repeats unit forever and counts what it handed out.
type endlessReader struct {
	unit string
	i    int
	read int
}

func (r *endlessReader) Read(p []byte) (int, error) {
	for n := range p {
		p[n] = r.unit[r.i%len(r.unit)]
		r.i++
	}
	r.read += len(p)
	return len(p), nil
}

func TestEventsBoundsOneEvent(t *testing.T) {
	const limit = 1 << 20
	for _, tt := range []struct{ name, head, unit string }{
		{"data lines without a blank line", "event: x\n", "data: 0123456789\n"},
		{"one line without end", "data: ", "0123456789"},
		{"comment lines without a blank line", "", ": keep-alive\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := &endlessReader{unit: tt.unit}
			in := io.MultiReader(strings.NewReader("data: first\n\n"+tt.head), r)
			var got []Event
			var err error
			for ev, e := range Events(in, limit) {
				if e != nil {
					err = e
					break
				}
				got = append(got, ev)
			}
			var tl *ResponseTooLargeError
			if !errors.As(err, &tl) || !tl.Event || tl.Limit != limit || tl.Offset != 13 {
				t.Fatalf("Events error = %v, want a ResponseTooLargeError for the event at byte 13", err)
			}
			if len(got) != 1 || got[0].Data != "first" {
				t.Errorf("events before the error = %+v, want the first", got)
			}
			if r.read > limit+128<<10 {
				t.Errorf("read %d bytes looking for the end of an event capped at %d", r.read, limit)
			}
		})
	}
}

func TestEventsAtTheCap(t *testing.T) {
	ev := "data: " + strings.Repeat("x", 100) + "\n\n"
	n := 0
	for _, err := range Events(strings.NewReader(ev+ev), len(ev)) {
		if err != nil {
			t.Fatalf("event of exactly the cap: %v", err)
		}
		n++
	}
	if n != 2 {
		t.Errorf("events = %d, want 2", n)
	}
}

func TestKeepAlive(t *testing.T) {
	for data, want := range map[string]bool{
		"":                    true,
		"  ":                  true,
		":ping":               true,
		": OPENROUTER":        true,
		"ping":                true,
		"PING":                true,
		"keep-alive":          true,
		"keepalive":           true,
		"not json at all":     false,
		`subdir"}`:            false,
		`{"choices":[]}`:      false,
		"[DONE]":              false,
		"ping pong":           false,
		`{"type":"ping"`:      false,
		"keep-alive and more": false,
	} {
		if got := KeepAlive(data); got != want {
			t.Errorf("KeepAlive(%q) = %v, want %v", data, got, want)
		}
	}
}
