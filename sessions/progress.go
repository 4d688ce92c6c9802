package sessions

import (
	"sync"
	"time"
)

// progressEvery is the least time between two saved progress records of one call.
const progressEvery = 2 * time.Second

// progress throttles the saving of one running call's output: a report is saved at once
// when none was saved in the last progressEvery, otherwise the newest is saved when that
// interval is over, so the last output before a long silence is on disk too. It is safe for
// concurrent use.
type progress struct {
	save func(tail string)

	saveMu sync.Mutex // held while saving; stop takes it to wait out a save in flight

	mu      sync.Mutex // guards the fields below
	last    time.Time  // when the last save started
	pending string     // the newest unsaved report, when has is set
	has     bool
	timer   *time.Timer
	done    bool
}

// report offers the call's newest output.
func (p *progress) report(tail string) {
	p.mu.Lock()
	if p.done {
		p.mu.Unlock()
		return
	}
	now := time.Now()
	if wait := p.last.Add(progressEvery).Sub(now); !p.last.IsZero() && wait > 0 {
		p.pending, p.has = tail, true
		if p.timer == nil {
			p.timer = time.AfterFunc(wait, p.flush)
		}
		p.mu.Unlock()
		return
	}
	p.last, p.has = now, false
	p.mu.Unlock()
	p.write(tail)
}

// flush saves the pending report when the throttle interval is over.
func (p *progress) flush() {
	p.mu.Lock()
	p.timer = nil
	if p.done || !p.has {
		p.mu.Unlock()
		return
	}
	tail := p.pending
	p.last, p.has = time.Now(), false
	p.mu.Unlock()
	p.write(tail)
}

func (p *progress) write(tail string) {
	p.saveMu.Lock()
	defer p.saveMu.Unlock()
	p.mu.Lock()
	done := p.done
	p.mu.Unlock()
	if !done {
		p.save(tail)
	}
}

// stop ends the reports: nothing is saved after it returns. The call's result supersedes
// its progress.
func (p *progress) stop() {
	p.mu.Lock()
	p.done = true
	if p.timer != nil {
		p.timer.Stop()
		p.timer = nil
	}
	p.mu.Unlock()
	p.saveMu.Lock()
	p.saveMu.Unlock() // an empty critical section: it waits out a save in flight
}

// saveProgress durably records the newest output of a running call and reports it. A
// failed save stops the session's work, as any other.
func (rc *recorder) saveProgress(th *Thread, callID, tail string) {
	rt := rc.r.rt
	if rt.stopped() != nil {
		return
	}
	if err := rt.store.recordProgress(rt.sess, &progressRec{Thread: th.ID, CallID: callID, Output: tail, At: rt.now().UTC()}); err != nil {
		rt.fail(err)
		rc.r.emit(Stopped{Err: err})
		return
	}
	rc.r.emit(Progress{Thread: th.ID, CallID: callID, Output: tail})
}
