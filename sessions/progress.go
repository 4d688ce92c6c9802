package sessions

import "time"

// progressEvery is the least time between two saved progress records of one call: the
// first report is saved at once, then the newest at most once per interval, off the tool's
// output goroutine ([throttle.Latest]); nothing is saved once the call returned.
const progressEvery = 2 * time.Second

// saveProgress durably records the newest output of a running call and reports it. A
// failed save stops the session's work, as any other.
func (rc *recorder) saveProgress(th *Thread, callID, tail string) {
	rt := rc.r.rt
	if rt.stopped() != nil {
		return
	}
	rec := &progressRec{Thread: th.ID, CallID: callID, Output: tail, At: rt.now().UTC()}
	if rt.save(rt.doc.recordProgress(rec)) != nil {
		return
	}
	rt.emit(toolProgress{Thread: th.ID, CallID: callID, Output: tail})
}
