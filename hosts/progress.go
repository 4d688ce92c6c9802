package hosts

import (
	"sync"
	"time"
)

// progressEvery is the least time between two progress frames of one call.
const progressEvery = time.Second

// progressSender throttles the progress frames of one running call: a report is sent
// (off the reporting goroutine, so a slow connection never stalls the tool's output) when
// none was sent in the last progressEvery, otherwise the newest is sent when that interval
// is over. finish sends the newest unsent report, and nothing is sent after it returns. It
// is safe for concurrent use.
type progressSender struct {
	send func(tail string)

	sendMu sync.Mutex // held while sending; finish takes it to wait out a send in flight

	mu      sync.Mutex // guards the fields below
	last    time.Time  // when the last send started
	pending string     // the newest unsent report, when has is set
	has     bool
	timer   *time.Timer // a flush to come
	done    bool
}

// report offers the call's newest output.
func (p *progressSender) report(tail string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done {
		return
	}
	p.pending, p.has = tail, true
	p.schedule()
}

// schedule arranges a flush when the throttle interval is over, unless one is due; p.mu
// is held.
func (p *progressSender) schedule() {
	if p.timer == nil {
		p.timer = time.AfterFunc(max(time.Until(p.last.Add(progressEvery)), 0), p.flush)
	}
}

// flush sends the pending report once the throttle interval is over.
func (p *progressSender) flush() {
	p.sendMu.Lock()
	defer p.sendMu.Unlock()
	p.mu.Lock()
	p.timer = nil
	if p.done || !p.has {
		p.mu.Unlock()
		return
	}
	if !p.last.IsZero() && time.Since(p.last) < progressEvery {
		p.schedule()
		p.mu.Unlock()
		return
	}
	tail := p.pending
	p.last, p.has = time.Now(), false
	p.mu.Unlock()
	p.send(tail)
}

// finish sends the newest unsent report, if any, and ends the reports: nothing is sent
// after it returns, so the call's result can follow.
func (p *progressSender) finish() {
	p.sendMu.Lock()
	defer p.sendMu.Unlock()
	p.mu.Lock()
	p.done = true
	if p.timer != nil {
		p.timer.Stop()
		p.timer = nil
	}
	tail, has := p.pending, p.has
	p.has = false
	p.mu.Unlock()
	if has {
		p.send(tail)
	}
}
