package web

import (
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"time"
)

// The time bounds of both servers (the supervisor that owns the port and each profile's
// worker). A connection that sends nothing, or a request whose headers or body dribble in,
// is cut off: nothing another user (or a stuck client) does can hold descriptors for long.
// Event streams lift the read bound once they start (see [StartSSE] and [Unbounded]).
const (
	readHeaderTimeout = 10 * time.Second
	readTimeout       = 2 * time.Minute // a request's headers and body; uploads are bounded in size too
	idleTimeout       = 2 * time.Minute // a kept-alive connection between requests
)

// NewServer returns an http.Server for h with the servers' time bounds, [ConnContext] for
// the owner check, and log for the server's own errors; a nil log means slog.Default().
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

// Unbounded lifts the read bound of a request that has been read whole and whose answer
// lasts (an event stream): the server's ReadTimeout would otherwise end its context.
func Unbounded(w http.ResponseWriter) {
	http.NewResponseController(w).SetReadDeadline(time.Time{})
}

// PortOf returns the port of a listener's address, for the Host and Origin checks.
func PortOf(addr net.Addr) string {
	if a, ok := addr.(*net.TCPAddr); ok {
		return strconv.Itoa(a.Port)
	}
	_, p, _ := net.SplitHostPort(addr.String())
	return p
}
