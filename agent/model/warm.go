package model

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"
)

// Warmer is a model that can open its connection to the endpoint ahead of a request, so
// that the request does not wait for the dial and the TLS handshake; *Client is one.
type Warmer interface {
	Warm(ctx context.Context)
}

// warmKeep bounds how long a connection opened ahead waits for its request; an older one is
// closed and the request dials afresh.
const warmKeep = 10 * time.Second

// warmPool is what a [Client] needs to open connections ahead: its own copy of the HTTP
// transport, whose dials first take a connection opened ahead for the same address.
type warmPool struct {
	once      sync.Once
	transport *http.Transport // nil when the client's transport is not an *http.Transport
	dial      func(ctx context.Context, network, addr string) (net.Conn, error)

	mu    sync.Mutex // guards the fields below
	conns map[string]warmConn
	// dialing holds, for each address a Warm is opening a connection to, a channel closed
	// when it is done: a request that comes meanwhile waits for that connection rather than
	// opening a second one, whose TLS handshake would start from nothing.
	dialing map[string]chan struct{}
	used    time.Time // the last request: its connection may still be idle in the pool
}

type warmConn struct {
	c  net.Conn
	at time.Time
}

// warmIdle is how long after a request Warm assumes that its connection is still idle in
// the pool (http.DefaultTransport keeps one 90 s), and opens none.
const warmIdle = 60 * time.Second

// maxIdlePerHost is how many idle connections to its endpoint a client keeps at least. One
// client serves every session on its model, and with HTTP/1.1 (a local gateway, most
// OpenAI-compatible servers) each request streaming at once holds a connection: with
// net/http's default of two, most of the next round's requests dialled (and shook hands)
// anew, and their sockets waited in TIME_WAIT by the thousand. An idle connection costs a
// descriptor and a few KiB until the transport's idle timeout closes it.
const maxIdlePerHost = 32

// CloseIdleConnections closes the connections the client's transport keeps idle, as
// [http.Client.CloseIdleConnections] does: for a caller that is done with the endpoint.
func (c *Client) CloseIdleConnections() {
	if t, ok := c.roundTripper().(interface{ CloseIdleConnections() }); ok {
		t.CloseIdleConnections()
	}
}

// roundTripper returns the transport the client's requests use: its own copy of the
// configured *http.Transport (or of http.DefaultTransport), able to take connections opened
// ahead; a transport of another kind is used as it is.
func (c *Client) roundTripper() http.RoundTripper {
	w := c.pool()
	w.once.Do(func() {
		var base *http.Transport
		switch {
		case c.HTTP == nil || c.HTTP.Transport == nil:
			base, _ = http.DefaultTransport.(*http.Transport)
		default:
			base, _ = c.HTTP.Transport.(*http.Transport)
		}
		if base == nil {
			return
		}
		t := base.Clone()
		t.MaxIdleConnsPerHost = max(t.MaxIdleConnsPerHost, maxIdlePerHost)
		w.dial = t.DialContext
		if w.dial == nil {
			w.dial = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
		}
		t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			if conn := w.take(ctx, "http", addr); conn != nil {
				return conn, nil
			}
			return w.dial(ctx, network, addr)
		}
		if t.DialTLSContext == nil && t.DialTLS == nil {
			cfg := tlsConfig(t)
			t.DialTLSContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
				if conn := w.take(ctx, "https", addr); conn != nil {
					return conn, nil
				}
				raw, err := w.dial(ctx, network, addr)
				if err != nil {
					return nil, err
				}
				return handshake(ctx, raw, cfg, addr)
			}
		}
		w.transport = t
	})
	if w.transport == nil {
		if c.HTTP != nil && c.HTTP.Transport != nil {
			return c.HTTP.Transport
		}
		return http.DefaultTransport
	}
	return w.transport
}

// tlsConfig is the TLS configuration of t's connections: its own, offering HTTP/2 when t
// attempts it, as the transport does when it dials itself.
func tlsConfig(t *http.Transport) *tls.Config {
	cfg := &tls.Config{}
	if t.TLSClientConfig != nil {
		cfg = t.TLSClientConfig.Clone()
	}
	if len(cfg.NextProtos) == 0 && t.ForceAttemptHTTP2 {
		cfg.NextProtos = []string{"h2", "http/1.1"}
	}
	return cfg
}

