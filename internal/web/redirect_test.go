package web

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
)

// TestRedirect: whatever path a request named, a redirect's Location is a path of this
// server, which a browser resolves to this origin.
func TestRedirect(t *testing.T) {
	for _, tt := range []struct{ target, want string }{
		{"/profiles/default/", "/profiles/default/"},
		{"/profiles/default/s/1?x=1", "/profiles/default/s/1?x=1"},
		{"//evil/x", "/evil/x"},
		{"///evil/x", "/evil/x"},
		{`/\evil/x`, "/evil/x"},
		{`\\evil/x`, "/evil/x"},
		{"/\t/evil/x", "/%09/evil/x"},
		{"/\n/evil/x", "/%0A/evil/x"},
		{"https://evil/x", "/"},
		{"evil/x", "/"},
		{"", "/"},
	} {
		rec := httptest.NewRecorder()
		Redirect(rec, httptest.NewRequest("GET", "/a/b", nil), tt.target, http.StatusTemporaryRedirect)
		loc := rec.Header().Get("Location")
		if loc != tt.want {
			t.Errorf("Redirect(%q): Location = %q, want %q", tt.target, loc, tt.want)
		}
		base, _ := url.Parse("http://127.0.0.1:8080/a/b")
		ref, err := url.Parse(loc)
		if err != nil || base.ResolveReference(ref).Host != base.Host {
			t.Errorf("Redirect(%q): Location %q leaves the origin (%v)", tt.target, loc, err)
		}
	}
}
