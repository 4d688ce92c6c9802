package web

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// StreamWriteTimeout bounds how long one write of an event stream may wait for its client
// to read: a client that stops reading (a tab asleep, a script that never reads) is cut off
// after it, rather than holding a goroutine and its buffers for ever. It reconnects with its
// cursor and gets what it missed, or a reset.
const StreamWriteTimeout = 15 * time.Second

// SSE writes server-sent events and flushes each one. It is not safe for concurrent use:
// one handler writes its stream.
type SSE struct {
	w  http.ResponseWriter
	rc *http.ResponseController
	b  bytes.Buffer // events appended and not yet written
	// Timeout bounds each write; StartSSE sets it to StreamWriteTimeout.
	Timeout time.Duration
}

// StartSSE writes the headers of an event stream and lifts the connection's deadlines: the
// request is read, and the stream lasts. A proxy must not buffer it, nothing may cache it,
// and it is never compressed.
func StartSSE(w http.ResponseWriter) (*SSE, error) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	rc := http.NewResponseController(w)
	rc.SetWriteDeadline(time.Time{})
	rc.SetReadDeadline(time.Time{}) // the request is read; the stream lasts (see server.go)
	w.WriteHeader(http.StatusOK)
	if _, err := w.Write([]byte("retry: 1000\n\n")); err != nil {
		return nil, err
	}
	return &SSE{w: w, rc: rc, Timeout: StreamWriteTimeout}, rc.Flush()
}

var lineBreaks = strings.NewReplacer("\r\n", "\n", "\r", "\n")

// Send writes one event: its id unless empty, its name unless empty, and data split into
// lines. A bare \r (tool output often has one) would end a line for the reader, so every
// line break is made \n first.
func (s *SSE) Send(id, event, data string) error {
	s.Append(id, event, data)
	return s.Flush()
}

// Append adds an event to what the next [SSE.Flush] writes, so that a batch of events costs
// one write.
func (s *SSE) Append(id, event, data string) {
	b := &s.b
	if id != "" {
		fmt.Fprintf(b, "id: %s\n", id)
	}
	if event != "" {
		fmt.Fprintf(b, "event: %s\n", event)
	}
	for _, line := range strings.Split(lineBreaks.Replace(data), "\n") {
		b.WriteString("data: ")
		b.WriteString(line)
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
}

// AppendJSON adds an event with id and name (each left out when empty) whose data is JSON
// on one line (json.Marshal's output, which has no line break).
func (s *SSE) AppendJSON(id, event string, data []byte) {
	b := &s.b
	if id != "" {
		fmt.Fprintf(b, "id: %s\n", id)
	}
	if event != "" {
		fmt.Fprintf(b, "event: %s\n", event)
	}
	b.WriteString("data: ")
	b.Write(data)
	b.WriteString("\n\n")
}

// Flush writes the events appended since the last flush and sends them on, within
// Timeout.
func (s *SSE) Flush() error {
	s.rc.SetWriteDeadline(time.Now().Add(s.Timeout))
	_, err := s.w.Write(s.b.Bytes())
	s.b.Reset()
	if err != nil {
		return err
	}
	return s.rc.Flush()
}

// SendJSON writes v, encoded on one line, as the data of an unnamed event with id.
func (s *SSE) SendJSON(id string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	s.AppendJSON(id, "", b)
	return s.Flush()
}
