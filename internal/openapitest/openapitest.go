package openapitest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
)

// Doc is a parsed OpenAPI document.
type Doc struct {
	root map[string]any
	ops  []op
	defs map[string]*jsonschema.Schema // components.schemas, their $refs made local to $defs

	mu       sync.Mutex // guards resolved
	resolved map[string]*jsonschema.Resolved
}

// op is one operation of the document.
type op struct {
	id, method, path string
	responses        map[string]any
}

// Load parses an OpenAPI document.
func Load(b []byte) (*Doc, error) {
	var root map[string]any
	if err := json.Unmarshal(b, &root); err != nil {
		return nil, fmt.Errorf("parse the OpenAPI document: %w", err)
	}
	d := &Doc{root: root, resolved: map[string]*jsonschema.Resolved{}}
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
	components, _ := root["components"].(map[string]any)
	if err := localRefs(components["schemas"], &d.defs); err != nil {
		return nil, fmt.Errorf("the document's schemas: %w", err)
	}
	for _, s := range d.defs {
		dateTimes(s)
	}
	return d, nil
}

// localRefs decodes v, JSON of the document, into out, with each "#/components/schemas/X"
// made "#/$defs/X": a schema validates with the document's schemas as its $defs.
func localRefs(v, out any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	b = bytes.ReplaceAll(b, []byte(`"#/components/schemas/`), []byte(`"#/$defs/`))
	return json.Unmarshal(b, out)
}

// rfc3339 is a date-time as format date-time means it: the validator takes format for an
// annotation (as JSON Schema 2020-12 does by default), so a pattern checks it.
const rfc3339 = `^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?(Z|[+-][0-9]{2}:[0-9]{2})$`

// dateTimes gives every schema of format date-time in s the pattern of one.
func dateTimes(s *jsonschema.Schema) {
	if s == nil {
		return
	}
	if s.Format == "date-time" && s.Pattern == "" {
		s.Pattern = rfc3339
	}
	for _, sub := range s.Properties {
		dateTimes(sub)
	}
	for _, sub := range slices.Concat(s.OneOf, s.AnyOf, s.AllOf) {
		dateTimes(sub)
	}
	dateTimes(s.Items)
	dateTimes(s.AdditionalProperties)
}

// schema returns s, a schema of the document (a $ref, or one inline), resolved with the
// document's schemas; each is resolved once.
func (d *Doc) schema(s any) (*jsonschema.Resolved, error) {
	key, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if r, ok := d.resolved[string(key)]; ok {
		return r, nil
	}
	var root jsonschema.Schema
	if err := localRefs(s, &root); err != nil {
		return nil, err
	}
	dateTimes(&root)
	root.Defs = d.defs
	r, err := root.Resolve(nil)
	if err != nil {
		return nil, fmt.Errorf("resolve the schema %s: %w", key, err)
	}
	d.resolved[string(key)] = r
	return r, nil
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

// resolve follows a $ref within the document (of a response or a header).
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
// answer (components.responses NotFound or MethodNotAllowed). Event streams are checked by
// the [Recorder] as they are read; Check checks their status and headers only.
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
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("the body is not JSON: %w", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("the body holds more than one JSON value")
	}
	return v, nil
}

// Validate checks v, a JSON value decoded into an any, against schema, a schema of the
// document (a $ref to one of its schemas, or one inline).
func (d *Doc) Validate(schema any, v any) error {
	r, err := d.schema(schema)
	if err != nil {
		return err
	}
	return r.Validate(v)
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
