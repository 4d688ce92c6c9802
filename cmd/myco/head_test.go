package main

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestHeadAndHealthz (issue 29): HEAD is answered wherever GET is (the server's and a
// profile's routes, an asset, the API), with no body; with --auth token, /healthz answers
// the owner without the token, and everything else still wants it.
func TestHeadAndHealthz(t *testing.T) {
	home := profileHome(t, "anthropic-messages", "http://127.0.0.1:9", "")
	_, url, _ := startServer(t, home)
	root := url[:strings.Index(url, "/profiles/")]
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	page := string(b)
	i := strings.Index(page, "/static/app.")
	asset := root + page[i:i+strings.Index(page[i:], `"`)]
	for _, u := range []string{root + "/healthz", root + "/status", url, url + "workspace/", url + "api/version", url + "api/sessions", asset} {
		resp, err := http.Head(u)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || len(body) != 0 {
			t.Errorf("HEAD %s = %d with %d bytes, want 200 and no body", u, resp.StatusCode, len(body))
		}
	}

	thome := profileHome(t, "anthropic-messages", "http://127.0.0.1:9", "")
	_, turl, _ := startServer(t, thome, "--auth", "token")
	troot := turl[:strings.Index(turl, "/profiles/")]
	for _, m := range []string{http.MethodGet, http.MethodHead} {
		req, _ := http.NewRequest(m, troot+"/healthz", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s /healthz without the token, from its owner = %d, want 200", m, resp.StatusCode)
		}
	}
	for _, u := range []string{troot + "/status", strings.Split(turl, "?")[0] + "api/version"} {
		resp, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("GET %s without the token = %d, want 403", u, resp.StatusCode)
		}
	}
}
