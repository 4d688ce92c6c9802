// Package openapitest checks HTTP answers against an OpenAPI 3.1 document, for tests: each
// answer's status must be one its operation declares, its media type one the status
// declares, its headers those marked required, and its body valid against the status's
// schema, in the subset of JSON Schema that myco's document uses ($ref, oneOf, type, enum,
// const, properties, required, additionalProperties, items, format date-time, minimum,
// maximum). A [Recorder] does the checks on a client's transport, event streams included,
// and tells which answers of the document were never seen.
//
// It imports only the standard library.
package openapitest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Doc is a parsed OpenAPI document.
type Doc struct {
	root map[string]any
	ops  []op
}

// op is one operation of the document.
type op struct {
	id, method, path string
	responses        map[string]any
}

// Load parses an OpenAPI document.
func Load(b []byte) (*Doc, error) {
	var root map[string]any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&root); err != nil {
		return nil, fmt.Errorf("parse the OpenAPI document: %w", err)
	}
	d := &Doc{root: root}
	paths, _ := root["paths"].(map[string]any)
	for p, item := range paths {
		methods, _ := item.(map[string]any)
		for m, o := range methods {
			om, ok := o.(map[string]any)
			if !ok || m == "parameters" {
				continue
			}
			id, _ := om["operationId"].(string)
			rs, _ := om["responses"].(map[string]any)
			d.ops = append(d.ops, op{id: id, method: strings.ToUpper(m), path: p, responses: rs})
		}
	}
	sort.Slice(d.ops, func(i, j int) bool { return d.ops[i].id < d.ops[j].id })
	return d, nil
}

// Answers lists every answer the document declares, as "operationId STATUS" ("default" for
// the default answer), sorted.
func (d *Doc) Answers() []string {
	var out []string
	for _, o := range d.ops {
		for status := range o.responses {
			out = append(out, o.id+" "+status)
		}
	}
	slices.Sort(out)
	return out
}

// find returns the operation of method at path (the path under the API's base), or nil.
func (d *Doc) find(method, path string) *op {
	for i, o := range d.ops {
		if o.method == method && match(o.path, path) {
			return &d.ops[i]
		}
	}
	return nil
}

// at returns the operations at path, whatever their method.
func (d *Doc) at(path string) []op {
	var out []op
	for _, o := range d.ops {
		if match(o.path, path) {
			out = append(out, o)
		}
	}
	return out
}

func match(pattern, path string) bool {
	ps, xs := strings.Split(pattern, "/"), strings.Split(path, "/")
	if len(ps) != len(xs) {
		return false
	}
	for i, p := range ps {
		if strings.HasPrefix(p, "{") && strings.HasSuffix(p, "}") {
			if xs[i] == "" {
				return false
			}
			continue
		}
		if p != xs[i] {
			return false
		}
	}
	return true
}

// resolve follows a $ref within the document.
func (d *Doc) resolve(v any) (map[string]any, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("not an object: %v", v)
	}
	for range 16 {
		ref, ok := m["$ref"].(string)
		if !ok {
			return m, nil
		}
		target, err := d.pointer(ref)
		if err != nil {
			return nil, err
		}
		if m, ok = target.(map[string]any); !ok {
			return nil, fmt.Errorf("%s is not an object", ref)
		}
	}
	return nil, fmt.Errorf("a $ref loop")
}

func (d *Doc) pointer(ref string) (any, error) {
	rest, ok := strings.CutPrefix(ref, "#/")
	if !ok {
		return nil, fmt.Errorf("only local $refs are supported: %s", ref)
	}
	var cur any = d.root
	for part := range strings.SplitSeq(rest, "/") {
		part = strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s: no %s", ref, part)
		}
		if cur, ok = m[part]; !ok {
			return nil, fmt.Errorf("%s: no %s", ref, part)
		}
	}
	return cur, nil
}

