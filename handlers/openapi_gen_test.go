package handlers

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"net/http"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"myco.dev/sessions"
)

// The generator of the OpenAPI document (openapi.json): the schemas come from the Go types
// of apitypes.go by reflection, their descriptions from the types' and fields' comments,
// the paths from apiOps. It runs in tests because it reads the sources.

// sourceDirs are the directories of the packages whose types the API's answers use.
var sourceDirs = map[string]string{
	"myco.dev/handlers":     ".",
	"myco.dev/sessions":     "../sessions",
	"myco.dev/agent/model":  "../agent/model",
	"myco.dev/internal/web": "../internal/web",
}

// schemaNames renames types whose Go name is not the API's.
var schemaNames = map[reflect.Type]string{
	reflect.TypeFor[sessions.Update](): "Event",
	reflect.TypeFor[ErrorAnswer]():     "ErrorAnswer",
}

// comments are the doc comments of a package's types and their fields.
type comments struct {
	types  map[string]string            // type name -> its doc
	fields map[string]map[string]string // type name -> field name -> its doc
	consts map[string][2]string         // const name -> its value and comment
}

func readComments(t testing.TB, dir string) comments {
	t.Helper()
	c := comments{types: map[string]string{}, fields: map[string]map[string]string{}, consts: map[string][2]string{}}
	files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok {
				continue
			}
			for _, spec := range gd.Specs {
				switch sp := spec.(type) {
				case *ast.TypeSpec:
					doc := sp.Doc
					if doc == nil && len(gd.Specs) == 1 {
						doc = gd.Doc
					}
					c.types[sp.Name.Name] = text(doc)
					st, ok := sp.Type.(*ast.StructType)
					if !ok {
						continue
					}
					fs := map[string]string{}
					for _, f := range st.Fields.List {
						d := strings.TrimSpace(text(f.Doc) + " " + text(f.Comment))
						for _, n := range f.Names {
							fs[n.Name] = d
						}
					}
					c.fields[sp.Name.Name] = fs
				case *ast.ValueSpec:
					if gd.Tok != token.CONST || len(sp.Names) != 1 || len(sp.Values) != 1 {
						continue
					}
					if lit, ok := sp.Values[0].(*ast.BasicLit); ok && lit.Kind == token.STRING {
						v, _ := strconv.Unquote(lit.Value)
						c.consts[sp.Names[0].Name] = [2]string{v, strings.TrimSpace(text(sp.Doc) + " " + text(sp.Comment))}
					}
				}
			}
		}
	}
	return c
}

var docLinks = regexp.MustCompile(`\[([*A-Za-z0-9_./]+)\]`)

// text is a comment as a description: one paragraph per blank line, Go's [Links] unbracketed.
func text(g *ast.CommentGroup) string {
	if g == nil {
		return ""
	}
	var paras []string
	for p := range strings.SplitSeq(strings.TrimSpace(g.Text()), "\n\n") {
		paras = append(paras, strings.Join(strings.Fields(p), " "))
	}
	return docLinks.ReplaceAllString(strings.Join(paras, "\n\n"), "$1")
}

