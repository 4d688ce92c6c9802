package handlers

import (
	"context"
	"encoding/json"
	"net/http"

	"myco.dev/internal/web"
	"myco.dev/sessions"
	"myco.dev/views"
)

// stateEvents streams the states of the profile's sessions as they change, for the
// pages' notifications: one [views.EventState] event, a [views.StateChange], each time an
// update may have changed a session's state and it is not the one this stream last told
// for it. The cursor is Last-Event-ID, else ?after=; without one the stream starts now,
// with a ping.
// A cursor the bus no longer holds gets each session's reset, which tells its state now.
func (s *server) stateEvents(w http.ResponseWriter, r *http.Request) error {
	after := r.Header.Get("Last-Event-ID")
	if after == "" {
		after = r.URL.Query().Get("after")
	}
	sub := s.Sessions.Subscribe(nil, after)
	defer sub.Close()
	defer s.streaming("states")()
	sse, err := web.StartSSE(w, r)
	if err != nil {
		return nil // the client is gone
	}
	// A ping at once says the stream is open: what happens from now on will be told.
	if sse.Send("", views.EventPing, "") != nil {
		return nil
	}
	ctx := r.Context()
	told := map[string]string{} // session id → the state this stream last told
	for {
		us, ok := nextOrPing(ctx, sub, s.Ping, func() error { return sse.Send("", views.EventPing, "") })
		if !ok {
			return nil
		}
		for _, u := range us {
			if u.Session == "" || !changesState(u.Type) {
				continue
			}
			c, ok := s.stateChange(ctx, u.Session)
			if !ok || told[u.Session] == c.State {
				continue
			}
			told[u.Session] = c.State
			b, err := json.Marshal(c)
			if err != nil {
				return err
			}
			sse.AppendJSON(sub.IDOf(u.Seq), views.EventState, b)
		}
		if sse.Flush() != nil || !sse.Pace(ctx) {
			return nil
		}
	}
}

// changesState reports whether an update of type t may change its session's state: work
// that starts or ends, an approval asked or answered, a failed save, an update the stream
// missed.
func changesState(t string) bool {
	switch t {
	case sessions.UpdateState, sessions.UpdateDone, sessions.UpdateError, sessions.UpdateCancelled,
		sessions.UpdateApprovalRequested, sessions.UpdateApprovalResolved, sessions.UpdateSaveFailed,
		sessions.UpdateCreated, sessions.UpdateReset:
		return true
	}
	return false
}

// stateChange is session id's state now, as the states stream tells it; false when the
// session cannot be read (gone, say).
func (s *server) stateChange(ctx context.Context, id string) (views.StateChange, bool) {
	sess, st, err := s.Sessions.Snapshot(ctx, id)
	if err != nil {
		return views.StateChange{}, false
	}
	return views.StateChange{Session: id, URL: s.sessionURL(id), Title: sessionTitle(sess.Title), State: s.Sessions.State(sess, st),
		Why: s.Sessions.Why(sess, st), Child: sess.Parent != "" || sess.Hidden, Approval: len(sess.Approvals) > 0 || st.ApprovalsBelow > 0}, true
}
