package api

import (
	"bytes"
	"errors"
	"io"
	"strconv"
	"time"
)

// SSEEvent is one server-sent event, as the HTML standard's event-stream parser dispatches
// it.
type SSEEvent struct {
	// ID is the stream's last event ID when the event came: the event's own id, else the
	// last one before it. A client that reconnects sends it as Last-Event-ID.
	ID string
	// Type is the event's name (its event field); "" when it has none, which the standard
	// calls "message".
	Type string
	// Data is the event's data lines, joined by "\n".
	Data string
}

// DefaultSSEMax is the bound of a line and of an event's data when [SSEDecoder.Max] is 0.
const DefaultSSEMax = 32 << 20

// ErrSSETooLong is the error of a stream with a line or an event over its decoder's bound.
var ErrSSETooLong = errors.New("api: a server-sent event over its size bound")

// SSEDecoder decodes a stream of server-sent events written to it, as the HTML standard's
// parser does (https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation):
// lines end with CRLF, LF or CR; a line that starts with a colon is a comment; a field
// without a colon (a bare "data") has an empty value, and one space after the colon is
// dropped; every data line, an empty one included, adds a line to the event's data; a
// blank line dispatches the event, unless it has no data line at all; an id stays the
// stream's last event ID until another comes; what is left at the end of the stream is not
// an event. Its zero value is ready to use. It is not safe for concurrent use.
//
// [SSEReader] reads events from an io.Reader with it; a reader that passes a stream on
// (a proxy, a test's recorder) writes what goes by to it with an io.TeeReader.
type SSEDecoder struct {
	// Max bounds a line and an event's data, in bytes; 0 means [DefaultSSEMax]. A stream
	// over it fails with ErrSSETooLong.
	Max int

	line    []byte // the line read so far
	cr      bool   // the last line ended with CR: an LF right after it ends nothing
	started bool   // a line was read: a byte-order mark can only start the first
	id      string // the last event ID buffer
	lastID  string // the stream's last event ID, set at each dispatch
	typ     string // the event type buffer
	data    []byte // the data buffer, each line followed by "\n"
	retry   time.Duration
	queue   []SSEEvent // events dispatched and not yet taken by Next
	err     error
}

// Write decodes p, the next bytes of the stream. The events it completes wait for
// [SSEDecoder.Next]. It fails only with ErrSSETooLong, for good.
func (d *SSEDecoder) Write(p []byte) (int, error) {
	if d.err != nil {
		return 0, d.err
	}
	n := len(p)
	for len(p) > 0 {
		if d.cr {
			d.cr = false
			if p[0] == '\n' {
				p = p[1:]
				continue
			}
		}
		i := bytes.IndexAny(p, "\r\n")
		if i < 0 {
			d.line = append(d.line, p...)
			break
		}
		d.line = append(d.line, p[:i]...)
		d.cr = p[i] == '\r'
		p = p[i+1:]
		d.field(d.line)
		d.line = d.line[:0]
		if d.err != nil {
			return 0, d.err
		}
	}
	if len(d.line) > d.max() {
		d.err = ErrSSETooLong
		return 0, d.err
	}
	return n, nil
}

func (d *SSEDecoder) max() int {
	if d.Max > 0 {
		return d.Max
	}
	return DefaultSSEMax
}

var bom = []byte("\xef\xbb\xbf")

// field takes one line.
func (d *SSEDecoder) field(line []byte) {
	if !d.started {
		d.started = true
		line = bytes.TrimPrefix(line, bom)
	}
	if len(line) > d.max() {
		d.err = ErrSSETooLong
		return
	}
	if len(line) == 0 {
		d.dispatch()
		return
	}
	if line[0] == ':' {
		return // a comment
	}
	name, value, _ := bytes.Cut(line, []byte(":"))
	value = bytes.TrimPrefix(value, []byte(" "))
	switch string(name) {
	case "event":
		d.typ = string(value)
	case "data":
		d.data = append(append(d.data, value...), '\n')
		if len(d.data) > d.max()+1 {
			d.err = ErrSSETooLong
		}
	case "id":
		if bytes.IndexByte(value, 0) < 0 {
			d.id = string(value)
		}
	case "retry":
		if ms, err := strconv.ParseUint(string(value), 10, 32); err == nil {
			d.retry = time.Duration(ms) * time.Millisecond
		}
	}
}

// dispatch ends an event at a blank line.
func (d *SSEDecoder) dispatch() {
	d.lastID = d.id
	if len(d.data) > 0 {
		d.queue = append(d.queue, SSEEvent{ID: d.lastID, Type: d.typ, Data: string(d.data[:len(d.data)-1])})
	}
	d.data, d.typ = d.data[:0], ""
}

// Next returns the next event decoded and not yet taken, or false when there is none.
func (d *SSEDecoder) Next() (SSEEvent, bool) {
	if len(d.queue) == 0 {
		return SSEEvent{}, false
	}
	ev := d.queue[0]
	d.queue = d.queue[1:]
	if len(d.queue) == 0 {
		d.queue = nil
	}
	return ev, true
}

// LastEventID returns the stream's last event ID: the id a reconnecting client sends as
// Last-Event-ID.
func (d *SSEDecoder) LastEventID() string { return d.lastID }

// Retry returns the reconnection time the stream asked for (its last retry field), or 0.
func (d *SSEDecoder) Retry() time.Duration { return d.retry }

// SSEReader reads server-sent events from a stream with an [SSEDecoder]. It is not safe
// for concurrent use.
type SSEReader struct {
	// Decoder decodes what is read; set its Max before the first Next.
	Decoder SSEDecoder
	r       io.Reader
	buf     []byte
	err     error
}

// NewSSEReader returns a reader of the events of r.
func NewSSEReader(r io.Reader) *SSEReader { return &SSEReader{r: r} }

// Next returns the next event. Its error is the stream's (io.EOF at its end: an event
// left unfinished there is not one) or ErrSSETooLong.
func (s *SSEReader) Next() (SSEEvent, error) {
	for {
		if ev, ok := s.Decoder.Next(); ok {
			return ev, nil
		}
		if s.err != nil {
			return SSEEvent{}, s.err
		}
		if s.buf == nil {
			s.buf = make([]byte, 32<<10)
		}
		n, err := s.r.Read(s.buf)
		if _, werr := s.Decoder.Write(s.buf[:n]); werr != nil {
			err = werr
		}
		if err != nil {
			s.err = err
		}
	}
}
