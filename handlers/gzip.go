package handlers

import (
	"bytes"
	"compress/gzip"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"myco.dev/internal/web"
)

var gzipWriters = sync.Pool{New: func() any {
	zw, _ := gzip.NewWriterLevel(nil, gzip.DefaultCompression)
	return zw
}}

// buffered answers HTML pages and JSON in one piece with a Content-Length, gzipped for
// clients that accept it: a transcript page is mostly repeated markup, and a whole answer
// passes the supervisor's proxy in one write instead of a flush per chunk. Event streams,
// files and assets are left alone (the assets come compressed already).
func buffered(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/events") || strings.HasPrefix(r.URL.Path, "/static/") {
			next.ServeHTTP(w, r)
			return
		}
		bw := &bufferedResponse{ResponseWriter: w, gzip: web.AcceptsGzip(r)}
		next.ServeHTTP(bw, r)
		bw.finish()
	})
}

// bufferedResponse holds an HTML or JSON answer until the handler returns.
type bufferedResponse struct {
	http.ResponseWriter
	gzip    bool
	decided bool
	hold    bool // the answer is held in buf
	status  int
	buf     bytes.Buffer
}

func (b *bufferedResponse) WriteHeader(code int) {
	if b.decided {
		return
	}
	b.decided = true
	ct := b.Header().Get("Content-Type")
	b.hold = (strings.HasPrefix(ct, "text/html") || strings.HasPrefix(ct, "application/json")) && b.Header().Get("Content-Encoding") == "" &&
		code != http.StatusNoContent && code != http.StatusNotModified
	if b.hold {
		b.status = code
		return
	}
	b.ResponseWriter.WriteHeader(code)
}

func (b *bufferedResponse) Write(p []byte) (int, error) {
	if !b.decided {
		if b.Header().Get("Content-Type") == "" {
			b.Header().Set("Content-Type", http.DetectContentType(p))
		}
		b.WriteHeader(http.StatusOK)
	}
	if b.hold {
		return b.buf.Write(p)
	}
	return b.ResponseWriter.Write(p)
}

// finish writes a held answer: compressed when the client takes gzip and it is worth it.
func (b *bufferedResponse) finish() {
	if !b.hold {
		return
	}
	h := b.Header()
	body := b.buf.Bytes()
	h.Add("Vary", "Accept-Encoding")
	if b.gzip && len(body) > 512 {
		var z bytes.Buffer
		zw := gzipWriters.Get().(*gzip.Writer)
		zw.Reset(&z)
		zw.Write(body)
		zw.Close()
		gzipWriters.Put(zw)
		body = z.Bytes()
		h.Set("Content-Encoding", "gzip")
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	b.ResponseWriter.WriteHeader(b.status)
	b.ResponseWriter.Write(body)
}

// Unwrap lets http.ResponseController reach the connection.
func (b *bufferedResponse) Unwrap() http.ResponseWriter { return b.ResponseWriter }
