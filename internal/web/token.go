package web

import (
	"crypto/subtle"
	"net/http"
	"strings"
)

// TokenCookie names the cookie of the token fallback, per port so that two servers on one
// machine keep theirs apart.
func TokenCookie(port string) string { return "myco_token_" + port }

// TokenCheck admits a request that carries the server's secret: in the cookie, in an
// Authorization: Bearer header (agents' tools send the token file's header), or once in
// the URL (?token=), which is swapped for an HttpOnly SameSite=Strict cookie and a
// redirect to the clean URL so the secret leaves the address bar and the history. It is
// used only where the connecting socket's owner cannot be told.
func TokenCheck(token, port string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c, err := r.Cookie(TokenCookie(port)); err == nil && subtle.ConstantTimeCompare([]byte(c.Value), []byte(token)) == 1 {
			next.ServeHTTP(w, r)
			return
		}
		// Agents' tools send the token file's header (curl -H @$MYCO_SERVER_TOKEN_FILE).
		if b, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok && subtle.ConstantTimeCompare([]byte(b), []byte(token)) == 1 {
			next.ServeHTTP(w, r)
			return
		}
		if t := r.URL.Query().Get("token"); t != "" && subtle.ConstantTimeCompare([]byte(t), []byte(token)) == 1 && r.Method == http.MethodGet {
			http.SetCookie(w, &http.Cookie{Name: TokenCookie(port), Value: token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
			q := r.URL.Query()
			q.Del("token")
			u := *r.URL
			u.RawQuery = q.Encode()
			http.Redirect(w, r, u.RequestURI(), http.StatusSeeOther)
			return
		}
		Forbid(w, "this myco server needs the token it printed at start (open the URL it printed once)")
	})
}
