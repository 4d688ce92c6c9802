package api

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

// TestSSEReader: the events of a stream, as the HTML standard's parser dispatches them.
func TestSSEReader(t *testing.T) {
	for _, tt := range []struct {
		name, stream string
		want         []SSEEvent
	}{
		{"one event", "id: 1\nevent: state\ndata: {}\n\n", []SSEEvent{{"1", "state", "{}"}}},
		{"a bare data line is an empty line of data", "data:\n\n", []SSEEvent{{"", "", ""}}},
		{"data with no colon at all", "data\n\n", []SSEEvent{{"", "", ""}}},
		{"a bare data line among others", "data: a\ndata:\ndata: b\n\n", []SSEEvent{{"", "", "a\n\nb"}}},
		{"one space after the colon is dropped, not two", "data:  a\ndata:b\n\n", []SSEEvent{{"", "", " a\nb"}}},
		{"no data line: no event", "event: ping\n\nid: 7\n\n", nil},
		{"the retry preamble is no event", "retry: 1000\n\ndata: x\n\n", []SSEEvent{{"", "", "x"}}},
		{"CRLF, CR and LF end lines", "data: a\r\ndata: b\rdata: c\n\r\n", []SSEEvent{{"", "", "a\nb\nc"}}},
		{"CR then LF is one line end, CR CR two", "data: a\r\r", []SSEEvent{{"", "", "a"}}},
		{"comments", ": keep-alive\ndata: x\n: more\n\n", []SSEEvent{{"", "", "x"}}},
		{"an id stays until another comes", "id: 1\ndata: a\n\ndata: b\n\nid: 2\ndata: c\n\n",
			[]SSEEvent{{"1", "", "a"}, {"1", "", "b"}, {"2", "", "c"}}},
		{"an empty id clears it", "id: 1\ndata: a\n\nid\ndata: b\n\n", []SSEEvent{{"1", "", "a"}, {"", "", "b"}}},
		{"an id with NUL is ignored", "id: 1\ndata: a\n\nid: 2\x003\ndata: b\n\n", []SSEEvent{{"1", "", "a"}, {"1", "", "b"}}},
		{"the event name is the last one, and ends with the event", "event: a\nevent: b\ndata: x\n\ndata: y\n\n",
			[]SSEEvent{{"", "b", "x"}, {"", "", "y"}}},
		{"unknown fields are ignored", "colour: red\ndata: x\n\n", []SSEEvent{{"", "", "x"}}},
		{"a byte-order mark at the start", "\xef\xbb\xbfdata: x\n\n", []SSEEvent{{"", "", "x"}}},
		{"an event left unfinished at the end is none", "data: a\n\ndata: b\n", []SSEEvent{{"", "", "a"}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, how := range []struct {
				name string
				r    func(string) io.Reader
			}{
				{"whole", func(s string) io.Reader { return strings.NewReader(s) }},
				{"byte by byte", func(s string) io.Reader { return iotest.OneByteReader(strings.NewReader(s)) }},
			} {
				r := NewSSEReader(how.r(tt.stream))
				var got []SSEEvent
				for {
					ev, err := r.Next()
					if err != nil {
						if err != io.EOF {
							t.Fatalf("%s: Next = %v", how.name, err)
						}
						break
					}
					got = append(got, ev)
				}
				if len(got) != len(tt.want) {
					t.Fatalf("%s: events of %q = %q, want %q", how.name, tt.stream, got, tt.want)
				}
				for i := range got {
					if got[i] != tt.want[i] {
						t.Errorf("%s: events of %q = %q, want %q", how.name, tt.stream, got, tt.want)
						break
					}
				}
			}
		})
	}
}

// TestSSEDecoderState: the last event ID is set at a dispatch, even of no event, and the
// retry field only by digits.
func TestSSEDecoderState(t *testing.T) {
	var d SSEDecoder
	d.Write([]byte("retry: 2500\nid: 5\n\n"))
	if _, ok := d.Next(); ok || d.LastEventID() != "5" || d.Retry() != 2500*time.Millisecond {
		t.Errorf("after an id without data: LastEventID = %q, Retry = %v; want 5, 2.5s and no event", d.LastEventID(), d.Retry())
	}
	d.Write([]byte("retry: 1s\nretry: -1\n\n"))
	if d.Retry() != 2500*time.Millisecond {
		t.Errorf("Retry after retry fields that are not digits = %v, want 2.5s still", d.Retry())
	}
}

// TestSSEMax: a line or an event's data over Max fails the stream; what came before it is
// still read.
func TestSSEMax(t *testing.T) {
	for _, tt := range []struct{ name, stream string }{
		{"a line", "data: a\n\ndata: " + strings.Repeat("x", 100)},
		{"an event of many lines", "data: a\n\n" + strings.Repeat("data: xxxxxxxxx\n", 20)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := NewSSEReader(strings.NewReader(tt.stream))
			r.Decoder.Max = 64
			if ev, err := r.Next(); err != nil || ev.Data != "a" {
				t.Fatalf("Next = %q, %v; want the first event", ev, err)
			}
			if _, err := r.Next(); !errors.Is(err, ErrSSETooLong) {
				t.Errorf("Next = %v, want ErrSSETooLong", err)
			}
		})
	}
}
