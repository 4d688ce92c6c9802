package handlers

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"myco.dev/api"
	"myco.dev/sessions"
)

// The generator of the OpenAPI document (openapi.json): the schemas come from the Go types
// of package api by reflection, their descriptions from the types' and fields' comments
// (with the fields' JSON names for their Go names), the unions (an action, an event) from
// api's lists of them, the paths from apiOps. It runs in tests because it reads the
// sources.

// sourceDirs are the directories of the packages whose types the API's answers use: api
// alone, whose types are the contract.
var sourceDirs = map[string]string{
	"myco.dev/api": "../api",
}

// generator builds the document.
type generator struct {
	t       testing.TB
	docs    map[string]comments // by package path
	schemas map[string]any
	events  map[reflect.Type]string // the event types, by their struct
	goNames map[string]string       // the JSON names of the fields described, by their Go names
}

func (g *generator) comments(pkg string) comments {
	if c, ok := g.docs[pkg]; ok {
		return c
	}
	dir, ok := sourceDirs[pkg]
	if !ok {
		g.t.Fatalf("the API uses a type of %s, whose sources the generator does not read: add it to sourceDirs", pkg)
	}
	c := readComments(g.t, dir)
	g.docs[pkg] = c
	return c
}

func schemaName(t reflect.Type) string { return t.Name() }

// eventNames are the event types of package api, by their struct.
func eventNames() map[reflect.Type]string {
	m := map[reflect.Type]string{}
	for _, typ := range api.EventTypes() {
		ev, _ := api.NewEvent(typ)
		m[reflect.TypeOf(ev).Elem()] = typ
	}
	return m
}

// ref returns the schema of t: a $ref to its component for a named struct (made on first
// use), else an inline schema. request says whether t is read from a request (its
// required fields are tagged) or written in an answer (every field without omitempty is
// always there).
func (g *generator) ref(t reflect.Type, request bool) map[string]any {
	switch t {
	case reflect.TypeFor[time.Time]():
		return map[string]any{"type": "string", "format": "date-time"}
	case reflect.TypeFor[json.RawMessage]():
		return map[string]any{"description": "Any JSON value."}
	}
	switch t.Kind() {
	case reflect.Pointer:
		return g.ref(t.Elem(), request)
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int64, reflect.Int32, reflect.Uint64, reflect.Uint32, reflect.Uint:
		return map[string]any{"type": "integer"}
	case reflect.Float64, reflect.Float32:
		return map[string]any{"type": "number"}
	case reflect.Slice:
		return map[string]any{"type": "array", "items": g.ref(t.Elem(), request)}
	case reflect.Map:
		return map[string]any{"type": "object", "additionalProperties": g.ref(t.Elem(), request)}
	case reflect.Struct:
		name := schemaName(t)
		if _, ok := g.schemas[name]; !ok {
			g.schemas[name] = nil // being made: a recursive use refers to it
			g.schemas[name] = g.object(t, request)
		}
		return map[string]any{"$ref": "#/components/schemas/" + name}
	}
	g.t.Fatalf("the generator does not know how to describe %v", t)
	return nil
}

// object is the schema of struct t: its fields, those of a struct it embeds (an event's
// EventInfo) among them.
func (g *generator) object(t reflect.Type, request bool) map[string]any {
	c := g.comments(t.PkgPath())
	names := fieldNames(t)
	for goName, name := range names {
		g.goNames[goName] = name
	}
	props := map[string]any{}
	required := []string{}
	for _, f := range reflect.VisibleFields(t) {
		if !f.IsExported() || f.Anonymous {
			continue
		}
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		owner := t
		if len(f.Index) > 1 {
			owner = t.FieldByIndex(f.Index[:len(f.Index)-1]).Type
		}
		p := map[string]any{}
		for k, v := range g.ref(f.Type, request) {
			p[k] = v
		}
		if e := f.Tag.Get("enum"); e != "" {
			p["enum"] = strings.Split(e, ",")
		}
		if d := c.fields[owner.Name()][f.Name]; d != "" {
			p["description"] = jsonNames(d, names)
		}
		if typ, ok := g.events[t]; ok && name == "type" {
			p["enum"] = []string{typ}
		}
		if t == reflect.TypeFor[api.ErrorDetail]() && name == "code" {
			p["enum"], p["description"] = errorCodeEnum()
		}
		if t == reflect.TypeFor[api.LastError]() && name == "code" {
			p["enum"], p["description"] = turnCodeEnum()
		}
		props[name] = p
		omit := strings.Contains(opts, "omitempty") || strings.Contains(opts, "omitzero")
		if request && f.Tag.Get("required") == "true" || !request && !omit {
			required = append(required, name)
		}
	}
	s := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		s["required"] = required
	}
	if d := c.types[t.Name()]; d != "" {
		s["description"] = jsonNames(d, names)
	}
	return s
}

