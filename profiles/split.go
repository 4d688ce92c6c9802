package profiles

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"myco.dev/internal/handoff"
	"myco.dev/internal/web"
)

// Handing connections to the workers. The supervisor reads the first request of each
// connection; when it is for a profile, the connection itself goes to that profile's worker
// (handoff, SCM_RIGHTS), which serves it and every later request on it: a request costs no
// second HTTP hop. A later request on that connection for something else (another profile,
// the browser's event stream) is sent back with a 307 and Connection: close, so the browser
// asks again on a new connection, which the supervisor routes. Connections the supervisor
// keeps (its own paths, errors, and everything where the handoff fails) are served by its
// own HTTP server, through the listener Listener returns. The supervisor holds on to its
// copy of a connection handed over until the worker is done with it: should the worker die
// while a request waits for its answer, the supervisor gives that answer (502
// worker_failed), as it does for a request it forwards.

// Handoffs is what the supervisor needs to hand a connection to a profile's worker;
// [*Pool] satisfies it.
type Handoffs interface {
	Sender(ctx context.Context, name string) (*handoff.Sender, error)
}

// Listener accepts the connections of ln and hands those whose first request is for a
// served profile to its worker; it returns the listener of the connections the supervisor
// serves itself. Only the owner's connections get that far: the others are refused as
// they are accepted ([web.OwnerOnly]). With a token, where the owner of a connection
// cannot be told, it returns ln: every connection is the supervisor's, which asks for the
// token.
func (sv *Supervisor) Listener(ln net.Listener, h Handoffs) net.Listener {
	if sv.s.Token != "" {
		return ln
	}
	owned := web.OwnerOnly(ln, sv.s.UID)
	if h == nil {
		return owned
	}
	l := &splitListener{Listener: owned, conns: make(chan net.Conn), done: make(chan struct{})}
	go l.run(sv.s, h)
	return l
}

type splitListener struct {
	net.Listener // the owner's connections only
	conns        chan net.Conn
	done         chan struct{} // closed by finish
	once         sync.Once
	err          error // why the listener ended: set once, before done is closed
}

// finish ends the listener with err: Accept returns it from then on.
func (l *splitListener) finish(err error) {
	l.once.Do(func() {
		l.err = err
		close(l.done)
	})
}

func (l *splitListener) run(s *supervisor, h Handoffs) {
	var delay time.Duration
	for {
		c, err := l.Listener.Accept()
		var ne net.Error
		if errors.As(err, &ne) && ne.Temporary() && !errors.Is(err, net.ErrClosed) {
			// Out of file descriptors, say: wait and go on, as http.Server does, rather than
			// end the port's service for good.
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			s.Log.Warn("accept a connection; retrying", "err", err, "in", delay)
			select {
			case <-time.After(delay):
				continue
			case <-l.done:
				return
			}
		}
		delay = 0
		if err != nil {
			l.finish(err)
			return
		}
		go l.route(s, h, c)
	}
}

// route reads c's first request and hands c to the worker it is for, or keeps it.
func (l *splitListener) route(s *supervisor, h Handoffs, c net.Conn) {
	rec := &recording{Conn: c}
	keep := func() {
		select {
		case l.conns <- &replayed{Conn: c, r: io.MultiReader(bytes.NewReader(rec.buf.Bytes()), c)}:
		case <-l.done:
			c.Close()
		}
	}
	tc, ok := c.(*net.TCPConn)
	if !ok {
		keep()
		return
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	req, err := http.ReadRequest(bufio.NewReader(rec))
	c.SetReadDeadline(time.Time{})
	if err != nil {
		keep() // the supervisor's server answers what it makes of it
		return
	}
	name := profileOf(req.URL.Path)
	if name == "" || !s.served(name) || !web.AllowedHost(req.Host, s.Port) || rec.buf.Len() > handoff.MaxPrefix {
		keep()
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	snd, err := h.Sender(ctx, name)
	cancel()
	if err != nil {
		keep() // the supervisor shows why the profile is not there
		return
	}
	handed, err := snd.Send(tc, rec.buf.Bytes(), req.Method+" "+req.URL.Path)
	if err != nil {
		s.Log.Warn("hand a connection to a profile worker", "profile", name, "err", err)
		keep()
		return
	}
	// The worker serves the connection; this copy of it is kept until the worker is done
	// with it, so that a request waiting for its answer when the worker dies is answered
	// here rather than cut off with the connection.
	<-handed.Done()
	if label, lost := handed.Lost(); lost && label != "" {
		s.workerLost(tc, name, label)
	}
	c.Close()
}

// workerLost answers, on c, the request label ("METHOD PATH") that profile name's worker
// had taken up and not begun to answer when it died: 502 worker_failed, as a request the
// supervisor forwards gets, then the connection closes. Nothing else was written on c
// since that request, so the answer is whole.
func (s *supervisor) workerLost(c net.Conn, name, label string) {
	method, path, _ := strings.Cut(label, " ")
	s.Log.Warn("profile worker stopped while answering", "profile", name, "path", path)
	r := &http.Request{Method: method, URL: &url.URL{Path: path}, Header: http.Header{}}
	a := &heldAnswer{header: http.Header{}}
	s.fail(a, r, workerFailed(name))
	resp := &http.Response{StatusCode: a.status, ProtoMajor: 1, ProtoMinor: 1, Header: a.header, Request: r,
		Body: io.NopCloser(&a.body), ContentLength: int64(a.body.Len()), Close: true}
	c.SetDeadline(time.Now().Add(time.Second))
	if resp.Write(c) != nil {
		return
	}
	// The client may still be sending the request's body: read it, so that closing does
	// not reset the connection before the answer is read.
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	}
	io.Copy(io.Discard, io.LimitReader(c, 1<<20))
}

// heldAnswer is an answer held in memory, to be written on a connection whole.
type heldAnswer struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (a *heldAnswer) Header() http.Header { return a.header }
func (a *heldAnswer) WriteHeader(code int) {
	if a.status == 0 {
		a.status = code
	}
}
func (a *heldAnswer) Write(b []byte) (int, error) {
	a.WriteHeader(http.StatusOK)
	return a.body.Write(b)
}

// profileOf returns NAME of a path /profiles/NAME or /profiles/NAME/…, or "".
func profileOf(path string) string {
	rest, ok := strings.CutPrefix(path, "/profiles/")
	if !ok {
		return ""
	}
	name, _, _ := strings.Cut(rest, "/")
	return name
}

func (l *splitListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, l.err
	}
}

// Close closes the listener. Accept then fails with net.ErrClosed (never a nil connection
// with a nil error, which http.Server would serve), whichever of Close and the accepting
// goroutine ends it first.
func (l *splitListener) Close() error {
	err := l.Listener.Close()
	l.finish(net.ErrClosed)
	return err
}

// recording keeps every byte read from a connection, to pass on with it.
type recording struct {
	net.Conn
	buf bytes.Buffer
}

func (r *recording) Read(p []byte) (int, error) {
	n, err := r.Conn.Read(p)
	r.buf.Write(p[:n])
	return n, err
}

// replayed is a connection whose first bytes were read already.
type replayed struct {
	net.Conn
	r io.Reader
}

func (r *replayed) Read(p []byte) (int, error) { return r.r.Read(p) }
