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

// ConnContext looks up the owner of the client end of each accepted loopback connection
// (see [peercred.TCP]) and keeps it in the connection's context, for the owner check of
// every request on it. Set it as http.Server.ConnContext. A connection over a Unix socket
// (a profile worker's, from the supervisor) is told by the socket's peer credentials. A
// connection handed over by another process is looked up underneath its wrapper.
func ConnContext(ctx context.Context, c net.Conn) context.Context {
	for {
		u, ok := c.(interface{ Unwrap() net.Conn })
		if !ok {
			break
		}
		c = u.Unwrap()
	}
	var uid int
	var err error
	if uc, ok := c.(*net.UnixConn); ok {
		var cred peercred.Cred
		cred, err = peercred.Unix(uc)
		uid = cred.UID
	} else {
		uid, err = peercred.TCP(c.RemoteAddr(), c.LocalAddr())
	}
	return context.WithValue(context.WithValue(ctx, peerKey{}, peer{uid: uid, err: err}), connKey{}, c)
}

type connKey struct{}

// OwnerCheck serves only requests whose connection belongs to uid, as [ConnContext] told:
// another user of the machine cannot drive the server, while the owner, an SSH
// port-forward (which sshd opens as the user) and the agent's own tools need no login.
func OwnerCheck(uid int, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, ok := r.Context().Value(peerKey{}).(peer)
		switch {
		case !ok || p.err != nil:
			Forbid(w, "not_owner", "the owner of this connection could not be told, so it is refused")
		case p.uid != uid:
			Forbid(w, "not_owner", fmt.Sprintf("this myco server belongs to uid %d; the connection comes from uid %d", uid, p.uid))
		default:
			next.ServeHTTP(w, r)
		}
	})
}