// union is the schema named u.Name: one of types, told apart by their field u.By, whose
// value (its enum, or an event's type) says which.
func (g *generator) union(u apiUnion, types []any, request bool, doc string) map[string]any {
	if _, ok := g.schemas[u.Name]; !ok {
		var one []any
		mapping := map[string]any{}
		for _, v := range types {
			tt := reflect.TypeOf(v)
			ref := g.ref(tt, request)
			one = append(one, ref)
			var values []string
			if typ, ok := g.events[tt]; ok && u.By == "type" {
				values = []string{typ}
			} else {
				for _, f := range reflect.VisibleFields(tt) {
					if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); name == u.By {
						values = strings.Split(f.Tag.Get("enum"), ",")
					}
				}
			}
			if len(values) == 0 || values[0] == "" {
				g.t.Fatalf("union %s: %v has no value of its field %s", u.Name, tt, u.By)
			}
			for _, v := range values {
				if _, dup := mapping[v]; dup {
					g.t.Fatalf("union %s: two members have %s %q", u.Name, u.By, v)
				}
				mapping[v] = ref["$ref"]
			}
		}
		g.schemas[u.Name] = map[string]any{"description": doc, "oneOf": one,
			"discriminator": map[string]any{"propertyName": u.By, "mapping": mapping}}
	}
	return map[string]any{"$ref": "#/components/schemas/" + u.Name}
}

// unionDocs are the descriptions of the unions.
var unionDocs = map[string]string{
	"Action":       "One action on a session, told by its action field: each action takes its own fields and no other (a field another action takes is unknown_field, one it needs and lacks missing_field).",
	"ActionResult": "The answer of an action: a SubmitAnswer for a submit, an ActionAnswer for every other action.",
	"Event": "One event, told by its type field, which is also its SSE event name: the data of GET /events, and a line of myco -p --json (which has the session event and no ping). " +
		"A later myco may add types (an additive change): a client skips those it does not know.",
}

// errorCodeEnum is the code set of the error envelope, with the status and meaning of each.
func errorCodeEnum() ([]string, string) {
	var codes []string
	lines := []string{"| code | status | when |", "| --- | --- | --- |"}
	for _, c := range api.ErrorCodes() {
		if !slices.Contains(codes, c.Code) {
			codes = append(codes, c.Code)
		}
		lines = append(lines, fmt.Sprintf("| %s | %d | %s |", c.Code, c.Status, c.When))
	}
	return codes, "A stable code to branch on:\n\n" + strings.Join(lines, "\n")
}

// turnCodeEnum is the code set of last_error, the kinds of end of package sessions, with
// what each means and whether the retry action can help.
func turnCodeEnum() ([]string, string) {
	var codes []string
	lines := []string{"| code | retryable | when |", "| --- | --- | --- |"}
	for _, k := range sessions.Kinds {
		codes = append(codes, k.Code)
		lines = append(lines, fmt.Sprintf("| %s | %t | %s |", k.Code, k.Retry, k.When))
	}
	return codes, "The kind of end, a stable code to branch on (the code of the error and cancelled events too):\n\n" + strings.Join(lines, "\n") +
		"\n\nA later myco may add codes (an additive change): treat one you do not know as failed."
}

// apiDocument generates the OpenAPI document of the API.
func apiDocument(t testing.TB) []byte {
	b, _ := generate(t)
	return b
}

