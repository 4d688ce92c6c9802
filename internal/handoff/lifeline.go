package handoff

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// The lifeline of a connection handed over. A process that is handed a connection holds
// the only copy the kernel needs: when it dies (a crash, SIGKILL), the connection closes
// under its client, and a request waiting for its answer gets none. So the sender keeps
// its copy, and the receiver reports on the channel, per connection: that it began an
// exchange (reportBegin, with its label: a request's method and path), that it wrote the
// first byte of its answer (reportWrote, sent before that byte) and that it is done
// (reportDone, sent before it closes its copy). When the channel ends with the receiver,
// the sender knows of each connection still open whether an exchange waits for an answer
// that has not begun: that one it can answer itself, as nothing was written yet.

// The reports a receiver writes to its sender: a kind, the connection's id, and the
// length and bytes of a label (only reportBegin has one).
const (
	reportBegin = 'b'
	reportWrote = 'w'
	reportDone  = 'd'

	reportHead = 1 + 8 + 2
	// maxLabel bounds a label; a longer one is cut.
	maxLabel = 1 << 10
	// reportTimeout bounds a report's write: a sender that stopped reading must not hold
	// up the receiver's answers.
	reportTimeout = 5 * time.Second
)

// Handed is a connection that a [Sender] handed over and keeps a copy of until the
// receiver is done with it, or was lost.
type Handed struct {
	done chan struct{} // closed when the receiver is done with it or lost

	// Written by the sender's reading goroutine, before done is closed.
	pending  bool   // an exchange waits for its answer, which has not begun
	label    string // that exchange's label
	orphaned bool   // the channel ended before the receiver was done
}

// Done is closed once the receiver is done with the connection (it closed it), or was
// lost.
func (h *Handed) Done() <-chan struct{} { return h.done }

// Lost reports, once Done is closed, whether the receiver was lost (its process ended, or
// the channel did) before it was done with the connection. If so, label names the
// exchange that was waiting for an answer not begun, which the caller may give on its
// copy of the connection; "" when none was (the connection was idle, or an answer had
// begun, and the caller can only close it).
func (h *Handed) Lost() (label string, lost bool) {
	if !h.orphaned {
		return "", false
	}
	if !h.pending {
		return "", true
	}
	return h.label, true
}

// read takes the receiver's reports until the channel ends, then loses every connection
// the receiver was not done with.
func (s *Sender) read(conn *net.UnixConn) {
	r := bufio.NewReader(conn)
	head := make([]byte, reportHead)
	for {
		if _, err := io.ReadFull(r, head); err != nil {
			break
		}
		kind, id, n := head[0], binary.BigEndian.Uint64(head[1:]), int(binary.BigEndian.Uint16(head[9:]))
		if n > maxLabel {
			break // out of step
		}
		label := make([]byte, n)
		if _, err := io.ReadFull(r, label); err != nil {
			break
		}
		s.lmu.Lock()
		if h := s.handed[id]; h != nil {
			switch kind {
			case reportBegin:
				h.pending, h.label = true, string(label)
			case reportWrote:
				h.pending = false
			case reportDone:
				delete(s.handed, id)
				close(h.done)
			}
		}
		s.lmu.Unlock()
	}
	s.mu.Lock()
	broken := s.broken
	s.mu.Unlock()
	s.lmu.Lock()
	defer s.lmu.Unlock()
	s.gone = true
	for id, h := range s.handed {
		// After a failed send the receiver may live on and answer: nothing is lost then.
		h.orphaned = !broken
		delete(s.handed, id)
		close(h.done)
	}
}

// Conn is a connection handed over with a lifeline: its reads start with the bytes the
// sender read ahead, and its writes, [Conn.Begin] and [Conn.Close] report to the sender.
type Conn struct {
	net.Conn
	r       io.Reader
	id      uint64
	l       *Listener
	pending atomic.Bool // an exchange has begun whose answer has not: the next write reports
	closed  sync.Once
}

// lifeline wraps c, handed over as id with prefix.
func (l *Listener) lifeline(c net.Conn, id uint64, prefix []byte) *Conn {
	l.wmu.Lock()
	l.live++
	l.wmu.Unlock()
	hc := &Conn{Conn: c, r: io.MultiReader(bytes.NewReader(prefix), c), id: id, l: l}
	hc.pending.Store(true) // the exchange the prefix begins
	return hc
}

func (c *Conn) Read(b []byte) (int, error) { return c.r.Read(b) }

// Write writes b, telling the sender first when it is the first write of an answer.
func (c *Conn) Write(b []byte) (int, error) {
	if c.pending.Load() && c.pending.CompareAndSwap(true, false) {
		c.l.report(reportWrote, c.id, "")
	}
	return c.Conn.Write(b)
}

// Begin tells the sender that an exchange, named label (an HTTP request's method and
// path), has begun on the connection and waits for its answer. Call it before the answer
// is written.
func (c *Conn) Begin(label string) {
	c.pending.Store(true)
	c.l.report(reportBegin, c.id, label)
}

// CloseWrite shuts the connection's writing side, for its client to see the end at once:
// the sender's copy keeps the connection itself open until it hears Close.
func (c *Conn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// Close tells the sender the connection is done, then closes it.
func (c *Conn) Close() error {
	c.closed.Do(func() {
		c.l.wmu.Lock()
		defer c.l.wmu.Unlock()
		c.l.reportLocked(reportDone, c.id, "")
		c.l.live--
		c.l.closeChLocked()
	})
	return c.Conn.Close()
}

// Unwrap returns the connection underneath, for the peer check.
func (c *Conn) Unwrap() net.Conn { return c.Conn }

// report writes one report to the sender.
func (l *Listener) report(kind byte, id uint64, label string) {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	l.reportLocked(kind, id, label)
}

// reportLocked writes one report; once one fails, none is written any more (the sender
// is gone, or out of step). Call with l.wmu held.
func (l *Listener) reportLocked(kind byte, id uint64, label string) {
	if l.chDown {
		return
	}
	if len(label) > maxLabel {
		label = label[:maxLabel]
	}
	msg := make([]byte, reportHead+len(label))
	msg[0] = kind
	binary.BigEndian.PutUint64(msg[1:], id)
	binary.BigEndian.PutUint16(msg[9:], uint16(len(label)))
	copy(msg[reportHead:], label)
	l.ch.SetWriteDeadline(time.Now().Add(reportTimeout))
	if _, err := l.ch.Write(msg); err != nil {
		l.chDown = true
		l.ch.Close()
	}
}
