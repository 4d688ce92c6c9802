package handlers

import (
	"log/slog"
	"net/http"
	"time"
)

// The time bounds of both servers (the supervisor that owns the port and each profile's
// worker). A connection that sends nothing, or a request whose headers or body dribble in,
// is cut off: nothing another user (or a stuck client) does can hold descriptors for long.
// Event streams lift the read bound once they start (see startSSE).
const (
	readHeaderTimeout = 10 * time.Second
	readTimeout       = 2 * time.Minute // a request's headers and body; uploads are bounded in size too
	idleTimeout       = 2 * time.Minute // a kept-alive connection between requests
)

// NewServer returns an http.Server for h with the servers' time bounds and log.
func NewServer(h http.Handler, log *slog.Logger) *http.Server {
	if log == nil {
		log = slog.Default()
	}
	return &http.Server{
		Handler:           h,
		ConnContext:       ConnContext,
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		IdleTimeout:       idleTimeout,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
}

// unbounded lifts the read bound of a request that has been read whole and whose answer
// lasts (an event stream): the server's ReadTimeout would otherwise end its context.
func unbounded(w http.ResponseWriter) {
	http.NewResponseController(w).SetReadDeadline(time.Time{})
}
