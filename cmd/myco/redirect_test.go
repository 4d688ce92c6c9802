package main

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// TestNoRedirectLeavesTheOrigin: no answer of the server sends the browser to another
// site, whatever path a request names: on a connection handed to a worker, GET //evil/x
// was answered 307 Location: //evil/x, which a browser follows to the host evil. Tried
// on a connection handed to a worker, on one the supervisor keeps, and with the token of
// token mode, whose first visit redirects to the URL without it.
func TestNoRedirectLeavesTheOrigin(t *testing.T) {
	home := profileHome(t, "anthropic-messages", "http://127.0.0.1:9/", "")
	_, u, _ := startServer(t, home)
	_, tu, _ := startServer(t, profileHome(t, "anthropic-messages", "http://127.0.0.1:9/", ""), "--auth", "token") // one server per MYCO_HOME
	_, token, _ := strings.Cut(tu, "?token=")
	for _, tt := range []struct {
		name, server, first string // first, when set, is the request that hands the connection to a worker
		target              string
	}{
		{"handed to a worker", u, "/profiles/default/api/sessions", "//evil/x"},
		{"handed to a worker, a backslash", u, "/profiles/default/api/sessions", `/\evil/x`},
		{"handed to a worker, three slashes", u, "/profiles/default/", "///evil/x?y=1"},
		{"kept by the supervisor", u, "", "//evil/x"},
		{"the token's redirect", tu, "", "//evil/x?token=" + token},
	} {
		t.Run(tt.name, func(t *testing.T) {
			addr := strings.TrimPrefix(strings.SplitN(tt.server, "/profiles/", 2)[0], "http://")
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(10 * time.Second))
			br := bufio.NewReader(c)
			get := func(target string) *http.Response {
				t.Helper()
				io.WriteString(c, "GET "+target+" HTTP/1.1\r\nHost: "+addr+"\r\n\r\n")
				resp, err := http.ReadResponse(br, nil)
				if err != nil {
					t.Fatalf("GET %s: %v", target, err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				return resp
			}
			if tt.first != "" {
				if resp := get(tt.first); resp.StatusCode != 200 {
					t.Fatalf("GET %s = %d, want 200", tt.first, resp.StatusCode)
				}
			}
			resp := get(tt.target)
			loc := resp.Header.Get("Location")
			if resp.StatusCode/100 == 3 && loc == "" {
				t.Errorf("GET %s = %d without a Location", tt.target, resp.StatusCode)
			}
			if loc == "" {
				return // answered here (the supervisor's 404)
			}
			base, _ := url.Parse("http://" + addr + "/profiles/default/")
			ref, err := url.Parse(loc)
			if err != nil || !strings.HasPrefix(loc, "/") || strings.HasPrefix(loc, "//") || strings.HasPrefix(loc, `/\`) ||
				base.ResolveReference(ref).Host != addr {
				t.Errorf("GET %s = %d, Location %q: want a path of this server", tt.target, resp.StatusCode, loc)
			}
		})
	}
}
