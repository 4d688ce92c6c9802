package model

import (
	"errors"
	"iter"
	"testing"
)

// usageProtocol is lineProtocol whose Done carries a usage.
type usageProtocol struct{ lineProtocol }

func (p usageProtocol) Decode(events iter.Seq2[Event, error], yield func(Chunk) bool) error {
	return p.lineProtocol.Decode(events, func(ch Chunk) bool {
		if d, ok := ch.(Done); ok {
			d.Usage = Usage{Input: 10, Output: 3, CacheRead: 4}
			ch = d
		}
		return yield(ch)
	})
}

// TestClientObserve: the observer is told of every attempt that sent a request, once it
// ended: its status (0 without a response), whether the client tries again, the latency
// to the headers and to the first chunk, and the usage of a response that came to its
// end. A credential that cannot be looked up sends nothing and is no attempt.
func TestClientObserve(t *testing.T) {
	type seen struct {
		status     int
		retry      bool
		firstChunk bool
	}
	overloaded := reply{529, nil, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`}
	for _, tt := range []struct {
		name     string
		replies  []reply
		attempts int
		closed   bool // nothing listens
		keyErr   bool
		stop     bool // the consumer stops at the first chunk
		want     []seen
	}{
		{"529 twice then ok", []reply{overloaded, overloaded, {200, nil, "hi"}}, 3, false, false, false,
			[]seen{{529, true, false}, {529, true, false}, {200, false, true}}},
		{"attempts exhausted", []reply{{503, nil, ""}, {503, nil, ""}}, 2, false, false, false,
			[]seen{{503, true, false}, {503, false, false}}},
		{"401 at once", []reply{{401, nil, ""}}, 3, false, false, false, []seen{{401, false, false}}},
		{"mid-stream", []reply{{200, nil, "par!midstream"}}, 3, false, false, false, []seen{{200, false, true}}},
		{"consumer stops", []reply{{200, nil, "hi"}}, 3, false, false, true, []seen{{200, false, true}}},
		{"no connection", nil, 2, true, false, false, []seen{{0, true, false}, {0, false, false}}},
		{"no credential", []reply{{200, nil, "hi"}}, 3, false, true, false, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv, _ := server(t, tt.replies...)
			if tt.closed {
				srv.Close()
			}
			var got []Attempt
			c := &Client{Protocol: usageProtocol{}, BaseURL: srv.URL, Retry: fastRetry(tt.attempts),
				Observe: func(a Attempt) { got = append(got, a) }}
			if tt.keyErr {
				c.Key = func() (string, error) { return "", errors.New("ANTHROPIC_API_KEY is not set") }
			}
			for _, err := range c.Stream(t.Context(), Request{System: "body"}) {
				if tt.stop || err != nil {
					break
				}
			}
			if len(got) != len(tt.want) {
				t.Fatalf("observed %d attempts, want %d: %+v", len(got), len(tt.want), got)
			}
			for i, w := range tt.want {
				a := got[i]
				if a.Status != w.status || a.Retry != w.retry || (a.FirstChunk > 0) != w.firstChunk {
					t.Errorf("attempt %d = %+v, want status %d, retry %v, a first chunk %v", i+1, a, w.status, w.retry, w.firstChunk)
				}
				if (a.Headers > 0) != (w.status != 0) || a.FirstChunk > 0 && a.FirstChunk < a.Headers {
					t.Errorf("attempt %d: headers after %v, first chunk after %v", i+1, a.Headers, a.FirstChunk)
				}
			}
			if n := len(got); n > 0 && tt.name == "529 twice then ok" && got[n-1].Usage != (Usage{Input: 10, Output: 3, CacheRead: 4}) {
				t.Errorf("usage of the answer = %+v", got[n-1].Usage)
			}
		})
	}
}
