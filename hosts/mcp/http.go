package mcp

import (
	"errors"
	"net/http"
)

// httpClient returns the client of an HTTP server: it sends the configured headers with
// every request and refuses redirects, so that a credential in a header goes only to
// the configured endpoint.
func httpClient(cfg Server) *http.Client {
	return &http.Client{
		Transport: &headerTransport{base: http.DefaultTransport, headers: cfg.Headers},
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			return errRedirect
		},
	}
}

var errRedirect = errors.New("the server answered with a redirect, which myco does not follow: configure the URL it redirects to")

type headerTransport struct {
	base    http.RoundTripper
	headers map[string]string
}

func (t *headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if len(t.headers) > 0 {
		req = req.Clone(req.Context())
		for k, v := range t.headers {
			req.Header.Set(k, v)
		}
	}
	return t.base.RoundTrip(req)
}
