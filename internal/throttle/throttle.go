// Package throttle passes on the newest of a stream of reports (a running tool call's
// output tail) at most once per interval, off the reporting goroutine, so a slow consumer
// (a disk sync, a network write) never stalls the producer.
package throttle

import (
	"sync"
	"time"
)

// Latest sends the first report at once and then at most one per Every, always the newest;
// reports in between are superseded. Send runs on a timer goroutine, one call at a time.
// After [Latest.Stop] returns nothing more is sent. Its methods are safe for concurrent use.
type Latest struct {
	Every time.Duration
	Send  func(string)

	sendMu sync.Mutex // held while sending; Stop takes it to wait out a send in flight

	mu      sync.Mutex // guards the fields below
	last    time.Time  // when the last send started
	pending string     // the newest unsent report, when has is set
	has     bool
	timer   *time.Timer // a flush to come
	done    bool
}

// Report offers the newest value.
func (l *Latest) Report(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done {
		return
	}
	l.pending, l.has = s, true
	l.schedule()
}

// schedule arranges a flush when the interval since the last send is over, unless one is
// due already; l.mu is held.
func (l *Latest) schedule() {
	if l.timer == nil {
		l.timer = time.AfterFunc(max(time.Until(l.last.Add(l.Every)), 0), l.flush)
	}
}

// flush sends the pending report once the interval is over.
func (l *Latest) flush() {
	l.sendMu.Lock()
	defer l.sendMu.Unlock()
	l.mu.Lock()
	l.timer = nil
	if l.done || !l.has {
		l.mu.Unlock()
		return
	}
	if !l.last.IsZero() && time.Since(l.last) < l.Every {
		l.schedule()
		l.mu.Unlock()
		return
	}
	s := l.pending
	l.last, l.has = time.Now(), false
	l.mu.Unlock()
	l.Send(s)
}

// Stop ends the reports, waiting out a send in flight; with flush it first sends the newest
// unsent report, if any. Nothing is sent after Stop returns.
func (l *Latest) Stop(flush bool) {
	l.sendMu.Lock()
	defer l.sendMu.Unlock()
	l.mu.Lock()
	l.done = true
	if l.timer != nil {
		l.timer.Stop()
		l.timer = nil
	}
	s, has := l.pending, l.has && flush
	l.has = false
	l.mu.Unlock()
	if has {
		l.Send(s)
	}
}
