package web

import (
	"context"
	"fmt"
	"net"
	"net/http"

	"myco.dev/internal/peercred"
)

type peerKey struct{}

// peer is what ConnContext learnt about a connection's client.
type peer struct {
	uid int
	err error
}

// ConnContext looks up the owner of the client end of each accepted connection
// ([ConnOwner]) and keeps it in the connection's context, for the owner check of every
// request on it. Set it as http.Server.ConnContext.
func ConnContext(ctx context.Context, c net.Conn) context.Context {
	uid, err := ConnOwner(c)
	return context.WithValue(context.WithValue(ctx, peerKey{}, peer{uid: uid, err: err}), connKey{}, underneath(c))
}

// ConnOwner returns the uid that owns the client end of c: over a Unix socket (a profile
// worker's, from the supervisor) the socket's peer credentials, over loopback TCP the
// kernel's socket tables ([peercred.TCP]). A connection handed over by another process is
// looked up underneath its wrapper.
func ConnOwner(c net.Conn) (int, error) {
	c = underneath(c)
	if uc, ok := c.(*net.UnixConn); ok {
		cred, err := peercred.Unix(uc)
		return cred.UID, err
	}
	return peercred.TCP(c.RemoteAddr(), c.LocalAddr())
}

// underneath returns the connection that c wraps (its Unwrap method's), all the way down.
func underneath(c net.Conn) net.Conn {
	for {
		u, ok := c.(interface{ Unwrap() net.Conn })
		if !ok {
			return c
		}
		c = u.Unwrap()
	}
}

type connKey struct{}

// OwnerCheck serves only requests whose connection belongs to uid, as [ConnContext] told:
// another user of the machine cannot drive the server, while the owner, an SSH
// port-forward (which sshd opens as the user) and the agent's own tools need no login.
// Listeners that other users can reach also pass through [OwnerOnly], which refuses their
// connections before a request is read.
func OwnerCheck(uid int, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, ok := r.Context().Value(peerKey{}).(peer)
		switch {
		case !ok || p.err != nil:
			Forbid(w, "not_owner", notToldMsg)
		case p.uid != uid:
			Forbid(w, "not_owner", notOwnerMsg(uid, p.uid))
		default:
			next.ServeHTTP(w, r)
		}
	})
}

// The sentences of a not_owner refusal, at accept ([OwnerOnly]) and per request
// ([OwnerCheck]) alike.
const notToldMsg = "the owner of this connection could not be told, so it is refused"

func notOwnerMsg(owner, uid int) string {
	return fmt.Sprintf("this myco server belongs to uid %d; the connection comes from uid %d", owner, uid)
}