// Check checks an answer to method path (under the API's base): it returns the
// operation's id and the answer's key ("201", "default"), or what is wrong with it. A 405
// for a method no operation at the path takes is each such operation's 405 (id lists them,
// separated by commas); any other answer to no operation must be the document's 404 or 405
// answer (components.responses NotFound or MethodNotAllowed). Event streams are checked by the [Recorder] as they are
// read; Check checks their status and headers only.
func (d *Doc) Check(method, path string, status int, h http.Header, body []byte) (id, key string, err error) {
	o := d.find(method, path)
	var resp any
	switch {
	case o != nil:
		id = o.id
		key = strconv.Itoa(status)
		if resp = o.responses[key]; resp == nil && status >= 500 {
			key, resp = "default", o.responses["default"]
		}
		if resp == nil {
			return id, key, fmt.Errorf("%s %s answered %d, which operation %s does not declare", method, path, status, id)
		}
	case status == http.StatusMethodNotAllowed && len(d.at(path)) > 0:
		// The 405 of another method at an operation's path: the answer each operation at
		// the path declares (a server without the operation answers it so).
		ops := d.at(path)
		var ids []string
		for _, o := range ops {
			ids = append(ids, o.id)
		}
		id, key = strings.Join(ids, ","), "405"
		if resp = ops[0].responses[key]; resp == nil {
			return id, key, fmt.Errorf("%s %s answered 405, which operation %s does not declare", method, path, ops[0].id)
		}
	default:
		name := map[int]string{404: "NotFound", 405: "MethodNotAllowed"}[status]
		if name == "" {
			return "", "", fmt.Errorf("%s %s is no operation of the document, and its answer %d is neither 404 nor 405", method, path, status)
		}
		id, key = "(none)", strconv.Itoa(status)
		resp = map[string]any{"$ref": "#/components/responses/" + name}
	}
	r, err := d.resolve(resp)
	if err != nil {
		return id, key, err
	}
	if hs, ok := r["headers"].(map[string]any); ok {
		for name, hv := range hs {
			hm, err := d.resolve(hv)
			if err != nil {
				return id, key, err
			}
			if req, _ := hm["required"].(bool); req && h.Get(name) == "" {
				return id, key, fmt.Errorf("%s %s %d: the required header %s is missing", method, path, status, name)
			}
		}
	}
	content, _ := r["content"].(map[string]any)
	if len(content) == 0 {
		if len(body) > 0 {
			return id, key, fmt.Errorf("%s %s %d: a body where the document declares none", method, path, status)
		}
		return id, key, nil
	}
	mt, _, _ := mime.ParseMediaType(h.Get("Content-Type"))
	var media map[string]any
	for k, v := range content {
		if km, _, _ := mime.ParseMediaType(k); km == mt {
			media, _ = v.(map[string]any)
		}
	}
	if media == nil {
		return id, key, fmt.Errorf("%s %s %d: Content-Type %q is not one the document declares", method, path, status, h.Get("Content-Type"))
	}
	if mt != "application/json" {
		return id, key, nil
	}
	schema, ok := media["schema"]
	if !ok {
		return id, key, nil
	}
	v, err := decode(body)
	if err != nil {
		return id, key, fmt.Errorf("%s %s %d: %w", method, path, status, err)
	}
	if err := d.Validate(schema, v); err != nil {
		return id, key, fmt.Errorf("%s %s %d: %w\nbody: %.2000s", method, path, status, err, body)
	}
	return id, key, nil
}

func decode(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("the body is not JSON: %w", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("the body holds more than one JSON value")
	}
	return v, nil
}

// Validate checks v, a JSON value decoded with numbers as json.Number, against schema.
func (d *Doc) Validate(schema any, v any) error { return d.validate(schema, v, "$") }

func (d *Doc) validate(schema any, v any, at string) error {
	s, err := d.resolve(schema)
	if err != nil {
		return err
	}
	if one, ok := s["oneOf"].([]any); ok {
		var passed int
		var errs []string
		for _, sub := range one {
			if err := d.validate(sub, v, at); err == nil {
				passed++
			} else {
				errs = append(errs, err.Error())
			}
		}
		if passed != 1 {
			return fmt.Errorf("%s matches %d of its oneOf schemas, not one: %s", at, passed, strings.Join(errs, "; "))
		}
	}
	if c, ok := s["const"]; ok && !equal(c, v) {
		return fmt.Errorf("%s = %v, want %v", at, v, c)
	}
	if e, ok := s["enum"].([]any); ok && !slices.ContainsFunc(e, func(x any) bool { return equal(x, v) }) {
		return fmt.Errorf("%s = %v, which is not one of %v", at, v, e)
	}
	if t, ok := s["type"]; ok {
		var types []string
		switch t := t.(type) {
		case string:
			types = []string{t}
		case []any:
			for _, x := range t {
				types = append(types, fmt.Sprint(x))
			}
		}
		if !slices.ContainsFunc(types, func(t string) bool { return isType(t, v) }) {
			return fmt.Errorf("%s = %s, not of type %s", at, short(v), strings.Join(types, " or "))
		}
	}
	switch v := v.(type) {
	case map[string]any:
		props, _ := s["properties"].(map[string]any)
		if req, ok := s["required"].([]any); ok {
			for _, r := range req {
				if _, ok := v[r.(string)]; !ok {
					return fmt.Errorf("%s lacks the required field %s", at, r)
				}
			}
		}
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if ps, ok := props[k]; ok {
				if err := d.validate(ps, v[k], at+"."+k); err != nil {
					return err
				}
				continue
			}
			switch ap := s["additionalProperties"].(type) {
			case bool:
				if !ap {
					return fmt.Errorf("%s has the field %s, which the document does not declare", at, k)
				}
			case map[string]any:
				if err := d.validate(ap, v[k], at+"."+k); err != nil {
					return err
				}
			}
		}
	case []any:
		if items, ok := s["items"]; ok {
			for i, x := range v {
				if err := d.validate(items, x, fmt.Sprintf("%s[%d]", at, i)); err != nil {
					return err
				}
			}
		}
	case string:
		if s["format"] == "date-time" {
			if _, err := time.Parse(time.RFC3339Nano, v); err != nil {
				return fmt.Errorf("%s = %q, not a date-time", at, v)
			}
		}
	case json.Number:
		f, _ := v.Float64()
		if m, ok := s["minimum"].(json.Number); ok {
			if min, _ := m.Float64(); f < min {
				return fmt.Errorf("%s = %v, under the minimum %v", at, v, m)
			}
		}
		if m, ok := s["maximum"].(json.Number); ok {
			if max, _ := m.Float64(); f > max {
				return fmt.Errorf("%s = %v, over the maximum %v", at, v, m)
			}
		}
	}
	return nil
}

