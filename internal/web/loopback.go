package web

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"myco.dev/internal/peercred"
)

// Loopback is a server on a loopback port of its own, which a process serves while it
// runs: the profile's API of myco -p and the chat, so that their agents' tools have a
// working MYCO_SERVER_URL. Other users can find the port (in /proc/net/tcp) and connect
// to it: it admits only this process's user, checked as each connection is accepted
// ([OwnerOnly]) as the server's port is. Where the owner of a connection cannot be told,
// it is guarded by a token, as the server is, written to a file that only this user can
// read (the tools send it: curl -H @FILE).
type Loopback struct {
	ln     net.Listener // wrapped in OwnerOnly unless Token is set
	srv    *http.Server
	served chan error
	log    *slog.Logger

	// Port is the port it listens on; Token, when set, the secret a request must carry,
	// and TokenFile the file that holds it, removed by Close.
	Port             string
	Token, TokenFile string
}

// ListenLoopback reserves a port on 127.0.0.1, and in token mode writes the token to the
// file tokenFile names for that port. Serve it with [Loopback.Serve]; Close it when done.
// log is for the server's own errors; nil means slog.Default().
func ListenLoopback(tokenFile func(port string) string, log *slog.Logger) (*Loopback, error) {
	if log == nil {
		log = slog.Default()
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen on loopback: %w", err)
	}
	l := &Loopback{ln: ln, log: log, Port: PortOf(ln.Addr())}
	if !peercred.TCPAvailable() {
		l.TokenFile = tokenFile(l.Port)
		if l.Token, err = NewTokenFile(l.TokenFile); err != nil {
			ln.Close()
			return nil, err
		}
		return l, nil
	}
	l.ln = OwnerOnly(ln, os.Getuid())
	return l, nil
}

// URL is the server's base URL, http://127.0.0.1:PORT.
func (l *Loopback) URL() string { return "http://" + net.JoinHostPort("127.0.0.1", l.Port) }

// Serve starts serving h on the reserved port, with the servers' time bounds
// ([NewServer]).
func (l *Loopback) Serve(h http.Handler) {
	l.srv = NewServer(h, l.log)
	l.served = make(chan error, 1)
	go func() { l.served <- l.srv.Serve(l.ln) }()
}

// Close stops serving: requests in flight get a moment, event streams are cut. It
// removes the token file.
func (l *Loopback) Close() {
	if l.TokenFile != "" {
		defer os.Remove(l.TokenFile)
	}
	if l.srv == nil {
		l.ln.Close()
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := l.srv.Shutdown(ctx); err != nil {
		l.srv.Close()
	}
	if err := <-l.served; err != nil && !errors.Is(err, http.ErrServerClosed) && !errors.Is(err, net.ErrClosed) {
		l.log.Warn("loopback server", "err", err)
	}
}
