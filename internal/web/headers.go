package web

import "net/http"

// AppCSP is the content policy of the application's pages: nothing inline, no eval,
// nothing from another origin.
const AppCSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
	"font-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"

// DocumentCSP is the stricter policy of workspace documents and raw workspace files: a
// sandbox without allow-same-origin, so a document's scripts (if any got through) could not
// run, let alone with the application's privileges.
const DocumentCSP = "sandbox; default-src 'none'; style-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"

// Headers is middleware that sets the security headers of every response.
func Headers(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		SetHeaders(w.Header())
		next.ServeHTTP(w, r)
	})
}

// SetHeaders sets the security headers of an answer: the application's content policy,
// no sniffing, no referrer, no framing, no cross-origin reads.
func SetHeaders(h http.Header) {
	h.Set("Content-Security-Policy", AppCSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	h.Set("X-Frame-Options", "DENY")
}