// generator builds the document.
type generator struct {
	t       testing.TB
	docs    map[string]comments // by package path
	schemas map[string]any
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

func schemaName(t reflect.Type) string {
	if n, ok := schemaNames[t]; ok {
		return n
	}
	return t.Name()
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
	case reflect.TypeFor[eventType]():
		return g.ref(reflect.TypeFor[sessions.Update](), false)
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

// object is the schema of struct t.
func (g *generator) object(t reflect.Type, request bool) map[string]any {
	c := g.comments(t.PkgPath())
	props := map[string]any{}
	required := []string{}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		p := map[string]any{}
		for k, v := range g.ref(f.Type, request) {
			p[k] = v
		}
		if e := f.Tag.Get("enum"); e != "" {
			p["enum"] = strings.Split(e, ",")
		}
		if d := c.fields[t.Name()][f.Name]; d != "" {
			// Go's comments start with the field's Go name; the document's with its JSON name.
			if rest, ok := strings.CutPrefix(d, f.Name+" "); ok {
				d = name + " " + rest
			}
			p["description"] = d
		}
		if t == reflect.TypeFor[sessions.Update]() && name == "type" {
			p["enum"], p["description"] = g.updateTypes()
		}
		if t == reflect.TypeFor[ErrorAnswer]().Field(0).Type && name == "code" {
			p["enum"], p["description"] = errorCodeEnum()
		}
		if t == reflect.TypeFor[LastError]() && name == "code" {
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
		s["description"] = d
	}
	return s
}

// updateTypes are the values of an event's type, from the Update constants of package
// sessions and the ping of the stream's own, with what each means.
func (g *generator) updateTypes() ([]string, string) {
	c := g.comments("myco.dev/sessions")
	var names []string
	for n := range c.consts {
		if strings.HasPrefix(n, "Update") {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	var values []string
	var lines []string
	for _, n := range names {
		v := c.consts[n]
		values = append(values, v[0])
		lines = append(lines, "- "+v[0]+": "+v[1])
	}
	return values, "What the event is. Its SSE event name is the same. The fields each type carries:\n\n" + strings.Join(lines, "\n") +
		"\n\nA later myco may add types (an additive change): skip those you do not know."
}

// errorCodeEnum is the code set of the error envelope, with the status and meaning of each.
func errorCodeEnum() ([]string, string) {
	var codes []string
	lines := []string{"| code | status | when |", "| --- | --- | --- |"}
	for _, c := range apiErrorCodes {
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
	g := &generator{t: t, docs: map[string]comments{}, schemas: map[string]any{}}
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
				var one []any
				mapping := map[string]any{}
				for _, b := range op.Body {
					tt := reflect.TypeOf(b)
					ref := g.ref(tt, true)
					one = append(one, ref)
					f, _ := tt.FieldByName("Action")
					for a := range strings.SplitSeq(f.Tag.Get("enum"), ",") {
						mapping[a] = ref["$ref"]
					}
				}
				schema = map[string]any{"oneOf": one, "discriminator": map[string]any{"propertyName": "action", "mapping": mapping}}
			}
			o["requestBody"] = map[string]any{"required": !op.BodyOptional, "content": map[string]any{"application/json": map[string]any{"schema": schema}}}
		}
		responses := map[string]any{"default": errorRef}
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
			var schemas []any
			for _, tp := range a.Types {
				schemas = append(schemas, g.ref(reflect.TypeOf(tp), false))
			}
			media := a.Media
			if media == "" {
				media = "application/json"
			}
			m := map[string]any{}
			switch {
			case media == "text/event-stream":
				m["schema"] = map[string]any{"type": "string", "description": "Server-sent events: id, event (the type) and one data line of JSON each."}
				m["x-event-data"] = map[string]any{"oneOf": schemas}
			case strings.HasPrefix(media, "text/plain"):
				m["schema"] = map[string]any{"type": "string"}
			case len(schemas) == 1:
				m["schema"] = schemas[0]
			case len(schemas) > 1:
				m["schema"] = map[string]any{"oneOf": schemas}
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
	errorContent := map[string]any{"application/json": map[string]any{"schema": g.ref(reflect.TypeFor[ErrorAnswer](), false)}}
	doc := map[string]any{
		"openapi": "3.1.0",
		"info": map[string]any{
			"title":       "myco JSON API",
			"version":     APIVersion,
			"description": apiDescription,
		},
		"servers": []any{map[string]any{"url": "http://127.0.0.1:{port}/profiles/{profile}/api", "description": "One profile's API: the MYCO_SERVER_URL of its tools, with /api.",
			"variables": map[string]any{"port": map[string]any{"default": "8080"}, "profile": map[string]any{"default": "default"}}}},
		"paths": paths,
		"components": map[string]any{
			"schemas": g.schemas,
			"headers": map[string]any{"MycoAPIVersion": map[string]any{"required": true, "description": "The API's version (see info.version): it changes only with a breaking change, under a new path.",
				"schema": map[string]any{"type": "string", "const": APIVersion}}},
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
	return append(b, '\n')
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
