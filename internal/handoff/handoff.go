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
	mu   sync.Mutex // guards conn and its writes
	conn *net.UnixConn
}

// NewSender returns a sender over conn, which it owns from then on.
func NewSender(conn *net.UnixConn) *Sender { return &Sender{conn: conn} }

// ErrClosed reports a send on a sender that was closed or whose channel broke.
var ErrClosed = errors.New("handoff: the channel is closed")

// Send hands c to the receiver with prefix, the bytes already read from it. On success c
// belongs to the receiver: the caller closes its own copy and does nothing more with it.
func (s *Sender) Send(c Filer, prefix []byte) error {
	if len(prefix) > MaxPrefix {
		return fmt.Errorf("handoff: %d bytes read ahead, over %d", len(prefix), MaxPrefix)
	}
	f, err := c.File()
	if err != nil {
		return fmt.Errorf("handoff: %w", err)
	}
	defer f.Close()
	return s.send(f, prefix)
}

func (s *Sender) send(f *os.File, prefix []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn == nil {
		return ErrClosed
	}
	msg := make([]byte, 4+len(prefix))
	binary.BigEndian.PutUint32(msg, uint32(len(prefix)))
	copy(msg[4:], prefix)
	n, _, err := s.conn.WriteMsgUnix(msg, syscall.UnixRights(int(f.Fd())), nil)
	if err == nil && n < len(msg) {
		_, err = s.conn.Write(msg[n:])
	}
	if err != nil {
		// The stream may be out of step: the receiver stops reading it.
		s.conn.Close()
		s.conn = nil
		return fmt.Errorf("handoff: %w", err)
	}
	return nil
}

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
	if err := s.send(b, nil); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// Close closes the channel; the receiver's Listener then ends.
func (s *Sender) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn != nil {
		s.conn.Close()
		s.conn = nil
	}
}

// Listener is a net.Listener of the connections handed over one channel. It ends when
// the channel does (the sender closed it or exited), or when it is closed.
type Listener struct {
	ch    *net.UnixConn
	conns chan net.Conn
	done  chan struct{} // closed by Close or when the channel ends
	once  sync.Once
	wg    sync.WaitGroup
}

// Listen receives the connections handed over ch, which it owns from then on.
func Listen(ch *net.UnixConn) *Listener {
	l := &Listener{ch: ch, conns: make(chan net.Conn), done: make(chan struct{})}
	l.wg.Go(l.receive)
	return l
}

// receive takes every connection the sender hands over, until the channel ends.
func (l *Listener) receive() {
	defer l.finish()
	go func() { <-l.done; l.ch.Close() }()
	head := make([]byte, 4)
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
		if n < 4 {
			if _, err := io.ReadFull(l.ch, head[n:]); err != nil {
				syscall.Close(fds[0])
				return
			}
		}
		size := binary.BigEndian.Uint32(head)
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
		if len(prefix) > 0 {
			hc = &prefixed{Conn: c, r: io.MultiReader(bytes.NewReader(prefix), c)}
		}
		select {
		case l.conns <- hc:
		case <-l.done:
			c.Close()
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

// Close stops receiving and waits for the receiving goroutine.
func (l *Listener) Close() error {
	l.finish()
	l.wg.Wait()
	return nil
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
