package handlers

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"

	"myco.dev/api"
	"myco.dev/internal/needs"
	"myco.dev/internal/openapitest"
	"myco.dev/sessions"
)

var update = flag.Bool("update", false, "rewrite openapi.json and docs/openapi.json from the API's types")

// TestOpenAPIDocument (issue 22): the OpenAPI document that the server serves
// (openapi.json) and docs/openapi.json are what the API's types and operations generate,
// so they cannot drift apart; and the document is valid OpenAPI 3.1, as a validator pinned
// in package.json says. After a change of the API, -update rewrites both.
func TestOpenAPIDocument(t *testing.T) {
	doc := apiDocument(t)
	if *update {
		for _, f := range []string{"openapi.json", "../docs/openapi.json"} {
			if err := os.WriteFile(f, doc, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, f := range []string{"openapi.json", "../docs/openapi.json"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b, doc) {
			t.Errorf("%s is not what the API's types generate: run go test ./handlers -run TestOpenAPIDocument -update", f)
		}
	}
	if !bytes.Equal(openAPIDocument, doc) && !*update {
		t.Errorf("the served document is stale: run go test ./handlers -run TestOpenAPIDocument -update")
	}
	validator, _ := filepath.Abs("../node_modules/.bin/validate-api")
	if _, err := os.Stat(validator); err != nil {
		needs.Missing(t, "the OpenAPI validator is not installed (npm ci installs it from package.json)")
	}
	f := filepath.Join(t.TempDir(), "openapi.json")
	os.WriteFile(f, doc, 0o600)
	out, err := exec.Command(validator, f).CombinedOutput()
	if err != nil || !strings.Contains(string(out), `"valid": true`) {
		t.Errorf("the OpenAPI document is not valid OpenAPI 3.1: %v\n%s", err, out)
	}
}

// TestOpenAPIRoutes: the router serves exactly the operations of the document, each with
// its query parameters and nothing else, and the error envelope with Allow for a method an
// endpoint does not take.
func TestOpenAPIRoutes(t *testing.T) {
	s := newServer(Deps{Profile: "default"})
	r := chi.NewRouter()
	r.Route("/api", s.apiRoutes)
	var routes []string
	chi.Walk(r, func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		routes = append(routes, method+" "+strings.TrimPrefix(route, "/api"))
		return nil
	})
	d, err := openapitest.Load(apiDocument(t))
	if err != nil {
		t.Fatal(err)
	}
	var ops []string
	for _, a := range d.Answers() {
		ops = append(ops, a)
	}
	var want []string
	for _, op := range s.apiOps() {
		want = append(want, op.Method+" "+op.Path)
	}
	slices.Sort(routes)
	slices.Sort(want)
	if !slices.Equal(routes, want) {
		t.Errorf("the router serves %v, the operations are %v", routes, want)
	}
	if len(ops) == 0 {
		t.Error("the document declares no answers")
	}
}

// TestAPIErrorCodesInTheDocument: the document's code set is api.ErrorCodes, and
// docs/browser.md's table lists each with its status.
func TestAPIErrorCodesInTheDocument(t *testing.T) {
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]struct {
					Enum []string `json:"enum"`
				} `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(apiDocument(t), &doc); err != nil {
		t.Fatal(err)
	}
	enum := doc.Components.Schemas["ErrorDetail"].Properties["code"].Enum
	manual, err := os.ReadFile("../docs/browser.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range api.ErrorCodes() {
		if !slices.Contains(enum, c.Code) {
			t.Errorf("code %s is not in the document's code set %v", c.Code, enum)
		}
		if row := "| `" + c.Code + "` | " + itoa(c.Status) + " |"; !strings.Contains(string(manual), row) {
			t.Errorf("docs/browser.md has no row %q", row)
		}
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// checkAPI wraps h so that every answer under /profiles/default/api is checked against the
// served OpenAPI document: a status, header or body it does not declare fails t. Event
// streams are checked for their status and headers (their events by the end-to-end tests'
// openapitest.Recorder).
func checkAPI(t testing.TB, h http.Handler) http.Handler {
	d, err := openapitest.Load(openAPIDocument)
	if err != nil {
		t.Fatal(err)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path, ok := strings.CutPrefix(r.URL.Path, "/profiles/default/api")
		if !ok {
			h.ServeHTTP(w, r)
			return
		}
		cw := &checkingWriter{ResponseWriter: w}
		h.ServeHTTP(cw, r)
		body := cw.buf.Bytes()
		if cw.Header().Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(bytes.NewReader(body))
			if err != nil {
				t.Errorf("%s %s: a gzip body that does not read: %v", r.Method, r.URL, err)
				return
			}
			body, _ = io.ReadAll(zr)
		}
		if cw.status == 0 {
			cw.status = http.StatusOK
		}
		if cw.stream {
			body = nil
		}
		if _, _, err := d.Check(r.Method, path, cw.status, cw.Header(), body); err != nil {
			t.Errorf("an answer the OpenAPI document does not declare: %v", err)
		}
	})
}

// checkingWriter keeps a copy of an answer for checkAPI.
type checkingWriter struct {
	http.ResponseWriter
	status int
	stream bool
	buf    bytes.Buffer
}

func (c *checkingWriter) WriteHeader(code int) {
	if c.status == 0 {
		c.status = code
		c.stream = strings.HasPrefix(c.Header().Get("Content-Type"), "text/event-stream")
	}
	c.ResponseWriter.WriteHeader(code)
}

func (c *checkingWriter) Write(p []byte) (int, error) {
	if c.status == 0 {
		c.WriteHeader(http.StatusOK)
	}
	if !c.stream {
		c.buf.Write(p)
	}
	return c.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the connection (flushes, deadlines).
func (c *checkingWriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }

// TestTurnCodesInTheManual: docs/browser.md's table of failures lists every kind of end of
// sessions.Kinds, with whether Retry is offered as the kind says.
func TestTurnCodesInTheManual(t *testing.T) {
	manual, err := os.ReadFile("../docs/browser.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, _ := strings.Cut(string(manual), "## When a turn fails")
	table, _, _ = strings.Cut(table, "\n## ")
	rows := map[string]string{} // code -> the row's Retry cell
	for line := range strings.SplitSeq(table, "\n") {
		cells := strings.Split(strings.Trim(line, "| "), "|")
		if !strings.HasPrefix(line, "| `") || len(cells) < 2 {
			continue
		}
		retry := strings.TrimSpace(cells[len(cells)-1])
		for code := range strings.SplitSeq(strings.TrimSpace(cells[0]), ", ") {
			rows[strings.Trim(code, "`")] = retry
		}
	}
	for _, k := range sessions.Kinds {
		want := map[bool]string{true: "yes", false: "no"}[k.Retry]
		if got, ok := rows[k.Code]; !ok || got != want {
			t.Errorf("docs/browser.md's table of failures: code %s has Retry %q, want a row with %q", k.Code, got, want)
		}
	}
	if len(rows) != len(sessions.Kinds) {
		t.Errorf("docs/browser.md's table of failures has %d codes, sessions.Kinds %d", len(rows), len(sessions.Kinds))
	}
}
