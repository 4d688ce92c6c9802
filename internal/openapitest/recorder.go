package openapitest

import (
	"bytes"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"strings"
	"sync"

	"myco.dev/api"
)

// Recorder is an http.RoundTripper that checks every answer under Base against Doc (see
// [Doc.Check]) and the events of every event stream against their schema as they are
// read (each event's SSE name must be its data's type), and records which answers of the
// document it saw. It is safe for concurrent use.
type Recorder struct {
	Doc  *Doc
	Base string // the API's path: "/profiles/default/api"
	Next http.RoundTripper

	mu   sync.Mutex // guards the fields below
	seen map[string]bool
	errs []string
}

// RoundTrip sends req and checks the answer.
func (r *Recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.Next.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	path, ok := strings.CutPrefix(req.URL.Path, r.Base)
	if !ok {
		return resp, nil
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == "text/event-stream" {
		id, key, err := r.Doc.Check(req.Method, path, resp.StatusCode, resp.Header, nil)
		r.note(id, key, err)
		resp.Body = &eventReader{r: r, op: id, body: resp.Body}
		return resp, nil
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	id, key, cerr := r.Doc.Check(req.Method, path, resp.StatusCode, resp.Header, body)
	r.note(id, key, cerr)
	return resp, nil
}

func (r *Recorder) note(id, key string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.seen == nil {
		r.seen = map[string]bool{}
	}
	if err != nil {
		r.errs = append(r.errs, err.Error())
		return
	}
	for id := range strings.SplitSeq(id, ",") {
		r.seen[id+" "+key] = true
	}
}

// Errors returns what was wrong with the answers so far.
func (r *Recorder) Errors() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.errs)
}

// Missing returns the answers of the document (see [Doc.Answers]) not seen so far.
func (r *Recorder) Missing() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, a := range r.Doc.Answers() {
		if !r.seen[a] {
			out = append(out, a)
		}
	}
	return out
}

// Seen reports whether the answer key ("operationId STATUS") was seen.
func (r *Recorder) Seen(key string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.seen[key]
}

// eventReader passes an event stream through unchanged, checking each event as it goes by.
type eventReader struct {
	r    *Recorder
	op   string
	body io.ReadCloser
	dec  api.SSEDecoder
}

func (e *eventReader) Read(p []byte) (int, error) {
	n, err := e.body.Read(p)
	if _, werr := e.dec.Write(p[:n]); werr != nil {
		e.r.note("", "", fmt.Errorf("the event stream of %s: %w", e.op, werr))
	}
	for {
		ev, ok := e.dec.Next()
		if !ok {
			break
		}
		e.check(ev)
	}
	return n, err
}

func (e *eventReader) check(ev api.SSEEvent) {
	schema := e.r.Doc.EventSchema(e.op)
	if schema == nil {
		e.r.note("", "", fmt.Errorf("operation %s streams events, but the document gives no schema of their data", e.op))
		return
	}
	v, err := decode([]byte(ev.Data))
	if err == nil {
		err = e.r.Doc.Validate(schema, v)
	}
	if err == nil {
		if m, ok := v.(map[string]any); !ok || m["type"] != ev.Type {
			err = fmt.Errorf("the event's SSE name %q is not its type %v", ev.Type, m["type"])
		}
	}
	if err != nil {
		e.r.note("", "", fmt.Errorf("an event of %s: %w\ndata: %.500s", e.op, err, ev.Data))
	}
}

func (e *eventReader) Close() error { return e.body.Close() }
