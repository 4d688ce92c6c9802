package web

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

var errGone = errors.New("domain: gone")

// domain is a server's translation of its own errors, as handlers' sessionError is.
func domain(err error) *Error {
	if errors.Is(err, errGone) {
		return &Error{Status: http.StatusNotFound, Code: "gone", Message: "it is gone", Err: err}
	}
	return nil
}

// TestResolve: an answer in the chain wins, then the domain's, then 500 internal with
// the error as its cause; the sentence never carries the cause.
func TestResolve(t *testing.T) {
	boom := errors.New("disk on fire")
	for _, tt := range []struct {
		name    string
		err     error
		status  int
		code    string
		msg     string
		cause   error
		failure bool
	}{
		{"answer", NewError(http.StatusConflict, "busy", "it is busy"), 409, "busy", "it is busy", nil, false},
		{"wrapped answer", fmt.Errorf("submit: %w", NewError(http.StatusBadRequest, "bad", "no")), 400, "bad", "no", nil, false},
		{"domain", fmt.Errorf("load x: %w", errGone), 404, "gone", "it is gone", errGone, false},
		{"unknown", fmt.Errorf("save: %w", boom), 500, "internal", InternalMessage, boom, true},
		{"answer with a cause", &Error{Status: 500, Code: "save_failed", Message: "not saved", Err: boom}, 500, "save_failed", "not saved", boom, true},
		{"no status", &Error{Message: "odd"}, 500, "", "odd", nil, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := Resolve(tt.err, domain)
			if e.Status != tt.status || e.Code != tt.code || e.Message != tt.msg {
				t.Errorf("Resolve(%v) = %d %q %q, want %d %q %q", tt.err, e.Status, e.Code, e.Message, tt.status, tt.code, tt.msg)
			}
			if tt.cause != nil && !errors.Is(e, tt.cause) {
				t.Errorf("Resolve(%v) lost the cause %v", tt.err, tt.cause)
			}
			if e.Failed() != tt.failure {
				t.Errorf("Resolve(%v).Failed() = %v, want %v", tt.err, e.Failed(), tt.failure)
			}
			if strings.Contains(e.Message, "disk on fire") {
				t.Errorf("the sentence %q shows the cause", e.Message)
			}
		})
	}
}

// TestAnswerLogsFailuresOnce: a failure of the server leaves exactly one log line, with
// the request and the cause; an answer the server expects leaves none.
func TestAnswerLogsFailuresOnce(t *testing.T) {
	for _, tt := range []struct {
		name  string
		err   error
		lines int
	}{
		{"unexpected", errors.New("disk on fire"), 1},
		{"failure with a sentence", &Error{Status: 500, Code: "save_failed", Message: "not saved", Err: errors.New("disk on fire")}, 1},
		{"refusal", NewError(http.StatusBadRequest, "bad", "no"), 0},
		{"domain", errGone, 0},
		{"unavailable without a cause", NewError(http.StatusServiceUnavailable, "shutting_down", "bye"), 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			x := Errors{Domain: domain, Log: slog.New(slog.NewTextHandler(&buf, nil))}
			x.Answer(httptest.NewRequest("POST", "/profiles/p/api/sessions", nil), tt.err)
			got := strings.Count(buf.String(), "\n")
			if got != tt.lines {
				t.Fatalf("Answer(%v) logged %d lines, want %d:\n%s", tt.err, got, tt.lines, buf.String())
			}
			if got == 1 && (!strings.Contains(buf.String(), "path=/profiles/p/api/sessions") || !strings.Contains(buf.String(), "disk on fire")) {
				t.Errorf("the log line lacks the path or the cause: %s", buf.String())
			}
		})
	}
}

// TestAnswerNilLog: without a logger, failures go to slog.Default(), never nowhere.
func TestAnswerNilLog(t *testing.T) {
	var buf bytes.Buffer
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, nil)))
	t.Cleanup(func() { slog.SetDefault(old) })
	Errors{}.Answer(httptest.NewRequest("GET", "/x", nil), errors.New("lost"))
	if !strings.Contains(buf.String(), "lost") {
		t.Errorf("a failure without a logger was not logged to slog.Default(): %q", buf.String())
	}
}

// TestWriteError: the one envelope, indented as every JSON answer is, not cached; a code
// left empty is named for the status.
func TestWriteError(t *testing.T) {
	for _, tt := range []struct {
		e    *Error
		code string
	}{
		{NewError(http.StatusConflict, "busy", "it is busy"), "busy"},
		{&Error{Status: http.StatusNotFound, Message: "nothing here"}, "not_found"},
		{&Error{Status: http.StatusServiceUnavailable, Message: "later"}, "service_unavailable"},
	} {
		rec := httptest.NewRecorder()
		WriteError(rec, tt.e)
		if rec.Code != tt.e.Status || rec.Header().Get("Content-Type") != "application/json" || rec.Header().Get("Cache-Control") != "no-store" {
			t.Errorf("WriteError(%v): %d %v", tt.e, rec.Code, rec.Header())
		}
		want := "{\n  \"error\": {\n    \"code\": \"" + tt.code + "\",\n    \"message\": \"" + tt.e.Message + "\"\n  }\n}\n"
		if rec.Body.String() != want {
			t.Errorf("WriteError(%v) = %q, want %q", tt.e, rec.Body.String(), want)
		}
		var body ErrorBody
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || body.Error.Code != tt.code {
			t.Errorf("the envelope does not decode as ErrorBody: %v %+v", err, body)
		}
	}
}

