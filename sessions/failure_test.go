package sessions

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"myco.dev/agent/model"
)

// TestDescribe: each kind of failure of a request to a model is told by its kind, in words
// that name the gateway and the config keys to check (never the credential), with the
// technical chain apart in the detail; Retry is offered where sending again can help.
func TestDescribe(t *testing.T) {
	gw := endpointAt{Endpoint: Endpoint{Gateway: "anthropic", BaseURL: "https://gw.example/v1", BaseURLOf: "gateway anthropic",
		AuthOf: "gateway anthropic", AuthSource: "env", AuthName: "ANTHROPIC_API_KEY"}, model: "sonnet", apiModel: "claude-sonnet-4"}
	at := func(err error) error { return fmt.Errorf("model step 1: %w", &endpointError{at: gw, err: err}) }
	refused := &url.Error{Op: "Post", URL: "https://gw.example/v1/messages", Err: &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}}
	for _, tt := range []struct {
		name   string
		err    error
		code   string
		words  []string // in the message
		detail string   // in the detail
		retry  bool
	}{
		{"401", at(&model.ProviderError{Status: 401, Type: "authentication_error", Message: "invalid x-api-key"}), "auth_failed",
			[]string{"The gateway anthropic refused the credential (401 Unauthorized)", "Check `auth` of gateway anthropic in config.toml", "environment variable ANTHROPIC_API_KEY"}, "invalid x-api-key", false},
		{"403", at(&model.ProviderError{Status: 403, Type: "permission_error", Message: "no access"}), "auth_failed",
			[]string{"refused the credential (403 Forbidden): the key may not be allowed this model"}, "no access", false},
		{"credential missing", at(&model.CredentialError{Err: errors.New("environment variable ANTHROPIC_API_KEY is not set")}), "credential_missing",
			[]string{"The credential for the gateway anthropic could not be read: environment variable ANTHROPIC_API_KEY is not set", "Set ANTHROPIC_API_KEY", "`auth` of gateway anthropic"}, "", false},
		{"404", at(&model.ProviderError{Status: 404, Type: "not_found_error", Message: "model: claude-sonnet-4"}), "not_found",
			[]string{"answered 404 Not Found", `"claude-sonnet-4"`, "`api_id` of model sonnet", "`base_url` of gateway anthropic (https://gw.example/v1)"}, "not_found_error", false},
		{"429 after retries", at(&model.ProviderError{Status: 429, Type: "rate_limit_error", Message: "slow down", Attempts: 3}), "rate_limited",
			[]string{"429 Too Many Requests", "rate limited, also after 3 attempts", "Wait a minute"}, "slow down", true},
		{"529 after retries", at(&model.ProviderError{Status: 529, Type: "overloaded_error", Message: "Overloaded", Attempts: 2}), "overloaded",
			[]string{"The gateway anthropic is overloaded (529 Overloaded), also after 2 attempts", "Try again in a few minutes"}, "Overloaded", true},
		{"connection refused", at(&model.ProviderError{Retryable: true, Err: refused, Attempts: 3}), "unreachable",
			[]string{"The gateway anthropic could not be reached at https://gw.example/v1 (connection refused), also after 3 attempts", "`base_url` of gateway anthropic"}, "connection refused", true},
		{"mid-stream error", at(&model.ProviderError{MidStream: true, Type: "overloaded_error", Message: "Overloaded"}), "stream_broken",
			[]string{"The model's answer broke off", "(overloaded_error)"}, "Overloaded", true},
		{"truncated stream", fmt.Errorf("model step 1: %w", model.ErrTruncatedStream), "stream_broken", []string{"broke off", "ended before the answer was complete"}, "ended before", true},
		{"undecodable event", at(&model.EventError{Protocol: "anthropic-messages", N: 4, Offset: 613, Err: errors.New("unexpected end of JSON input")}), "stream_broken",
			[]string{"broke off", "sent an event myco could not read", "none of its tool calls ran"}, "event 4", true},
		{"silent stream", at(&model.TimeoutError{Limit: 2 * time.Minute}), "stream_broken", []string{"was silent for 2m0s", "stream_idle_timeout_secs of gateway anthropic"}, "silent", true},
		{"500", at(&model.ProviderError{Status: 500, Type: "api_error", Message: "boom", Attempts: 3}), "model_error",
			[]string{"The gateway anthropic failed (500 Internal Server Error), also after 3 attempts"}, "boom", true},
		{"400", at(&model.ProviderError{Status: 400, Type: "invalid_request_error", Message: "bad"}), "rejected",
			[]string{"refused the request as invalid (400 Bad Request), so the turn was rewound"}, "bad", true},
		{"no endpoint known", &model.ProviderError{Status: 401, Message: "nope"}, "auth_failed",
			[]string{"The model endpoint refused the credential", "`auth` of the model's gateway"}, "nope", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := Describe(tt.err)
			if f.Code != tt.code {
				t.Fatalf("Describe(%v).Code = %q, want %q", tt.err, f.Code, tt.code)
			}
			for _, w := range tt.words {
				if !strings.Contains(f.Message, w) {
					t.Errorf("Describe(%v).Message = %q, want it to say %q", tt.err, f.Message, w)
				}
			}
			if !strings.Contains(f.Detail, tt.detail) {
				t.Errorf("Describe(%v).Detail = %q, want it to hold %q", tt.err, f.Detail, tt.detail)
			}
			if Retryable(f.Code) != tt.retry {
				t.Errorf("Retryable(%q) = %v, want %v", f.Code, Retryable(f.Code), tt.retry)
			}
		})
	}
}

// TestDescribeHostileGateway: what a gateway sends is bounded in the detail (each front end
// escapes it as it writes it), and its error type is named in the words only when it is a
// plain identifier.
func TestDescribeHostileGateway(t *testing.T) {
	long := "\x1b]0;pwned\x07" + strings.Repeat("é", 5000)
	f := Describe(&model.ProviderError{MidStream: true, Type: "<script>alert(1)</script>", Message: long})
	if f.Code != "stream_broken" || strings.Contains(f.Message, "script") {
		t.Errorf("Describe = %+v, want stream_broken without the gateway's type in the words", f)
	}
	if len(f.Detail) > maxDetail+len("…") || !strings.HasSuffix(f.Detail, "…") || !utf8.ValidString(f.Detail) {
		t.Errorf("the detail is %d bytes, want at most %d, cut on a rune boundary", len(f.Detail), maxDetail)
	}
}

// TestKindsAreUnique: every code names one kind.
func TestKindsAreUnique(t *testing.T) {
	seen := map[string]bool{}
	for _, k := range Kinds {
		if seen[k.Code] || k.When == "" {
			t.Errorf("kind %q is listed twice, or says nothing of when it happens", k.Code)
		}
		seen[k.Code] = true
	}
}

// TestLegacyTurnEnd: a failed turn saved before failures were told by kind kept the
// technical chain as its words; read now, that is its detail under plain words.
func TestLegacyTurnEnd(t *testing.T) {
	rec := &turnRec{Status: TurnFailed, Code: "model_error", Error: "model endpoint returned 500 (api_error): boom"}
	e := rec.end(3)
	if e.Detail != rec.Error || !strings.Contains(e.Error, "The model endpoint failed") || e.Code != "model_error" || e.After != 3 {
		t.Errorf("legacy end = %+v, want the chain as the detail under plain words", e)
	}
	rec = &turnRec{Status: TurnFailed, Code: "auth_failed", Error: "words", Detail: "chain"}
	if e := rec.end(1); e.Error != "words" || e.Detail != "chain" {
		t.Errorf("a current end = %+v, want it as saved", e)
	}
}
