// Package handoff passes connections from one process to another over a Unix socket pair
// (SCM_RIGHTS), with the bytes the first process already read from them. The browser
// server's supervisor reads the first request of a connection, and when it is for a
// profile, hands the connection itself to that profile's worker, which then serves it as if
// it had accepted it: no second HTTP hop per request. A request the supervisor forwards
// instead (its reverse proxy) travels over a fresh socket pair whose other end is handed
// over the same way.
//
// The channel between the two processes is one end of a socket pair that the worker
// inherits when it starts (see [Pair]): it has no name in the file system, so no other
// process, of this user or another, can connect to it, replace it or listen in its place.
//
// A connection handed over keeps a lifeline to its sender (see [Handed]): the sender keeps
// its copy, and the receiver reports on the channel when it begins an exchange, when it
// first writes its answer and when it is done. When the receiving process dies, its
// sender still holds the connection and knows whether an exchange was waiting for an
// answer that had not begun, which it can then give itself.
package handoff

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"time"
)

// MaxPrefix bounds the bytes read ahead that travel with a connection.
const MaxPrefix = 1 << 20

// Pair returns the two ends of a new channel: ours to keep (for a [Sender]) and theirs,
// a file to pass to the receiving process (exec.Cmd.ExtraFiles), which it opens with
// [Inherit]. Close theirs once the process started.
func Pair() (ours *net.UnixConn, theirs *os.File, err error) {
	a, b, err := socketpair()
	if err != nil {
		return nil, nil, err
	}
	c, err := fileConn(a, "handoff")
	if err != nil {
		b.Close()
		return nil, nil, err
	}
	return c, b, nil
}

// socketpair returns both ends of a new Unix stream socket pair, close-on-exec (a file
// passed in ExtraFiles is inherited all the same).
func socketpair() (a, b *os.File, err error) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("handoff: socketpair: %w", err)
	}
	syscall.CloseOnExec(fds[0])
	syscall.CloseOnExec(fds[1])
	return os.NewFile(uintptr(fds[0]), "handoff-a"), os.NewFile(uintptr(fds[1]), "handoff-b"), nil
}

// fileConn turns f into a *net.UnixConn and closes f.
func fileConn(f *os.File, what string) (*net.UnixConn, error) {
	defer f.Close()
	c, err := net.FileConn(f)
	if err != nil {
		return nil, fmt.Errorf("handoff: %s: %w", what, err)
	}
	uc, ok := c.(*net.UnixConn)
	if !ok {
		c.Close()
		return nil, fmt.Errorf("handoff: %s is not a Unix socket", what)
	}
	return uc, nil
}

// Inherit returns the channel the process inherited as file descriptor fd.
func Inherit(fd uintptr) (*net.UnixConn, error) {
	return fileConn(os.NewFile(fd, "handoff"), fmt.Sprintf("inherited descriptor %d", fd))
}

// Filer is a connection that can be handed over: *net.TCPConn and *net.UnixConn.
type Filer interface {
	File() (*os.File, error)
}

// Sender hands connections to the receiver at the other end of one channel. It is safe
// for concurrent use.
type Sender struct {
	mu     sync.Mutex // guards conn, its writes and broken
	conn   *net.UnixConn
	broken bool // a send failed midway and closed conn, while the receiver may live

	lmu    sync.Mutex // guards handed, next and gone
	handed map[uint64]*Handed
	next   uint64
	gone   bool // the channel ended: no lifeline is kept any more

	reading sync.WaitGroup // the goroutine that reads the receiver's reports
}

// NewSender returns a sender over conn, which it owns from then on. Close it when done.
func NewSender(conn *net.UnixConn) *Sender {
	s := &Sender{conn: conn, handed: map[uint64]*Handed{}}
	s.reading.Go(func() { s.read(conn) })
	return s
}

// ErrClosed reports a send on a sender that was closed or whose channel broke.
var ErrClosed = errors.New("handoff: the channel is closed")

