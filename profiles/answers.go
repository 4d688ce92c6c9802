package profiles

import "time"

// The supervisor's own JSON answers and the events of the browser's merged stream, one
// struct each: with the API's (package api) they are the server's contract. Lists are
// never null. Errors are answered in the one envelope of package web.

// StatusAnswer answers GET /status: each profile worker's state, by profile name, and the
// merged event streams open (one per browser).
type StatusAnswer struct {
	Profiles     []ProfileStatus `json:"profiles"`
	EventStreams int             `json:"event_streams"`
}

// HealthAnswer is GET /healthz: the server answers, with its build and each profile
// worker's state.
type HealthAnswer struct {
	Status   string          `json:"status"` // "ok"
	Version  string          `json:"version"`
	Profiles []ProfileStatus `json:"profiles"`
}

// ProfileStatus is one profile worker's state in a [StatusAnswer] or [HealthAnswer].
type ProfileStatus struct {
	Profile string `json:"profile"`
	Running bool   `json:"running"`
	PID     int    `json:"pid,omitempty"` // when it runs
	Crashes int    `json:"crashes"`       // in the last minutes
	// RetryAt is when a worker that keeps crashing is started again, while it waits.
	RetryAt time.Time `json:"retry_at,omitzero"`
	Error   string    `json:"error,omitempty"` // why it last failed to start or stopped
}

// SubscribeRequest is the body of POST /events/STREAM: a page's subscription to a
// session's events through the browser's stream, or its end.
type SubscribeRequest struct {
	Op    string `json:"op"`    // "subscribe" or "unsubscribe"
	Sub   string `json:"sub"`   // the page's name for the subscription, at most 64 bytes
	URL   string `json:"url"`   // a session's event stream, /profiles/NAME/s/ID/events, or /profiles/NAME/states/events
	After string `json:"after"` // the last event id the page has
}

// SubscribeAnswer answers POST /events/STREAM.
type SubscribeAnswer struct {
	Sub string `json:"sub"`
	Op  string `json:"op"`
}

// The events of GET /events, the browser's merged stream: each is the JSON data of one
// unnamed server-sent event, told apart by its type.

// HelloEvent opens a merged stream: it names the stream, for the subscriptions.
type HelloEvent struct {
	Type   string `json:"type"` // "hello"
	Stream string `json:"stream"`
}

// PingEvent comes every few seconds on a merged stream.
type PingEvent struct {
	Type string `json:"type"` // "ping"
}

// SubStatusEvent tells a subscription's page that its worker's stream is being read again
// (state "reconnecting") and then is (state "live"), or that the worker refused it (state
// "gone", with the status).
type SubStatusEvent struct {
	Type   string `json:"type"` // "status"
	Sub    string `json:"sub"`
	State  string `json:"state"`
	Status int    `json:"status,omitempty"` // the worker's answer, when gone
}

// SubEvent is one event of a subscription's session stream, as the worker sent it.
type SubEvent struct {
	Type  string `json:"type"` // "event"
	Sub   string `json:"sub"`
	ID    string `json:"id"`
	Event string `json:"event"`
	Data  string `json:"data"`
}