// handshake makes raw, a connection to addr, a TLS client connection past its handshake.
func handshake(ctx context.Context, raw net.Conn, cfg *tls.Config, addr string) (net.Conn, error) {
	cfg = cfg.Clone()
	if cfg.ServerName == "" {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			host = addr
		}
		cfg.ServerName = host
	}
	tc := tls.Client(raw, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		raw.Close()
		return nil, err
	}
	return tc, nil
}

// take returns the connection opened ahead for scheme and addr, if there is a fresh one,
// waiting for one that a Warm is opening (or until ctx ends).
func (w *warmPool) take(ctx context.Context, scheme, addr string) net.Conn {
	k := scheme + "://" + addr
	for {
		w.mu.Lock()
		wc, ok := w.conns[k]
		if ok {
			delete(w.conns, k)
			w.mu.Unlock()
			if time.Since(wc.at) > warmKeep {
				wc.c.Close()
				return nil
			}
			return wc.c
		}
		done := w.dialing[k]
		w.mu.Unlock()
		if done == nil {
			return nil
		}
		select {
		case <-done: // look again: the connection, or a failure left to the request
		case <-ctx.Done():
			return nil
		}
	}
}

// Warm opens a connection to the endpoint, TLS handshake included, for the next request to
// take: a caller that must first save something durably opens it meanwhile, and sends the
// request once that is done. It does nothing when the client sent a request lately (its
// connection may still be open in the pool), when a proxy is configured for the endpoint
// (the transport goes through it), or when its transport is not an *http.Transport.
// Failures are left to the request, which dials again. A request sent while the connection
// is being opened waits for it. It returns when the connection is open or ctx ends.
func (c *Client) Warm(ctx context.Context) {
	c.roundTripper()
	w := c.pool()
	if w.transport == nil {
		return
	}
	to, err := endpoint(c.BaseURL, c.Protocol.Path())
	if err != nil {
		return
	}
	u := to.url
	if w.transport.Proxy != nil {
		if p, err := w.transport.Proxy(&http.Request{URL: u}); err != nil || p != nil {
			return
		}
	}
	addr := hostPort(u)
	k := u.Scheme + "://" + addr
	if u.Scheme != "http" && u.Scheme != "https" {
		return
	}
	w.mu.Lock()
	_, have := w.conns[k]
	recent := !w.used.IsZero() && time.Since(w.used) < warmIdle
	if have || recent || w.dialing[k] != nil {
		w.mu.Unlock()
		return
	}
	done := make(chan struct{})
	if w.dialing == nil {
		w.dialing = map[string]chan struct{}{}
	}
	w.dialing[k] = done
	w.mu.Unlock()

	conn, err := w.dial(ctx, "tcp", addr)
	if err == nil && u.Scheme == "https" {
		conn, err = handshake(ctx, conn, tlsConfig(w.transport), addr)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.dialing, k)
	close(done)
	if err != nil {
		return
	}
	if w.conns == nil {
		w.conns = map[string]warmConn{}
	}
	if old, ok := w.conns[k]; ok {
		old.c.Close()
	}
	w.conns[k] = warmConn{c: conn, at: time.Now()}
}

// pool returns the client's warmPool, made on first use.
func (c *Client) pool() *warmPool {
	if w, ok := c.warm.Load().(*warmPool); ok {
		return w
	}
	c.warm.CompareAndSwap(nil, &warmPool{})
	return c.warm.Load().(*warmPool)
}

// requested notes that a request goes out now.
func (w *warmPool) requested() {
	w.mu.Lock()
	w.used = time.Now()
	w.mu.Unlock()
}

// hostPort is u's host with its port, the scheme's default when it names none.
func hostPort(u *url.URL) string {
	if u.Port() != "" {
		return u.Host
	}
	if u.Scheme == "https" {
		return net.JoinHostPort(u.Hostname(), "443")
	}
	return net.JoinHostPort(u.Hostname(), "80")
}
