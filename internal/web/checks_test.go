package web

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"
)

// TestAllowedHost: loopback names and addresses with the server's port only.
func TestAllowedHost(t *testing.T) {
	for host, want := range map[string]bool{
		"127.0.0.1:80": true, "localhost:80": true, "LOCALHOST:80": true, "[::1]:80": true,
		"127.0.0.1:81": false, "127.0.0.1": false, "0.0.0.0:80": false, "evil.example:80": false,
		"127.0.0.1.nip.io:80": false, "[::ffff:127.0.0.1]:80": false, "": false,
	} {
		if got := AllowedHost(host, "80"); got != want {
			t.Errorf("AllowedHost(%q, 80) = %v, want %v", host, got, want)
		}
	}
}

// TestOriginCheck: the server's own origin, a same-origin form's null origin, and a local
// tool without either header pass; other origins and cross-site fetches do not.
func TestOriginCheck(t *testing.T) {
	for _, tt := range []struct {
		origin, site string
		ok           bool
	}{
		{"", "", true},
		{"http://127.0.0.1:80", "", true},
		{"http://localhost:80", "same-origin", true},
		{"null", "same-origin", true},
		{"", "none", true},
		{"null", "", false},
		{"null", "cross-site", false},
		{"http://evil.example", "", false},
		{"https://127.0.0.1:80", "", false},
		{"http://127.0.0.1:81", "", false},
		{"", "cross-site", false},
		{"", "same-site", false},
	} {
		r := httptest.NewRequest("POST", "/", nil)
		if tt.origin != "" {
			r.Header.Set("Origin", tt.origin)
		}
		if tt.site != "" {
			r.Header.Set("Sec-Fetch-Site", tt.site)
		}
		if got := OriginCheck("80", r); (got == "") != tt.ok {
			t.Errorf("OriginCheck(Origin %q, Sec-Fetch-Site %q) = %q, want ok=%v", tt.origin, tt.site, got, tt.ok)
		}
	}
}

// get sends a GET to srv without following redirects.
func get(t *testing.T, srv *httptest.Server, path string, h http.Header) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", srv.URL+path, nil)
	for k, v := range h {
		req.Header[k] = v
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }, Timeout: 10 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

var inside = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("in")) })

// TestTokenFallback checks the secret that replaces the owner check where no owner can be
// told: refused without it, swapped from the URL for a cookie and a clean URL, and taken
// from the token file's Authorization header.
func TestTokenFallback(t *testing.T) {
	srv := httptest.NewUnstartedServer(nil)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	srv.Config.Handler = TokenCheck("s3cret", port, inside)
	srv.Start()
	defer srv.Close()
	if resp, body := get(t, srv, "/profiles/default/", nil); resp.StatusCode != http.StatusForbidden || !resp.Close || !strings.Contains(body, `"code": "token_required"`) {
		t.Errorf("without the token: %d %v %s, want 403 token_required and the connection closed", resp.StatusCode, resp.Header, body)
	}
	if resp, _ := get(t, srv, "/profiles/default/?token=wrong", nil); resp.StatusCode != http.StatusForbidden {
		t.Errorf("with a wrong token: %d, want 403", resp.StatusCode)
	}
	resp, _ := get(t, srv, "/profiles/default/?token=s3cret&x=1", nil)
	c := resp.Header.Get("Set-Cookie")
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/profiles/default/?x=1" ||
		!strings.Contains(c, "HttpOnly") || !strings.Contains(c, "SameSite=Strict") {
		t.Fatalf("with the token: %d, Location %q, cookie %q", resp.StatusCode, resp.Header.Get("Location"), c)
	}
	resp, body := get(t, srv, "/profiles/default/", http.Header{"Cookie": {TokenCookie(port) + "=s3cret"}})
	if resp.StatusCode != http.StatusOK || body != "in" {
		t.Errorf("with the cookie: %d %q", resp.StatusCode, body)
	}
	resp, body = get(t, srv, "/profiles/default/", http.Header{"Authorization": {"Bearer s3cret"}})
	if resp.StatusCode != http.StatusOK || body != "in" {
		t.Errorf("with the header: %d %q", resp.StatusCode, body)
	}
}

// TestGuard: the owner's connection passes; a Host that is not the server's is 421 before
// any other check.
func TestGuard(t *testing.T) {
	srv := httptest.NewUnstartedServer(nil)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	srv.Config.Handler = Access{Port: port, UID: os.Getuid()}.Guard(inside)
	srv.Config.ConnContext = ConnContext
	srv.Start()
	defer srv.Close()
	if resp, body := get(t, srv, "/", nil); resp.StatusCode != http.StatusOK || body != "in" {
		t.Errorf("the owner: %d %q, want 200", resp.StatusCode, body)
	}
	req, _ := http.NewRequest("GET", srv.URL+"/", nil)
	req.Host = "evil.example:" + port
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var body ErrorBody
	json.NewDecoder(resp.Body).Decode(&body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusMisdirectedRequest || resp.Header.Get("Content-Type") != "application/json" ||
		body.Error.Code != "misdirected_request" || !strings.Contains(body.Error.Message, "ssh -L "+port) {
		t.Errorf("a foreign Host: %d %s %+v, want 421 in the JSON envelope", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	other := httptest.NewUnstartedServer(nil)
	other.Config.ConnContext = ConnContext
	_, oport, _ := net.SplitHostPort(other.Listener.Addr().String())
	other.Config.Handler = Access{Port: oport, UID: os.Getuid() + 1}.Guard(inside)
	other.Start()
	defer other.Close()
	if resp, body := get(t, other, "/", nil); resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "belongs to uid") {
		t.Errorf("a server of another uid: %d %q, want 403", resp.StatusCode, body)
	}
}

// TestAcceptsGzip: the qualities of Accept-Encoding count; q=0 refuses.
func TestAcceptsGzip(t *testing.T) {
	for h, want := range map[string]bool{
		"": false, "gzip": true, "gzip, deflate, br": true, "br;q=1.0, gzip;q=0.8": true,
		"gzip;q=0": false, "gzip; q=0.000": false, "GZIP": true, "*": true, "*;q=0": false,
		"*, gzip;q=0": false, "identity": false, "deflate, *;q=0.1": true, "gzip;q=bad": false,
	} {
		r := httptest.NewRequest("GET", "/", nil)
		if h != "" {
			r.Header.Set("Accept-Encoding", h)
		}
		if got := AcceptsGzip(r); got != want {
			t.Errorf("AcceptsGzip(%q) = %v, want %v", h, got, want)
		}
	}
}
