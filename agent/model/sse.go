package model

import (
	"bufio"
	"bytes"
	"io"
	"iter"
	"strings"
)

// Event is one server-sent event.
type Event struct {
	Name string // the event: field; empty when the server sent only data
	Data string // data: lines joined with "\n"
	// N numbers the events of a stream from 1, and Offset is the byte offset of the event's
	// first field line; errors about an event name both.
	N      int
	Offset int64
}

// DefaultMaxEventBytes bounds one event when [Client.MaxEventBytes] is 0. The largest
// legitimate events (a Responses response.completed repeating the whole output, a tool call
// sent in one chunk) are a few MiB at most.
const DefaultMaxEventBytes = 16 << 20

// Events reads server-sent events from r. Comment lines (":" keep-alives) are skipped; an
// event with no data is dropped, and so is one that the stream ends in before its blank
// line (it may have been cut anywhere). The sequence ends at EOF, or with the read error.
//
// No event may take more than maxEventBytes bytes (every byte from the end of the previous
// event to the blank line that ends this one, comments included); 0 means
// [DefaultMaxEventBytes]. The reader never buffers more than that while it looks for the end
// of an event: past it the sequence ends with a *[ResponseTooLargeError].
func Events(r io.Reader, maxEventBytes int) iter.Seq2[Event, error] {
	if maxEventBytes <= 0 {
		maxEventBytes = DefaultMaxEventBytes
	}
	return func(yield func(Event, error) bool) {
		br := bufio.NewReaderSize(r, 64<<10)
		var (
			off   int64 // bytes consumed so far
			begin int64 // where the current event's bytes began: the end of the previous one
			size  int   // bytes of the current event so far
			long  []byte
			ev    = Event{Offset: -1}
			data  []byte
			has   bool // the current event has a data field
			count int
		)
		dispatch := func() bool {
			defer func() {
				ev, data, has, size, begin = Event{Offset: -1}, data[:0], false, 0, off
			}()
			if !has {
				return true
			}
			count++
			ev.N, ev.Data = count, string(data)
			return yield(ev, nil)
		}
		// field applies one complete line, without its line ending, that starts at start.
		field := func(line []byte, start int64) bool {
			if len(line) == 0 {
				return dispatch()
			}
			if line[0] == ':' {
				return true
			}
			if ev.Offset < 0 {
				ev.Offset = start
			}
			name, value, _ := bytes.Cut(line, []byte(":"))
			value = bytes.TrimPrefix(value, []byte(" "))
			switch string(name) {
			case "event":
				ev.Name = string(value)
			case "data":
				if has {
					data = append(data, '\n')
				}
				data = append(data, value...)
				has = true
			}
			return true
		}
		for {
			chunk, err := br.ReadSlice('\n')
			size += len(chunk)
			if size > maxEventBytes {
				yield(Event{}, &ResponseTooLargeError{Limit: int64(maxEventBytes), Event: true, Offset: begin})
				return
			}
			if err == bufio.ErrBufferFull {
				long = append(long, chunk...)
				continue
			}
			line := chunk
			if len(long) > 0 {
				long = append(long, chunk...)
				line = long
			}
			start := off
			off += int64(len(line))
			long = long[:0]
			if len(line) > 0 {
				line = bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r"))
				if !field(line, start) {
					return
				}
			}
			switch {
			case err == io.EOF:
				return // an event without its blank line is incomplete: discarded, as the SSE spec says
			case err != nil:
				yield(Event{}, err)
				return
			}
		}
	}
}

// KeepAlive reports whether the data of an unnamed event is a gateway keep-alive rather
// than a payload: empty, a comment sent as data (":ping"), or the bare word ping, keep-alive
// or keepalive. Such an event carries nothing, so skipping it cannot change a response.
// Any other data that does not decode is an error, never skipped: a payload dropped from
// the middle of a tool call's arguments would change the command that runs.
func KeepAlive(data string) bool {
	d := strings.TrimSpace(data)
	if d == "" || d[0] == ':' {
		return true
	}
	switch strings.ToLower(d) {
	case "ping", "keep-alive", "keepalive":
		return true
	}
	return false
}
