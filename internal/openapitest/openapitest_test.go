package openapitest

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

const doc = `{
  "openapi": "3.1.0",
  "paths": {"/things/{id}": {"get": {"operationId": "getThing", "responses": {
    "200": {"description": "ok", "headers": {"V": {"required": true}}, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Thing"}}}},
    "404": {"$ref": "#/components/responses/Error"}}}}},
  "components": {
    "schemas": {
      "Thing": {"type": "object", "additionalProperties": false, "required": ["name", "tags"],
        "properties": {"name": {"type": "string", "enum": ["a", "b"]}, "tags": {"type": "array", "items": {"type": "string"}},
          "n": {"type": "integer", "minimum": 0}, "at": {"type": "string", "format": "date-time"},
          "kind": {"oneOf": [{"type": "string"}, {"type": "integer"}]}}},
      "Error": {"type": "object", "required": ["error"], "properties": {"error": {"type": "string"}}}},
    "responses": {
      "Error": {"description": "e", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}},
      "NotFound": {"$ref": "#/components/responses/Error"},
      "MethodNotAllowed": {"$ref": "#/components/responses/Error"}}}
}`

// TestCheck: what the document declares passes; a status, a field, a null list, a wrong
// type, a missing header or a value out of its enum does not.
func TestCheck(t *testing.T) {
	d, err := Load([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	h := http.Header{"Content-Type": {"application/json"}, "V": {"1"}}
	for _, tt := range []struct {
		name, method, path string
		status             int
		header             http.Header
		body, wrong        string
	}{
		{"ok", "GET", "/things/x", 200, h, `{"name":"a","tags":[],"n":1,"at":"2026-01-02T03:04:05Z","kind":3}`, ""},
		{"undeclared status", "GET", "/things/x", 409, h, `{"error":"x"}`, "does not declare"},
		{"unknown field", "GET", "/things/x", 200, h, `{"name":"a","tags":[],"extra":1}`, `additional properties ["extra"]`},
		{"null list", "GET", "/things/x", 200, h, `{"name":"a","tags":null}`, `has type "null", want "array"`},
		{"missing field", "GET", "/things/x", 200, h, `{"name":"a"}`, `missing properties: ["tags"]`},
		{"enum", "GET", "/things/x", 200, h, `{"name":"c","tags":[]}`, "c does not equal any of: [a b]"},
		{"integer", "GET", "/things/x", 200, h, `{"name":"a","tags":[],"n":1.5}`, `want "integer"`},
		{"minimum", "GET", "/things/x", 200, h, `{"name":"a","tags":[],"n":-1}`, "minimum: -1"},
		{"date-time", "GET", "/things/x", 200, h, `{"name":"a","tags":[],"at":"yesterday"}`, `"yesterday" does not match`},
		{"oneOf", "GET", "/things/x", 200, h, `{"name":"a","tags":[],"kind":true}`, "oneOf: did not validate against any"},
		{"header", "GET", "/things/x", 200, http.Header{"Content-Type": {"application/json"}}, `{"name":"a","tags":[]}`, "header V"},
		{"media type", "GET", "/things/x", 200, http.Header{"Content-Type": {"text/plain"}, "V": {"1"}}, `x`, "Content-Type"},
		{"no such path", "GET", "/nope", 404, h, `{"error":"x"}`, ""},
		{"no such path, 500", "GET", "/nope", 500, h, `{"error":"x"}`, "neither 404 nor 405"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := d.Check(tt.method, tt.path, tt.status, tt.header, []byte(tt.body))
			switch {
			case tt.wrong == "" && err != nil:
				t.Errorf("Check = %v, want nil", err)
			case tt.wrong != "" && (err == nil || !strings.Contains(err.Error(), tt.wrong)):
				t.Errorf("Check = %v, want an error saying %q", err, tt.wrong)
			}
		})
	}
	if got := strings.Join(d.Answers(), ","); got != "getThing 200,getThing 404" {
		t.Errorf("Answers = %s", got)
	}
}

const streamDoc = `{
  "openapi": "3.1.0",
  "paths": {"/events": {"get": {"operationId": "events", "responses": {"200": {"description": "s",
    "content": {"text/event-stream": {
      "schema": {"type": "object", "required": ["type"], "additionalProperties": false, "properties": {"type": {"enum": ["a", "b"]}}}}}}}}}}
}`

// TestRecorderStreams: a Recorder passes an event stream through unchanged and checks each
// event as it is read: its data against the schema, its name against its type.
func TestRecorderStreams(t *testing.T) {
	d, err := Load([]byte(streamDoc))
	if err != nil {
		t.Fatal(err)
	}
	stream := "retry: 1000\n\nid: 1\nevent: a\ndata: {\"type\":\"a\"}\n\nevent: a\ndata: {\"type\":\"b\"}\n\ndata: {\"type\":\"a\",\"x\":1}\n\n"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, stream)
	}))
	defer srv.Close()
	rec := &Recorder{Doc: d, Base: "/api", Next: http.DefaultTransport}
	resp, err := (&http.Client{Transport: rec}).Get(srv.URL + "/api/events")
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(got) != stream {
		t.Errorf("the stream read through the recorder = %q, want it unchanged", got)
	}
	errs := rec.Errors()
	if len(errs) != 2 || !strings.Contains(errs[0], `SSE name "a" is not its type`) || !strings.Contains(errs[1], `additional properties ["x"]`) {
		t.Errorf("errors = %q, want the misnamed event and the undeclared field", errs)
	}
	if !rec.Seen("events 200") || len(rec.Missing()) != 0 {
		t.Errorf("seen: %v, missing %v", rec.Seen("events 200"), rec.Missing())
	}
}

// TestMethodNotAllowed: a 405 for a method no operation at the path takes is the 405 of
// every operation at the path; at a path of no operation, a 405 is not an answer.
func TestMethodNotAllowed(t *testing.T) {
	d, err := Load([]byte(`{"openapi": "3.1.0", "paths": {"/things": {
	  "get": {"operationId": "listThings", "responses": {"405": {"description": "m"}}},
	  "post": {"operationId": "makeThing", "responses": {"405": {"description": "m"}}}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	rec := &Recorder{Doc: d}
	id, key, err := d.Check("DELETE", "/things", 405, http.Header{}, nil)
	rec.note(id, key, err)
	if err != nil || !rec.Seen("listThings 405") || !rec.Seen("makeThing 405") || len(rec.Missing()) != 0 {
		t.Errorf("Check(DELETE /things, 405) = %q %q %v; missing %v", id, key, err, rec.Missing())
	}
	if _, _, err := d.Check("DELETE", "/nothing", 405, http.Header{}, nil); err == nil {
		t.Error("Check(DELETE /nothing, 405) = nil, want an error: the document has no MethodNotAllowed answer")
	}
}
