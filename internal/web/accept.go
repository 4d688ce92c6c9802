package web

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"
)

// The discipline of every listener myco opens where another user of the machine can
// connect: the browser server's port and the nested-session API of myco -p and the chat.
// Whose connection it is is told as it is accepted, before anything is read: a flood of
// another user's connections is then closed as it comes, one at a time, and never holds
// more than maxRefusing descriptors (and goroutines) of the process, which would otherwise
// sit at its descriptor limit until each connection's ReadHeaderTimeout, and fail its own
// work ("too many open files").
const (
	// maxRefusing bounds the connections of other users that are being answered at once;
	// beyond it, one is closed unanswered.
	maxRefusing = 8
	// refuseRead and refuseWrite bound the time a refused connection is read (its request,
	// so that the answer reaches it rather than a reset) and written.
	refuseRead  = time.Second
	refuseWrite = time.Second
	// refuseBytes bounds what is read of a refused connection's request.
	refuseBytes = 16 << 10
)

// OwnerListener is a listener that passes on only the connections of one user; see
// [OwnerOnly].
type OwnerListener struct {
	net.Listener
	uid   int
	slots chan struct{} // one per refusal in flight
	wg    sync.WaitGroup

	mu       sync.Mutex // guards refusing and closed
	refusing map[net.Conn]struct{}
	closed   bool
}

// OwnerOnly returns ln with the owner check at accept: a connection whose client end
// belongs to uid ([ConnOwner]) is returned by Accept; any other, or one whose owner
// cannot be told, is answered 403 not_owner in the API's error envelope with
// Connection: close and closed at once, in the background, at most maxRefusing at a time
// and beyond that closed unanswered. The request-time [OwnerCheck] stays behind it.
// Use it only where the owner of a connection can be told (see [peercred.TCPAvailable]).
func OwnerOnly(ln net.Listener, uid int) *OwnerListener {
	return &OwnerListener{Listener: ln, uid: uid, slots: make(chan struct{}, maxRefusing), refusing: map[net.Conn]struct{}{}}
}

// Accept returns the next connection of the owner. Errors are the underlying listener's,
// a temporary one (out of descriptors) included, for the caller to wait on and go on.
func (l *OwnerListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		uid, err := ConnOwner(c)
		switch {
		case err != nil:
			l.refuse(c, notToldMsg)
		case uid != l.uid:
			l.refuse(c, notOwnerMsg(l.uid, uid))
		default:
			return c, nil
		}
	}
}

// refuse answers c in a slot of its own, or closes it unanswered when every slot is busy
// or the listener closed.
func (l *OwnerListener) refuse(c net.Conn, msg string) {
	select {
	case l.slots <- struct{}{}:
	default:
		c.Close()
		return
	}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		<-l.slots
		c.Close()
		return
	}
	l.refusing[c] = struct{}{}
	l.mu.Unlock()
	l.wg.Go(func() {
		defer func() {
			l.mu.Lock()
			delete(l.refusing, c)
			l.mu.Unlock()
			<-l.slots
		}()
		refuseConn(c, msg)
	})
}

// Close closes the listener, cuts the refusals in flight short and waits for them.
func (l *OwnerListener) Close() error {
	err := l.Listener.Close()
	l.mu.Lock()
	l.closed = true
	for c := range l.refusing {
		c.SetDeadline(time.Now())
	}
	l.mu.Unlock()
	l.wg.Wait()
	return err
}

// refuseConn answers a connection of another user with 403 not_owner, msg saying why, and
// closes it: its request is read (bounded in time and size) only so that the answer
// reaches it rather than a reset.
func refuseConn(c net.Conn, msg string) {
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(refuseRead))
	http.ReadRequest(bufio.NewReader(io.LimitReader(c, refuseBytes)))
	c.SetWriteDeadline(time.Now().Add(refuseWrite))
	body, _ := json.MarshalIndent(NewError(http.StatusForbidden, "not_owner", msg).Body(), "", "  ")
	fmt.Fprintf(c, "HTTP/1.1 403 Forbidden\r\nConnection: close\r\nContent-Type: application/json\r\nCache-Control: no-store\r\nContent-Length: %d\r\n\r\n%s\n", len(body)+1, body)
}
