package web

import (
	"log/slog"
	"net/http"
	"time"
)

// AccessLog logs one line per request at debug level once it has been answered: its
// method, path, status, the bytes of its body and how long it took (an event stream's line
// comes when it ends). The query is left out: it may carry what a user typed. A logger
// that does not log debug costs nothing here.
func AccessLog(log *slog.Logger) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if log == nil || !log.Enabled(r.Context(), slog.LevelDebug) {
				next.ServeHTTP(w, r)
				return
			}
			start := time.Now()
			rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
			next.ServeHTTP(rec, r)
			log.LogAttrs(r.Context(), slog.LevelDebug, "request", slog.String("method", r.Method), slog.String("path", r.URL.Path),
				slog.Int("status", rec.status), slog.Int64("bytes", rec.bytes), slog.Duration("duration", time.Since(start)))
		})
	}
}

// statusRecorder notes the status and the body's size of an answer.
type statusRecorder struct {
	http.ResponseWriter
	status int
	bytes  int64
	wrote  bool
}

func (r *statusRecorder) WriteHeader(code int) {
	if !r.wrote && code >= 200 {
		r.status, r.wrote = code, true
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	r.wrote = true
	n, err := r.ResponseWriter.Write(b)
	r.bytes += int64(n)
	return n, err
}

// Unwrap lets http.ResponseController reach the connection (an event stream flushes).
func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