// generate generates the OpenAPI document, and returns with it the JSON names of the
// fields of the types it describes, by their Go names.
func generate(t testing.TB) ([]byte, map[string]string) {
	g := &generator{t: t, docs: map[string]comments{}, schemas: map[string]any{}, events: eventNames(), goNames: map[string]string{}}
	versionHeader := map[string]any{"$ref": "#/components/headers/MycoAPIVersion"}
	errorRef := map[string]any{"$ref": "#/components/responses/Error"}
	paths := map[string]any{}
	for _, op := range (&server{}).apiOps() {
		o := map[string]any{"operationId": op.ID, "summary": firstSentence(op.Summary), "description": op.Summary}
		var params []any
		for _, p := range op.Query {
			s := map[string]any{"type": p.Type}
			if p.Enum != nil {
				s["enum"] = p.Enum
			}
			if p.Type == "integer" {
				s["minimum"] = p.Min
				if p.Max > 0 {
					s["maximum"] = p.Max
				}
			}
			if p.Default != "" {
				var d any
				if json.Unmarshal([]byte(p.Default), &d) != nil || p.Type == "string" {
					d = p.Default
				}
				s["default"] = d
			}
			params = append(params, map[string]any{"name": p.Name, "in": "query", "description": p.Doc, "schema": s})
		}
		if strings.Contains(op.Path, "{id}") {
			params = append(params, map[string]any{"name": "id", "in": "path", "required": true, "description": "A session's id (YYYYMMDD-HHMMSS-xxxxxx).",
				"schema": map[string]any{"type": "string"}})
		}
		if op.ID == "streamEvents" {
			params = append(params, map[string]any{"name": "Last-Event-ID", "in": "header", "description": "The id of the last event a reconnecting client got: the stream resumes after it (before after).",
				"schema": map[string]any{"type": "string"}})
		}
		if params != nil {
			o["parameters"] = params
		}
		if len(op.Body) > 0 {
			var schema map[string]any
			if len(op.Body) == 1 {
				schema = g.ref(reflect.TypeOf(op.Body[0]), true)
			} else {
				schema = g.union(op.Union, op.Body, true, unionDocs[op.Union.Name])
			}
			o["requestBody"] = map[string]any{"required": !op.BodyOptional, "content": map[string]any{"application/json": map[string]any{"schema": schema}}}
		}
		// 405: a server that has the path but not the operation (an older one) answers it.
		responses := map[string]any{"default": errorRef, "405": map[string]any{"$ref": "#/components/responses/MethodNotAllowed"}}
		for _, st := range op.Errors {
			responses[strconv.Itoa(st)] = errorRef
			if st == http.StatusMisdirectedRequest {
				responses[strconv.Itoa(st)] = map[string]any{"$ref": "#/components/responses/Misdirected"}
			}
		}
		for _, a := range op.Answers {
			headers := map[string]any{"Myco-API-Version": versionHeader}
			for name, d := range a.Headers {
				headers[name] = map[string]any{"description": d, "schema": map[string]any{"type": "string"}}
			}
			desc := a.Doc
			if desc == "" {
				desc = http.StatusText(a.Status)
			}
			var schema map[string]any
			switch {
			case len(a.Types) == 1:
				schema = g.ref(reflect.TypeOf(a.Types[0]), false)
			case len(a.Types) > 1:
				schema = g.union(a.Union, a.Types, false, unionDocs[a.Union.Name])
			}
			media := a.Media
			if media == "" {
				media = "application/json"
			}
			m := map[string]any{}
			switch {
			case media == "text/event-stream":
				// The schema of each event's data, as OpenAI's document and others write a
				// stream (OpenAPI 3.2's itemSchema says it so): a generator makes a type of
				// each event from it.
				m["schema"] = schema
			case strings.HasPrefix(media, "text/plain"):
				m["schema"] = map[string]any{"type": "string"}
			case schema != nil:
				m["schema"] = schema
			default:
				m["schema"] = map[string]any{"type": "object"}
			}
			responses[strconv.Itoa(a.Status)] = map[string]any{"description": desc, "headers": headers, "content": map[string]any{media: m}}
		}
		o["responses"] = responses
		item, _ := paths[op.Path].(map[string]any)
		if item == nil {
			item = map[string]any{}
			paths[op.Path] = item
		}
		item[strings.ToLower(op.Method)] = o
	}
	errorContent := map[string]any{"application/json": map[string]any{"schema": g.ref(reflect.TypeFor[api.ErrorAnswer](), false)}}
	doc := map[string]any{
		"openapi": "3.1.0",
		"info": map[string]any{
			"title":       "myco JSON API",
			"version":     api.Version,
			"description": apiDescription,
		},
		"servers": []any{map[string]any{"url": "http://127.0.0.1:{port}/profiles/{profile}/api", "description": "One profile's API: the MYCO_SERVER_URL of its tools, with /api.",
			"variables": map[string]any{"port": map[string]any{"default": "8080"}, "profile": map[string]any{"default": "default"}}}},
		"paths": paths,
		// No credential where the server tells a connection's owner by its socket (it serves
		// its own user only); the token where it cannot.
		"security": []any{map[string]any{}, map[string]any{"token": []any{}}},
		"components": map[string]any{
			"schemas": g.schemas,
			"securitySchemes": map[string]any{"token": map[string]any{"type": "http", "scheme": "bearer",
				"description": "Token mode: where the server cannot tell a connection's owner by its socket (or runs with --auth token), every request carries Authorization: Bearer TOKEN. " +
					"The file MYCO_SERVER_TOKEN_FILE names holds that header line (curl -H @\"$MYCO_SERVER_TOKEN_FILE\"); a request without it is refused with token_required (403). " +
					"Otherwise no credential is needed: the server serves only its own user's connections (not_owner, 403, for another user's)."}},
			"headers": map[string]any{"MycoAPIVersion": map[string]any{"required": true, "description": "The API's version (see info.version): it changes only with a breaking change, under a new path.",
				"schema": map[string]any{"type": "string", "const": api.Version}}},
			"responses": map[string]any{
				"Error":       map[string]any{"description": "An error, in the one envelope: a stable code (see ErrorDetail) and a sentence.", "headers": map[string]any{"Myco-API-Version": versionHeader}, "content": errorContent},
				"Misdirected": map[string]any{"description": "A Host that is not the server's loopback name and port (a DNS-rebinding page): misdirected_request, before the API sees the request.", "content": errorContent},
				"NotFound":    map[string]any{"description": "A path under /api that is no endpoint: not_found.", "headers": map[string]any{"Myco-API-Version": versionHeader}, "content": errorContent},
				"MethodNotAllowed": map[string]any{"description": "A method the endpoint does not take: method_not_allowed, with Allow.", "content": errorContent,
					"headers": map[string]any{"Myco-API-Version": versionHeader, "Allow": map[string]any{"required": true, "description": "The methods the endpoint takes.", "schema": map[string]any{"type": "string"}}}},
			},
		},
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n'), g.goNames
}

func firstSentence(s string) string {
	if i := strings.Index(s, ": "); i > 0 && i < len(s)-2 && !strings.Contains(s[:i], ".") {
		return s[:i]
	}
	if i := strings.Index(s, ". "); i > 0 {
		return s[:i]
	}
	return strings.TrimSuffix(s, ".")
}

// apiDescription is the document's introduction.
const apiDescription = `The JSON API of one myco profile: agents (a parent's bash tool, with curl) create hidden child sessions, hand them work, and wait, poll or stream until it is done. The manual is docs/browser.md ("The JSON API", and the recipe under "Nested agents").

**Requests.** A body is JSON (Content-Type: application/json, UTF-8, at most 1 MiB; 32 MiB for actions, whose submit may carry attachments) with only the documented fields, spelt exactly and each once; a query parameter the endpoint does not take is refused too. Every create and action carries a request_id of the client's choosing: the same one again with the same body answers the first result and does nothing more, also across a restart; with a different body, it is refused (request_id_conflict).

**Answers.** Every answer is JSON of one fixed shape (but GET /sessions/{id}/answer, plain text, and GET /events, a stream): a list is [] when empty, never null; a field that does not apply is left out. Every answer under /api carries Myco-API-Version. An error is {"error": {"code", "message"}} with a stable code (see ErrorDetail); a path that is no endpoint answers not_found (404), a method an endpoint does not take method_not_allowed (405, with Allow), a Host that is not the server's loopback name and port misdirected_request (421), all in the same envelope.

**Paging.** The list pages with limit (100, at most 500) and cursor (next_cursor, opaque); the snapshot's messages with limit (20, at most 200) and before (next_before, a message index).

**Events.** GET /events streams every change as server-sent events: the event's name is its type, its data one JSON object, its id the cursor. The server keeps each session's last 1,024 events (deltas are joined within 40 ms before they are kept); a client that reconnects with Last-Event-ID (or after) gets exactly what it missed, or one reset event per session whose missed events are gone (then it reads the snapshot again). A ping comes after 15 s of quiet. Both answers that start work give a cursor from just before it (event_id), so that a stream opened late misses nothing.

**Versions.** info.version is the API's version: an additive change (a new endpoint, field, event type, enum value or error code) keeps it, and a client must skip what it does not know; a breaking change comes under a new path (/api/v2/). GET /version answers it with myco's version and the host protocol's.`
