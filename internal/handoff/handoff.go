// Package handoff passes accepted TCP connections from one process to another over a Unix
// socket (SCM_RIGHTS), with the bytes the first process already read from them. The browser
// server's supervisor reads the first request of a connection, and when it is for a
// profile, hands the connection itself to that profile's worker, which then serves it as if
// it had accepted it: no second HTTP hop per request.
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

// Sender hands connections to one receiver. It is safe for concurrent use.
type Sender struct {
	path string

	mu   sync.Mutex // guards conn
	conn *net.UnixConn
}

// NewSender returns a sender to the receiver listening at path (dialled when first used).
func NewSender(path string) *Sender { return &Sender{path: path} }

// Send hands c to the receiver with prefix, the bytes already read from it. On success c
// belongs to the receiver: the caller closes its own copy and does nothing more with it.
func (s *Sender) Send(c *net.TCPConn, prefix []byte) error {
	if len(prefix) > MaxPrefix {
		return fmt.Errorf("handoff: %d bytes read ahead, over %d", len(prefix), MaxPrefix)
	}
	f, err := c.File()
	if err != nil {
		return fmt.Errorf("handoff: %w", err)
	}
	defer f.Close()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn == nil {
		uc, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: s.path, Net: "unix"})
		if err != nil {
			return fmt.Errorf("handoff: %w", err)
		}
		s.conn = uc
	}
	msg := make([]byte, 4+len(prefix))
	binary.BigEndian.PutUint32(msg, uint32(len(prefix)))
	copy(msg[4:], prefix)
	n, _, err := s.conn.WriteMsgUnix(msg, syscall.UnixRights(int(f.Fd())), nil)
	if err == nil && n < len(msg) {
		_, err = s.conn.Write(msg[n:])
	}
	if err != nil {
		s.conn.Close()
		s.conn = nil
		return fmt.Errorf("handoff: %w", err)
	}
	return nil
}

// Close closes the connection to the receiver.
func (s *Sender) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn != nil {
		s.conn.Close()
		s.conn = nil
	}
}

// Listener is a net.Listener of the connections handed over a Unix socket.
type Listener struct {
	ln    *net.UnixListener
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
	wg    sync.WaitGroup
}

// Listen receives connections handed to the Unix socket path.
func Listen(path string) (*Listener, error) {
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, err
	}
	os.Chmod(path, 0o600)
	l := &Listener{ln: ln, conns: make(chan net.Conn), done: make(chan struct{})}
	l.wg.Go(l.acceptSenders)
	return l, nil
}

func (l *Listener) acceptSenders() {
	for {
		uc, err := l.ln.AcceptUnix()
		if err != nil {
			return
		}
		l.wg.Go(func() { l.receive(uc) })
	}
}

// receive takes every connection one sender hands over.
func (l *Listener) receive(uc *net.UnixConn) {
	defer uc.Close()
	go func() { <-l.done; uc.Close() }()
	head := make([]byte, 4)
	oob := make([]byte, syscall.CmsgSpace(4))
	for {
		n, oobn, _, _, err := uc.ReadMsgUnix(head, oob)
		if err != nil || n == 0 {
			return
		}
		fds, err := fdsOf(oob[:oobn])
		if err != nil || len(fds) != 1 {
			for _, fd := range fds {
				syscall.Close(fd)
			}
			return // the stream is out of step: drop the sender
		}
		if n < 4 {
			if _, err := io.ReadFull(uc, head[n:]); err != nil {
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
		if _, err := io.ReadFull(uc, prefix); err != nil {
			syscall.Close(fds[0])
			return
		}
		f := os.NewFile(uintptr(fds[0]), "handed-off")
		c, err := net.FileConn(f)
		f.Close()
		if err != nil {
			continue
		}
		select {
		case l.conns <- &prefixed{Conn: c, r: io.MultiReader(bytes.NewReader(prefix), c)}:
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

// Accept returns the next connection handed over.
func (l *Listener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// Close stops receiving.
func (l *Listener) Close() error {
	l.once.Do(func() { close(l.done) })
	err := l.ln.Close()
	return err
}

// Addr is the Unix socket's address.
func (l *Listener) Addr() net.Addr { return l.ln.Addr() }

// prefixed is a connection whose first bytes were read by another process.
type prefixed struct {
	net.Conn
	r io.Reader
}

func (p *prefixed) Read(b []byte) (int, error) { return p.r.Read(b) }

// ErrNotTCP reports a connection that cannot be handed over.
var ErrNotTCP = errors.New("handoff: not a TCP connection")

// Unwrap returns the connection underneath, for the peer check.
func (p *prefixed) Unwrap() net.Conn { return p.Conn }
