package web

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"time"

	"myco.dev/internal/peercred"
)

// StreamWriteTimeout bounds how long one write of an event stream may wait for its client
// to read: a client that stops reading (a tab asleep, a script that never reads) is cut off
// after it, rather than holding a goroutine and its buffers for ever. It reconnects with its
// cursor and gets what it missed, or a reset.
const StreamWriteTimeout = 15 * time.Second

// streamSendBuffer is the kernel send buffer of an event stream's connection. TCP would
// grow it to megabytes on loopback: a client that does not read would take every event of a
// busy profile into its buffers before a write blocked and [StreamWriteTimeout] cut it off.
const streamSendBuffer = 32 << 10

// A client is behind when streamBehind of what it was sent waits in its socket unread; its
// stream then waits until it has read (see [SSE.Pace]), looking again after
// streamPaceFirst, then twice as long each time up to streamPaceMax. Whether it is behind
// is looked up (in the kernel's socket tables) once streamLook more was written to it.
const (
	streamBehind    = 32 << 10
	streamLook      = 16 << 10
	streamPaceFirst = 10 * time.Millisecond
	streamPaceMax   = 250 * time.Millisecond
)

// SSE writes server-sent events and flushes each one. It is not safe for concurrent use:
// one handler writes its stream.
type SSE struct {
	w  http.ResponseWriter
	rc *http.ResponseController
	b  bytes.Buffer // events appended and not yet written
	// data is the writer of the event being appended, one per stream: appending costs no
	// allocation.
	data EventData
	// client and server are the ends of the stream's connection, where its client's
	// unread bytes are looked up; nil when unknown.
	client, server net.Addr
	written        int // bytes written since the client's unread bytes were last looked up
	// Timeout bounds each write; StartSSE sets it to StreamWriteTimeout.
	Timeout time.Duration
}

// StartSSE writes the headers of an event stream and lifts the connection's deadlines: the
// request is read, and the stream lasts. A proxy must not buffer it, nothing may cache it,
// and it is never compressed. The connection of r (as [ConnContext] kept it) gets a small
// send buffer, and what its client has not read is watched for [SSE.Pace].
func StartSSE(w http.ResponseWriter, r *http.Request) (*SSE, error) {
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
	s := &SSE{w: w, rc: rc, Timeout: StreamWriteTimeout}
	if c, ok := r.Context().Value(connKey{}).(*net.TCPConn); ok {
		c.SetWriteBuffer(streamSendBuffer)
		s.client, s.server = c.RemoteAddr(), c.LocalAddr()
	}
	return s, rc.Flush()
}

// behind reports whether the client has not read streamBehind of what it was sent. A
// connection whose client socket the tables do not show (not this machine's) is never
// behind.
func (s *SSE) behind() bool {
	s.written = 0
	sock, err := peercred.TCPSock(s.client, s.server)
	return err == nil && sock.Unread >= streamBehind
}

// Pace waits while the client is behind, so that a client that does not read is sent
// little more than streamBehind: the events of that time wait in the bus, and go out in
// one write once it has read (or as a reset, once they are no longer kept). 200 tabs asleep
// would otherwise cost a busy profile the time of its readers, as every event went to each
// until its buffers were full. Pace reports false when ctx ended, or when the client stayed
// behind for Timeout: it is cut off, as a write that waits that long is, and gets what it
// missed when it reconnects.
func (s *SSE) Pace(ctx context.Context) bool {
	// It looks only once streamLook was written since it last did: a reading client costs
	// one lookup per 16 KiB of events.
	if s.client == nil || s.written < streamLook || !s.behind() {
		return true
	}
	end := time.Now().Add(s.Timeout)
	for wait := streamPaceFirst; time.Now().Before(end); wait = min(2*wait, streamPaceMax) {
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return false
		case <-t.C:
		}
		if !s.behind() {
			return true
		}
	}
	return false
}

// Send writes one event: its id unless empty, its name unless empty, and data split into
// lines (see [SSE.Begin]).
func (s *SSE) Send(id, event, data string) error {
	s.Append(id, event, data)
	return s.Flush()
}

// Append adds an event to what the next [SSE.Flush] writes, so that a batch of events costs
// one write.
func (s *SSE) Append(id, event, data string) {
	d := s.Begin(id, event)
	d.WriteString(data)
	d.End()
}

// Begin adds the start of an event with id and name (each left out when empty) to what the
// next [SSE.Flush] writes; what is written to the [EventData] it returns is the event's
// data, framed as it is written: a page's partials are rendered straight into the stream's
// buffer, not into one of their own that is then copied and split into lines.
func (s *SSE) Begin(id, event string) *EventData {
	d := &s.data
	*d = EventData{s: s, start: s.b.Len()}
	if id != "" {
		s.b.WriteString("id: ")
		s.b.WriteString(id)
		s.b.WriteByte('\n')
	}
	if event != "" {
		s.b.WriteString("event: ")
		s.b.WriteString(event)
		s.b.WriteByte('\n')
	}
	s.b.WriteString("data: ")
	return d
}

// EventData writes the data of the event [SSE.Begin] started. Every line break in it ends a
// data line and starts the next: \n, \r\n, and a bare \r (tool output often has one, and
// it would end a line for the reader) alike, across writes too. It is the SSE's own, valid
// until End or Discard.
type EventData struct {
	s     *SSE
	start int  // where the event starts in the SSE's buffer
	n     int  // bytes of data written
	cr    bool // the last byte written was \r, whose \n, if it comes next, is the same break
}

// Write adds p to the event's data.
func (d *EventData) Write(p []byte) (int, error) {
	b := &d.s.b
	d.n += len(p)
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexAny(p, "\r\n")
		if i < 0 {
			b.Write(p)
			d.cr = false
			break
		}
		b.Write(p[:i])
		if i > 0 || p[i] == '\r' || !d.cr { // not the \n of a \r\n
			b.WriteString("\ndata: ")
		}
		d.cr = p[i] == '\r'
		p = p[i+1:]
	}
	return n, nil
}

// WriteString adds p to the event's data.
func (d *EventData) WriteString(p string) (int, error) {
	if p == "" {
		return 0, nil
	}
	return d.Write([]byte(p))
}

// Len is the number of bytes of data written.
func (d *EventData) Len() int { return d.n }

// End ends the event.
func (d *EventData) End() { d.s.b.WriteString("\n\n") }

// Discard takes the event back out of what the next Flush writes, as if it had never begun.
func (d *EventData) Discard() { d.s.b.Truncate(d.start) }

// Discard takes back every event appended since the last [SSE.Flush].
func (s *SSE) Discard() { s.b.Reset() }

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
	n, err := s.w.Write(s.b.Bytes())
	s.written += n
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
