package handlers

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
