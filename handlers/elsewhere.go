package handlers

import (
	"net/http"
	"strings"

	"myco.dev/internal/web"
)

// elsewhere sends back a request that a handed-off connection carries but this worker does
// not serve (another profile's, the supervisor's): a 307 to the same address with the
// connection closed, so the browser asks again through the supervisor. The address is
// the request's path, which a request can make //evil/x: [web.Redirect] keeps it a path
// of this server. The supervisor
// (package profiles) hands a worker the whole connection of a request for its profile, so
// every later request on that connection comes here, whatever it is for.
func elsewhere(base string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Path
		if p == base || strings.HasPrefix(p, base+"/") || strings.HasPrefix(p, "/static/") {
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Connection", "close")
		w.Header().Set("Cache-Control", "no-store")
		web.Redirect(w, r, r.URL.RequestURI(), http.StatusTemporaryRedirect)
	})
}
