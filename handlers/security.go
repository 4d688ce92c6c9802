package handlers

import (
	"crypto/subtle"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// The content policy of the application's pages: nothing inline, no eval, nothing from
// another origin.
const appCSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
	"font-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"

// documentCSP is the stricter policy of workspace documents and raw workspace files: a
// sandbox without allow-same-origin, so a document's scripts (if any got through) could not
// run, let alone with the application's privileges.
const documentCSP = "sandbox; default-src 'none'; style-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"

// headers sets the security headers of every response.
func headers(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		setHeaders(w.Header())
		next.ServeHTTP(w, r)
	})
}

func setHeaders(h http.Header) {
	h.Set("Content-Security-Policy", appCSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	h.Set("X-Frame-Options", "DENY")
}

// hostCheck refuses a request whose Host header is not a loopback name or address with
// the server's port: a DNS-rebinding page (evil.example resolving to 127.0.0.1) sends its
// own name, which no origin check sees on a GET. An empty, foreign or 0.0.0.0 Host gets
// 421 Misdirected Request.
func hostCheck(port string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !allowedHost(r.Host, port) {
			w.Header().Set("Connection", "close")
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.WriteHeader(http.StatusMisdirectedRequest)
			w.Write([]byte("myco answers only to loopback names with its own port (http://127.0.0.1:" + port +
				"/ or http://localhost:" + port + "/). Through an SSH tunnel, forward the same port: ssh -L " +
				port + ":127.0.0.1:" + port + " HOST\n"))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// allowedHost reports whether host is 127.0.0.1, ::1 or localhost (any case), with port.
func allowedHost(host, port string) bool {
	h, p, err := net.SplitHostPort(host)
	if err != nil || p != port {
		return false
	}
	switch strings.ToLower(h) {
	case "localhost", "127.0.0.1", "::1":
		return true
	}
	return false
}

// originCheck refuses a state-changing request, or an event stream, that a page of another
// origin made: its Origin, when present, must be this server's (a "null" origin never is),
// and without an Origin its Sec-Fetch-Site must be same-origin or none. A request with
// neither header comes from a local tool such as curl, which the socket owner check
// already restricts to the user, and is let through. A form posted from another site
// always carries an Origin, so a CORS-simple cross-site POST never changes state.
func originCheck(port string, r *http.Request) (refused string) {
	site := r.Header.Get("Sec-Fetch-Site")
	if o := r.Header.Get("Origin"); o == "null" && site == "same-origin" {
		// A form this server's own page posts: with Referrer-Policy: no-referrer, Chromium
		// sends Origin: null, and Sec-Fetch-Site (which no page can set) says whose it is.
		// A sandboxed or cross-site document's null origin comes as cross-site.
		return ""
	} else if o != "" {
		u, err := url.Parse(o)
		if err == nil && u.Scheme == "http" && u.Path == "" && allowedHost(u.Host, port) {
			return ""
		}
		return "cross-origin request refused: Origin " + strconv.Quote(o) + " is not this server"
	}
	switch site {
	case "", "same-origin", "none":
		return ""
	default:
		return "cross-site request refused (Sec-Fetch-Site: " + site + ")"
	}
}

// forbid refuses a request with 403 and closes its connection, so that a refused client
// holds nothing once it has its answer.
func forbid(w http.ResponseWriter, msg string) {
	w.Header().Set("Connection", "close")
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusForbidden)
	w.Write([]byte(msg + "\n"))
}

// tokenCookie names the cookie of the token fallback, per port so that two servers on one
// machine keep theirs apart.
func tokenCookie(port string) string { return "myco_token_" + port }

// tokenCheck admits a request that carries the server's secret: in the cookie, or once in
// the URL (?token=), which is swapped for an HttpOnly SameSite=Strict cookie and a
// redirect to the clean URL so the secret leaves the address bar and the history. It is
// used only where the connecting socket's owner cannot be told.
func tokenCheck(token, port string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c, err := r.Cookie(tokenCookie(port)); err == nil && subtle.ConstantTimeCompare([]byte(c.Value), []byte(token)) == 1 {
			next.ServeHTTP(w, r)
			return
		}
		// Agents' tools send the token file's header (curl -H @$MYCO_SERVER_TOKEN_FILE).
		if b, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok && subtle.ConstantTimeCompare([]byte(b), []byte(token)) == 1 {
			next.ServeHTTP(w, r)
			return
		}
		if t := r.URL.Query().Get("token"); t != "" && subtle.ConstantTimeCompare([]byte(t), []byte(token)) == 1 && r.Method == http.MethodGet {
			http.SetCookie(w, &http.Cookie{Name: tokenCookie(port), Value: token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
			q := r.URL.Query()
			q.Del("token")
			u := *r.URL
			u.RawQuery = q.Encode()
			http.Redirect(w, r, u.RequestURI(), http.StatusSeeOther)
			return
		}
		forbid(w, "this myco server needs the token it printed at start (open the URL it printed once)")
	})
}
