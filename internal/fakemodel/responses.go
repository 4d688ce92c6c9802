package fakemodel

import "net/http"

// serveResponses renders t as a responses stream. (To be written.)
func serveResponses(w http.ResponseWriter, body []byte, t Turn) {
	writeError(w, http.StatusNotImplemented, "api_error", "fakemodel: responses not implemented yet", t)
}
