package web

import (
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// Access says who a server admits: requests under a loopback Host with its Port, on
// connections of user UID, or, when Token is set (where no owner can be told), carrying
// the token.
type Access struct {
	Port  string
	UID   int
	Token string
}

// Guard wraps h in the checks of every request: the Host check, then the owner check (or,
// with a token, the token check).
func (a Access) Guard(h http.Handler) http.Handler {
	if a.Token != "" {
		h = healthOfOwner(a.UID, h, TokenCheck(a.Token, a.Port, h))
	} else {
		h = OwnerCheck(a.UID, h)
	}
	return HostCheck(a.Port, HeadAsGet(h))
}

// HeadAsGet answers a HEAD request wherever GET is answered: h sees a GET, and the server,
// which knows the request was a HEAD, sends its headers without the body.
func HeadAsGet(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodHead {
			get := *r
			get.Method = http.MethodGet
			r = &get
		}
		h.ServeHTTP(w, r)
	})
}

// healthOfOwner serves GET /healthz to the owner without the token, where the system tells
// a connection's owner (a monitor, a systemd check, has no token to send); every other
// request, and /healthz of anyone else, goes through tokenCheck.
func healthOfOwner(uid int, h, tokenCheck http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p, ok := r.Context().Value(peerKey{}).(peer); ok && p.err == nil && p.uid == uid && r.URL.Path == "/healthz" &&
			(r.Method == http.MethodGet || r.Method == http.MethodHead) {
			h.ServeHTTP(w, r)
			return
		}
		tokenCheck.ServeHTTP(w, r)
	})
}

// HostCheck refuses a request whose Host header is not a loopback name or address with
// the server's port: a DNS-rebinding page (evil.example resolving to 127.0.0.1) sends its
// own name, which no origin check sees on a GET. An empty, foreign or 0.0.0.0 Host gets
// 421 Misdirected Request, in the JSON error envelope (code misdirected_request).
func HostCheck(port string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !AllowedHost(r.Host, port) {
			w.Header().Set("Connection", "close")
			WriteError(w, NewError(http.StatusMisdirectedRequest, "misdirected_request", "myco answers only to loopback names with its own port (http://127.0.0.1:"+port+
				"/ or http://localhost:"+port+"/). Through an SSH tunnel, forward the same port: ssh -L "+
				port+":127.0.0.1:"+port+" HOST"))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// AllowedHost reports whether host is 127.0.0.1, ::1 or localhost (any case), with port.
func AllowedHost(host, port string) bool {
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

// OriginCheck refuses a state-changing request, or an event stream, that a page of another
// origin made, and returns why ("" admits it): its Origin, when present, must be this
// server's (a "null" origin never is), and without an Origin its Sec-Fetch-Site must be
// same-origin or none. A request with neither header comes from a local tool such as curl,
// which the socket owner check already restricts to the user, and is let through. A form
// posted from another site always carries an Origin, so a CORS-simple cross-site POST
// never changes state.
func OriginCheck(port string, r *http.Request) (refused string) {
	site := r.Header.Get("Sec-Fetch-Site")
	if o := r.Header.Get("Origin"); o == "null" && site == "same-origin" {
		// A form this server's own page posts: with Referrer-Policy: no-referrer, Chromium
		// sends Origin: null, and Sec-Fetch-Site (which no page can set) says whose it is.
		// A sandboxed or cross-site document's null origin comes as cross-site.
		return ""
	} else if o != "" {
		u, err := url.Parse(o)
		if err == nil && u.Scheme == "http" && u.Path == "" && AllowedHost(u.Host, port) {
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

// OriginGuard is middleware that passes only requests [OriginCheck] admits, answering the
// others with refuse.
func OriginGuard(port string, refuse func(http.ResponseWriter, string)) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if msg := OriginCheck(port, r); msg != "" {
				refuse(w, msg)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// Forbid refuses a request with 403, in the JSON error envelope (code says why:
// forbidden_origin, not_owner, token_required), and closes its connection, so that a
// refused client holds nothing once it has its answer.
func Forbid(w http.ResponseWriter, code, msg string) {
	w.Header().Set("Connection", "close")
	WriteError(w, NewError(http.StatusForbidden, code, msg))
}

// ForbidOrigin is [Forbid] for a request [OriginCheck] refused.
func ForbidOrigin(w http.ResponseWriter, msg string) { Forbid(w, "forbidden_origin", msg) }
