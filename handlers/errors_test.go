package handlers

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"myco.dev/api"
	"myco.dev/sessions"
	"myco.dev/static"
)

// TestOneErrorMapping: an error answers the same status on a page, in the composer and in
// the API (whose envelope adds the stable code), and a failure of the server is logged
// exactly once wherever it is answered; what the server expects is not logged.
func TestOneErrorMapping(t *testing.T) {
	for _, tt := range []struct {
		name   string
		err    error
		status int
		code   string
		logged bool
	}{
		{"unexpected", fmt.Errorf("list sessions: %w", errors.New("disk on fire")), 500, "internal", true},
		{"busy", fmt.Errorf("submit: %w", &sessions.BusyError{Session: "s1", Job: "turn"}), 409, "busy", false},
		{"no session", fmt.Errorf("load s1: %w", sessions.ErrNotFound), 404, "not_found", false},
		{"no parent", fmt.Errorf("%w: s0", sessions.ErrParentNotFound), 404, "parent_not_found", false},
		{"no file", fmt.Errorf("open a.md: %w", fs.ErrNotExist), 404, "not_found", false},
		{"unknown action", fmt.Errorf("%w \"explode\"", sessions.ErrUnknownAction), 400, "unknown_action", false},
		{"shutting down", fmt.Errorf("submit: %w", sessions.ErrShutdown), 503, "shutting_down", false},
		{"save failed", fmt.Errorf("session s1: %w: %w", sessions.ErrSaveFailed, errors.New("disk full")), 507, "save_failed", true},
		{"model gone", fmt.Errorf("submit: %w", &sessions.UnknownModelError{Session: "s1", Key: "old", Known: []string{"a", "b"}}), 409, "unknown_model", false},
		{"request id reused", &sessions.RequestConflictError{RequestID: "r", Before: "the action archive"}, 409, "request_id_conflict", false},
		{"refused", httpError(http.StatusBadRequest, "The filter must be active."), 400, "bad_request", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var logs bytes.Buffer
			s := newServer(Deps{Profile: "default", Assets: static.New("/static/"), Log: slog.New(slog.NewTextHandler(&logs, nil))})
			lines := func() int {
				n := strings.Count(logs.String(), "\n")
				if n > 0 && !strings.Contains(logs.String(), "err=") {
					t.Errorf("the log line has no cause: %s", logs.String())
				}
				logs.Reset()
				return n
			}
			want := 0
			if tt.logged {
				want = 1
			}

			page := httptest.NewRecorder()
			s.serveError(page, httptest.NewRequest("GET", "/profiles/default/s/s1/", nil), tt.err)
			if page.Code != tt.status {
				t.Errorf("page: %d, want %d", page.Code, tt.status)
			}
			if n := lines(); n != want {
				t.Errorf("page: %d log lines, want %d", n, want)
			}
			if tt.code != "save_failed" && strings.Contains(page.Body.String(), "disk") { // save_failed says why, as it always did
				t.Errorf("the page shows the cause: %s", page.Body.String())
			}

			answer := httptest.NewRecorder()
			s.api(nil, func(http.ResponseWriter, *http.Request) (any, error) { return nil, tt.err })(answer, httptest.NewRequest("GET", "/profiles/default/api/sessions", nil))
			var body api.ErrorAnswer
			if err := json.Unmarshal(answer.Body.Bytes(), &body); err != nil || answer.Code != tt.status || body.Error.Code != tt.code || body.Error.Message == "" {
				t.Errorf("API: %d %s, want %d with code %s", answer.Code, answer.Body, tt.status, tt.code)
			}
			if n := lines(); n != want {
				t.Errorf("API: %d log lines, want %d", n, want)
			}

			var status int
			var msg string
			s.refusal(httptest.NewRequest("POST", "/profiles/default/s/s1/submit", nil), tt.err, func(st int, m string) error {
				status, msg = st, m
				return nil
			})
			if status != tt.status || msg != body.Error.Message {
				t.Errorf("composer: %d %q, want %d %q as the API says", status, msg, tt.status, body.Error.Message)
			}
			if n := lines(); n != want {
				t.Errorf("composer: %d log lines, want %d", n, want)
			}
		})
	}
}

// TestNilLogIsDefault: handlers built without a logger log to slog.Default(), never
// nowhere.
func TestNilLogIsDefault(t *testing.T) {
	if s := newServer(Deps{}); s.Log != slog.Default() || s.errors.Log != slog.Default() {
		t.Errorf("Deps without a Log: the server logs to %v, want slog.Default()", s.Log)
	}
}

// TestEveryErrorCodeDocumented (issues 20, 22): every code the API can answer, in this
// package, the shared web plumbing and the server in front of the profiles, is one of
// api.ErrorCodes (the OpenAPI document's code set), and docs/browser.md lists it.
func TestEveryErrorCodeDocumented(t *testing.T) {
	doc, err := os.ReadFile("../docs/browser.md")
	if err != nil {
		t.Fatal(err)
	}
	codes := regexp.MustCompile(`(?:Code: |apiError\([^,]+, |NewError\([^,]+, )"([a-z_]+)"`)
	for _, glob := range []string{"*.go", "../internal/web/*.go", "../profiles/*.go"} {
		files, _ := filepath.Glob(glob)
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			src, _ := os.ReadFile(f)
			for _, m := range codes.FindAllStringSubmatch(string(src), -1) {
				if !strings.Contains(string(doc), "`"+m[1]+"`") {
					t.Errorf("%s answers code %s, which docs/browser.md does not list", f, m[1])
				}
				if !slices.ContainsFunc(api.ErrorCodes(), func(c api.ErrorCode) bool { return c.Code == m[1] }) {
					t.Errorf("%s answers code %s, which is not in api.ErrorCodes (the OpenAPI document's code set)", f, m[1])
				}
			}
		}
	}
}
