package handlers

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestElsewhere: a worker sends a request it does not serve (another profile's, the
// supervisor's stream) back with a 307 and a closed connection.
func TestElsewhere(t *testing.T) {
	h := elsewhere("/profiles/work", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("mine")) }))
	for _, tt := range []struct {
		path string
		mine bool
	}{
		{"/profiles/work/", true}, {"/profiles/work", true}, {"/profiles/work/api/sessions", true}, {"/static/app.css", true},
		{"/profiles/home/", false}, {"/profiles/workshop/", false}, {"/events", false}, {"/", false}, {"/status", false},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", tt.path+"?x=1", nil))
		if tt.mine && rec.Body.String() != "mine" {
			t.Errorf("%s: %d %q, want it served", tt.path, rec.Code, rec.Body)
		}
		if !tt.mine && (rec.Code != http.StatusTemporaryRedirect || rec.Header().Get("Location") != tt.path+"?x=1" || rec.Header().Get("Connection") != "close") {
			t.Errorf("%s: %d %v, want a 307 to itself with the connection closed", tt.path, rec.Code, rec.Header())
		}
	}
}

// TestElsewhereStaysHere: a path that a browser would read as another host (//evil/x,
// /\evil/x) is sent back to a path of this server, never to that host.
func TestElsewhereStaysHere(t *testing.T) {
	h := elsewhere("/profiles/work", http.NotFoundHandler())
	for _, tt := range []struct{ target, want string }{
		{"//evil/x", "/evil/x"}, {"//evil/x?y=1", "/evil/x?y=1"}, {"///evil", "/evil"}, {`/\evil/x`, "/%5Cevil/x"},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", tt.target, nil))
		if loc := rec.Header().Get("Location"); rec.Code != http.StatusTemporaryRedirect || loc != tt.want {
			t.Errorf("GET %s = %d, Location %q; want a 307 to %q", tt.target, rec.Code, loc, tt.want)
		}
	}
}
