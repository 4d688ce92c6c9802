package fakemodel

import "net/http"

// serveAnthropic renders t as a anthropic stream. (To be written.)
func serveAnthropic(w http.ResponseWriter, body []byte, t Turn) {
	writeError(w, http.StatusNotImplemented, "api_error", "fakemodel: anthropic not implemented yet", t)
}
