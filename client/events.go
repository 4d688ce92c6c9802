package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"myco.dev/api"
)

// EventsOptions choose a stream's sessions and where it starts.
type EventsOptions struct {
	Sessions []string // nil means every session of the profile
	// After is the cursor to start after: the event_id of a submit's answer or a snapshot,
	// or an event's id; "" starts now.
	After string
}

// Stream reads the API's event stream. When the connection drops, it connects again from
// the last event it read (Last-Event-ID), so that it misses nothing: the server sends what
// came since, or one reset event per session whose missed events it no longer has (read
// the snapshot again then). It is not safe for concurrent use; Close it when done.
type Stream struct {
	c      *Client
	ctx    context.Context
	cancel context.CancelFunc
	o      EventsOptions
	last   string // the id of the last event read
	body   io.ReadCloser
	rd     *api.SSEReader
	// Reconnects counts the connections made after the first.
	Reconnects int
}

// Events opens the event stream; an error answer (an unknown session) is its error.
func (c *Client) Events(ctx context.Context, o EventsOptions) (*Stream, error) {
	ctx, cancel := context.WithCancel(ctx)
	s := &Stream{c: c, ctx: ctx, cancel: cancel, o: o, last: o.After}
	if err := s.connect(); err != nil {
		cancel()
		return nil, err
	}
	return s, nil
}

func (s *Stream) connect() error {
	q := url.Values{}
	if s.o.Sessions != nil {
		q.Set("session", strings.Join(s.o.Sessions, ","))
	}
	h := http.Header{"Accept": {"text/event-stream"}}
	if s.last != "" {
		h.Set("Last-Event-ID", s.last)
	}
	resp, err := s.c.do(s.ctx, "GET", "/events"+query(q), nil, h)
	if err != nil {
		return err
	}
	s.body, s.rd = resp.Body, api.NewSSEReader(resp.Body)
	return nil
}

// LastID returns the id of the last event Next returned (or the cursor the stream started
// after): the cursor to resume from.
func (s *Stream) LastID() string { return s.last }

// Next returns the next event, pings included, decoded into its type: an
// [api.StateEvent], an [api.DoneEvent], …, or an [api.UnknownEvent] for a type a later
// myco added (skip it). It reconnects after a drop, and returns an error when the stream's
// context ends, or when a reconnect is answered with an error.
func (s *Stream) Next() (api.Event, error) {
	for backoff := 100 * time.Millisecond; ; {
		ev, err := s.read()
		if err == nil {
			return ev, nil
		}
		if s.ctx.Err() != nil {
			return nil, s.ctx.Err()
		}
		if _, ok := errors.AsType[*Error](err); ok {
			return nil, err
		}
		// The connection dropped: connect again from the last event read.
		s.body.Close()
		for {
			select {
			case <-s.ctx.Done():
				return nil, s.ctx.Err()
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, 5*time.Second)
			s.Reconnects++
			err := s.connect()
			if err == nil {
				break
			}
			if _, ok := errors.AsType[*Error](err); ok || s.ctx.Err() != nil {
				return nil, err
			}
		}
	}
}

// read reads one event of the current connection.
func (s *Stream) read() (api.Event, error) {
	sse, err := s.rd.Next()
	if err != nil {
		return nil, err
	}
	ev, err := api.DecodeEvent([]byte(sse.Data))
	if err != nil {
		return nil, &Error{Code: "invalid_event", Message: fmt.Sprintf("an event that does not decode: %v", err)}
	}
	if sse.Type != "" && ev.Info().Type != sse.Type {
		return nil, &Error{Code: "invalid_event", Message: fmt.Sprintf("an event named %q of type %q", sse.Type, ev.Info().Type)}
	}
	if sse.ID != "" {
		s.last = sse.ID
	}
	return ev, nil
}

// Close ends the stream.
func (s *Stream) Close() error {
	s.cancel()
	if s.body != nil {
		return s.body.Close()
	}
	return nil
}