// TestDecodeJSON: each way a body can be wrong is an answer with its stable code.
func TestDecodeJSON(t *testing.T) {
	type body struct {
		A string          `json:"a"`
		N json.RawMessage `json:"n"`
	}
	for _, tt := range []struct {
		name, ctype, body string
		status            int
		code              string
	}{
		{"ok", "application/json", `{"a":"x"}`, 0, ""},
		{"charset", "application/json; charset=utf-8", `{"a":"x"}`, 0, ""},
		{"form", "application/x-www-form-urlencoded", `a=x`, 415, "unsupported_media_type"},
		{"empty", "application/json", ``, 400, "invalid_json"},
		{"syntax", "application/json", `{"a":`, 400, "invalid_json"},
		{"two", "application/json", `{"a":"x"}{}`, 400, "invalid_json"},
		{"type", "application/json", `{"a":7}`, 400, "invalid_field"},
		{"unknown", "application/json", `{"b":1}`, 400, "unknown_field"},
		{"large", "application/json", `{"a":"` + strings.Repeat("x", 200) + `"}`, 413, "too_large"},
		{"nested", "application/json", `{"a":"x","n":[{"b":1},{"b":2}]}`, 0, ""},
		{"case", "application/json", `{"A":"x"}`, 400, "unknown_field"},
		{"duplicate", "application/json", `{"a":"x","a":"y"}`, 400, "duplicate_field"},
		{"nested duplicate", "application/json", `{"a":"x","n":{"b":1,"b":2}}`, 400, "duplicate_field"},
		{"not utf-8", "application/json", "{\"a\":\"x\xff\"}", 400, "invalid_field"},
		{"not utf-8 key", "application/json", "{\"a\":\"x\",\"\xff\":1}", 400, "invalid_field"},
		{"array", "application/json", `["a"]`, 400, "invalid_json"},
		{"two with space", "application/json", `{"a":"x"} {"a":"y"}`, 400, "invalid_json"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "/", strings.NewReader(tt.body))
			r.Header.Set("Content-Type", tt.ctype)
			var v body
			err := DecodeJSON(httptest.NewRecorder(), r, &v, 100)
			if tt.status == 0 {
				if err != nil || !strings.HasPrefix(v.A, "x") {
					t.Fatalf("DecodeJSON = %v, %+v", err, v)
				}
				return
			}
			var e *Error
			if !errors.As(err, &e) || e.Status != tt.status || e.Code != tt.code || e.Message == "" {
				t.Errorf("DecodeJSON(%q) = %v, want %d %s", tt.body, err, tt.status, tt.code)
			}
		})
	}
}

// TestDecodeJSONNamesTheField: a refused body names the field, so a client can fix it.
func TestDecodeJSONNamesTheField(t *testing.T) {
	type body struct {
		RequestID string `json:"request_id"`
		Text      string `json:"text"`
	}
	for _, tt := range []struct{ body, want string }{
		{`{"Request_ID":"a"}`, `did you mean "request_id"`},
		{`{"request_id":"a","text":"b","request_id":"c"}`, `"request_id" appears twice`},
		{"{\"request_id\":\"a\xc3\"}", `"request_id" is not valid UTF-8`},
		{"{\"text\":\"ok\",\"request_id\":\"\xed\xa0\x80\"}", `"request_id" is not valid UTF-8`},
	} {
		r := httptest.NewRequest("POST", "/", strings.NewReader(tt.body))
		r.Header.Set("Content-Type", "application/json")
		var v body
		err := DecodeJSON(httptest.NewRecorder(), r, &v, 1000)
		var e *Error
		if !errors.As(err, &e) || e.Status != 400 || !strings.Contains(e.Message, tt.want) {
			t.Errorf("DecodeJSON(%q) = %v, want a 400 saying %s", tt.body, err, tt.want)
		}
	}
}

// TestDecodeJSONRequired: a field tagged required:"true" that is missing, empty or white
// space is a 400 missing_field naming it; an unknown field's answer lists the fields.
func TestDecodeJSONRequired(t *testing.T) {
	type body struct {
		RequestID string `json:"request_id" required:"true"`
		N         int    `json:"n"`
	}
	for _, tt := range []struct{ body, code, want string }{
		{`{}`, "missing_field", `"request_id"`},
		{`{"request_id":"  "}`, "missing_field", `"request_id"`},
		{`{"request_id":"a","m":1}`, "unknown_field", "the fields this request takes are request_id, n"},
		{`{"request_id":"a","n":"x"}`, "invalid_field", `"n" must be a whole number`},
		{`{"request_id":"a"}`, "", ""},
	} {
		r := httptest.NewRequest("POST", "/", strings.NewReader(tt.body))
		r.Header.Set("Content-Type", "application/json")
		var v body
		err := DecodeJSON(httptest.NewRecorder(), r, &v, 1000)
		if tt.code == "" {
			if err != nil {
				t.Errorf("DecodeJSON(%s) = %v", tt.body, err)
			}
			continue
		}
		var e *Error
		if !errors.As(err, &e) || e.Code != tt.code || !strings.Contains(e.Message, tt.want) {
			t.Errorf("DecodeJSON(%s) = %v, want %s saying %s", tt.body, err, tt.code, tt.want)
		}
	}
}
