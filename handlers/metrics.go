package handlers

import (
	"context"
	"errors"
	"time"

	"myco.dev/sessions"
)

// The profile's metrics are [Deps.Metrics], served at /profiles/NAME/metrics; the
// handlers count what only they see, the event streams open.

// streaming counts an event stream of kind (page, api) open in [Deps.Streams], until
// the func it returns is called.
func (s *server) streaming(kind string) (done func()) {
	if s.Streams == nil {
		return func() {}
	}
	g := s.Streams.With(kind)
	g.Add(1)
	return func() { g.Add(-1) }
}

// nextOrPing waits for sub's next updates, calling ping (the stream's own ping event)
// each time every passes without one. It reports false when the stream is over: the
// client went, the subscription ended, or a ping could not be sent.
func nextOrPing(ctx context.Context, sub *sessions.Subscription, every time.Duration, ping func() error) ([]sessions.Update, bool) {
	for {
		wait, cancel := context.WithTimeout(ctx, every)
		us, err := sub.Next(wait)
		cancel()
		switch {
		case ctx.Err() != nil:
			return nil, false
		case errors.Is(err, context.DeadlineExceeded):
			if ping() != nil {
				return nil, false
			}
		case err != nil:
			return nil, false
		default:
			return us, true
		}
	}
}