func isType(t string, v any) bool {
	switch v := v.(type) {
	case nil:
		return t == "null"
	case bool:
		return t == "boolean"
	case string:
		return t == "string"
	case json.Number:
		if t == "number" {
			return true
		}
		_, err := strconv.ParseInt(string(v), 10, 64)
		return t == "integer" && err == nil
	case []any:
		return t == "array"
	case map[string]any:
		return t == "object"
	}
	return false
}

func equal(a, b any) bool {
	ab, _ := json.Marshal(a)
	bb, _ := json.Marshal(b)
	return bytes.Equal(ab, bb)
}

func short(v any) string {
	b, _ := json.Marshal(v)
	if len(b) > 200 {
		return string(b[:200]) + "…"
	}
	return string(b)
}

// EventSchema returns the schema of the data of the events of the stream that operation
// id answers with (the schema of its text/event-stream), or nil.
func (d *Doc) EventSchema(id string) any {
	for _, o := range d.ops {
		if o.id != id {
			continue
		}
		r, err := d.resolve(o.responses["200"])
		if err != nil {
			return nil
		}
		content, _ := r["content"].(map[string]any)
		media, _ := content["text/event-stream"].(map[string]any)
		return media["schema"]
	}
	return nil
}

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
		resp.Body = &eventReader{r: r, op: id, body: resp.Body, sc: bufio.NewReader(resp.Body)}
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

// eventReader passes an event stream through, checking each event as it goes by.
type eventReader struct {
	r    *Recorder
	op   string
	body io.ReadCloser
	sc   *bufio.Reader
	line []byte // the partial line read so far
	name string
	data []string
	out  bytes.Buffer
}

func (e *eventReader) Read(p []byte) (int, error) {
	for e.out.Len() == 0 {
		chunk, err := e.sc.ReadSlice('\n')
		e.out.Write(chunk)
		e.line = append(e.line, chunk...)
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			if e.out.Len() > 0 {
				break
			}
			return 0, err
		}
		e.event(strings.TrimSuffix(string(e.line), "\n"))
		e.line = e.line[:0]
	}
	return e.out.Read(p)
}

// event takes one line of the stream.
func (e *eventReader) event(line string) {
	switch {
	case line == "":
		if e.data != nil {
			e.check(e.name, strings.Join(e.data, "\n"))
		}
		e.name, e.data = "", nil
	case strings.HasPrefix(line, "event: "):
		e.name = line[7:]
	case strings.HasPrefix(line, "data: "):
		e.data = append(e.data, line[6:])
	}
}

func (e *eventReader) check(name, data string) {
	schema := e.r.Doc.EventSchema(e.op)
	if schema == nil {
		e.r.note("", "", fmt.Errorf("operation %s streams events, but the document gives no schema of their data", e.op))
		return
	}
	v, err := decode([]byte(data))
	if err == nil {
		err = e.r.Doc.Validate(schema, v)
	}
	if err == nil {
		if m, ok := v.(map[string]any); !ok || m["type"] != name {
			err = fmt.Errorf("the event's SSE name %q is not its type %v", name, v)
		}
	}
	if err != nil {
		e.r.note("", "", fmt.Errorf("an event of %s: %w\ndata: %.500s", e.op, err, data))
	}
}

func (e *eventReader) Close() error { return e.body.Close() }