// Send hands c to the receiver with prefix, the bytes already read from it; label names
// the exchange those bytes begin (an HTTP request's method and path), for [Handed.Lost].
// On success the receiver serves c, and the caller keeps its own copy, untouched, until
// the returned Handed is done, then closes it (after answering it, if the receiver was
// lost).
func (s *Sender) Send(c Filer, prefix []byte, label string) (*Handed, error) {
	if len(prefix) > MaxPrefix {
		return nil, fmt.Errorf("handoff: %d bytes read ahead, over %d", len(prefix), MaxPrefix)
	}
	// Kept before it is sent: the receiver's first report may come at once.
	s.lmu.Lock()
	if s.gone {
		s.lmu.Unlock()
		return nil, ErrClosed
	}
	s.next++
	id := s.next
	h := &Handed{done: make(chan struct{}), pending: true, label: label}
	s.handed[id] = h
	s.lmu.Unlock()
	f, err := c.File()
	if err == nil {
		err = s.send(f, id, prefix)
		f.Close()
	} else {
		err = fmt.Errorf("handoff: %w", err)
	}
	if err != nil {
		s.lmu.Lock()
		if s.handed[id] == h {
			delete(s.handed, id)
		}
		s.lmu.Unlock()
		return nil, err
	}
	return h, nil
}

// send writes one connection's message: the prefix's length, the connection's id (0 for
// none: a dialled socket pair, which needs no lifeline), the prefix, and the descriptor.
func (s *Sender) send(f *os.File, id uint64, prefix []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn == nil {
		return ErrClosed
	}
	msg := make([]byte, headSize+len(prefix))
	binary.BigEndian.PutUint32(msg, uint32(len(prefix)))
	binary.BigEndian.PutUint64(msg[4:], id)
	copy(msg[headSize:], prefix)
	n, _, err := s.conn.WriteMsgUnix(msg, syscall.UnixRights(int(f.Fd())), nil)
	if err == nil && n < len(msg) {
		_, err = s.conn.Write(msg[n:])
	}
	if err != nil {
		// The stream may be out of step: the receiver stops reading it. It may still be
		// serving what it was handed, so no lifeline is taken for lost.
		s.broken = true
		s.conn.Close()
		s.conn = nil
		return fmt.Errorf("handoff: %w", err)
	}
	return nil
}

// headSize is the fixed part of a connection's message: the prefix's length (4 bytes)
// and the connection's id (8).
const headSize = 4 + 8

