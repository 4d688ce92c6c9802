package model

import (
	"bufio"
	"io"
	"iter"
	"strings"
)

// Event is one server-sent event.
type Event struct {
	Name string // the event: field; empty when the server sent only data
	Data string // data: lines joined with "\n"
}

// maxSSELine bounds one SSE line; a reasoning blob or a large tool call can be long.
const maxSSELine = 64 << 20

// Events reads server-sent events from r. Comment lines (":" keep-alives) are skipped; an
// event with no data is dropped. The sequence ends at EOF, or with the read error.
func Events(r io.Reader) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 0, 64<<10), maxSSELine)
		var ev Event
		var data []string
		hasData := false
		flush := func() bool {
			if !hasData {
				ev = Event{}
				return true
			}
			ev.Data = strings.Join(data, "\n")
			ok := yield(ev, nil)
			ev, data, hasData = Event{}, data[:0], false
			return ok
		}
		for sc.Scan() {
			line := strings.TrimSuffix(sc.Text(), "\r")
			if line == "" {
				if !flush() {
					return
				}
				continue
			}
			if strings.HasPrefix(line, ":") {
				continue
			}
			field, value, _ := strings.Cut(line, ":")
			value = strings.TrimPrefix(value, " ")
			switch field {
			case "event":
				ev.Name = value
			case "data":
				data = append(data, value)
				hasData = true
			}
		}
		if err := sc.Err(); err != nil {
			yield(Event{}, err)
			return
		}
		flush()
	}
}