// Dial returns a new connection to the receiver: one end of a fresh socket pair, whose
// other end is handed over. The receiver's [Listener] accepts it like any other.
func (s *Sender) Dial() (net.Conn, error) {
	a, b, err := socketpair()
	if err != nil {
		return nil, err
	}
	defer b.Close()
	c, err := fileConn(a, "dial")
	if err != nil {
		return nil, err
	}
	if err := s.send(b, 0, nil); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// Close closes the channel; the receiver's Listener then ends. A connection handed over
// that the receiver was not done with is lost (see [Handed.Lost]): close a sender once its
// receiving process has exited.
func (s *Sender) Close() {
	s.mu.Lock()
	if s.conn != nil {
		s.conn.Close()
		s.conn = nil
	}
	s.mu.Unlock()
	s.reading.Wait()
}

// Listener is a net.Listener of the connections handed over one channel. It ends when
// the channel does (the sender closed it or exited), or when it is closed. A connection
// handed with a lifeline is a [*Conn].
type Listener struct {
	ch    *net.UnixConn
	conns chan net.Conn
	done  chan struct{} // closed by Close or when the channel ends
	once  sync.Once
	wg    sync.WaitGroup

	wmu     sync.Mutex // guards the reports written to ch, live, closing and chDown
	live    int        // connections handed with a lifeline and not yet closed
	closing bool       // Close was called: ch is closed once live is 0
	chDown  bool       // ch is closed, or a report to it failed: no more reports
}

// Listen receives the connections handed over ch, which it owns from then on.
func Listen(ch *net.UnixConn) *Listener {
	l := &Listener{ch: ch, conns: make(chan net.Conn), done: make(chan struct{})}
	l.wg.Go(l.receive)
	return l
}

// receive takes every connection the sender hands over, until the channel ends or the
// listener is closed. Only its reading stops then: the channel stays open for the reports
// of the connections still served (see [Listener.Close]).
func (l *Listener) receive() {
	defer l.finish()
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		select {
		case <-l.done:
			l.ch.SetReadDeadline(time.Now()) // ends a read in progress
		case <-stop:
		}
	}()
	head := make([]byte, headSize)
	oob := make([]byte, syscall.CmsgSpace(4))
	for {
		n, oobn, _, _, err := l.ch.ReadMsgUnix(head, oob)
		if err != nil || n == 0 {
			return
		}
		fds, err := fdsOf(oob[:oobn])
		if err != nil || len(fds) != 1 {
			for _, fd := range fds {
				syscall.Close(fd)
			}
			return // the stream is out of step
		}
		syscall.CloseOnExec(fds[0])
		if n < headSize {
			if _, err := io.ReadFull(l.ch, head[n:]); err != nil {
				syscall.Close(fds[0])
				return
			}
		}
		size, id := binary.BigEndian.Uint32(head), binary.BigEndian.Uint64(head[4:])
		if size > MaxPrefix {
			syscall.Close(fds[0])
			return
		}
		prefix := make([]byte, size)
		if _, err := io.ReadFull(l.ch, prefix); err != nil {
			syscall.Close(fds[0])
			return
		}
		f := os.NewFile(uintptr(fds[0]), "handed-off")
		c, err := net.FileConn(f)
		f.Close()
		if err != nil {
			continue
		}
		var hc net.Conn = c
		switch {
		case id != 0:
			hc = l.lifeline(c, id, prefix)
		case len(prefix) > 0:
			hc = &prefixed{Conn: c, r: io.MultiReader(bytes.NewReader(prefix), c)}
		}
		select {
		case l.conns <- hc:
		case <-l.done:
			hc.Close()
			return
		}
	}
}

func fdsOf(oob []byte) ([]int, error) {
	msgs, err := syscall.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, err
	}
	var fds []int
	for _, m := range msgs {
		f, err := syscall.ParseUnixRights(&m)
		if err != nil {
			return nil, err
		}
		fds = append(fds, f...)
	}
	return fds, nil
}

func (l *Listener) finish() { l.once.Do(func() { close(l.done) }) }

// Done is closed once the listener ended: closed, or its channel ended.
func (l *Listener) Done() <-chan struct{} { return l.done }

// Accept returns the next connection handed over.
func (l *Listener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// Close stops receiving and waits for the receiving goroutine. The channel itself is
// closed once every connection handed with a lifeline is closed too, so that the sender
// hears that each is done rather than taking it for lost.
func (l *Listener) Close() error {
	l.finish()
	l.wg.Wait()
	l.wmu.Lock()
	defer l.wmu.Unlock()
	l.closing = true
	l.closeChLocked()
	return nil
}

// closeChLocked closes the channel when the listener is closed and no connection with a
// lifeline is left. Call with l.wmu held.
func (l *Listener) closeChLocked() {
	if l.closing && l.live == 0 && !l.chDown {
		l.chDown = true
		l.ch.Close()
	}
}

// Addr is the channel's local address.
func (l *Listener) Addr() net.Addr { return l.ch.LocalAddr() }

// prefixed is a connection whose first bytes were read by another process.
type prefixed struct {
	net.Conn
	r io.Reader
}

func (p *prefixed) Read(b []byte) (int, error) { return p.r.Read(b) }

// Unwrap returns the connection underneath, for the peer check.
func (p *prefixed) Unwrap() net.Conn { return p.Conn }
