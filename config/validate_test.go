package config

import (
	"errors"
	"strings"
	"testing"
)

// TestLoadErrors pins one problem per case: each want is "LINE: KEY: message start"
// (or "KEY: …" when the line is unknown), after "FILE:".
func TestLoadErrors(t *testing.T) {
	const gw = "[gateways.g]\nprotocol = \"anthropic-messages\"\nbase_url = \"https://h\"\n" // lines 1-3
	const oai = "[gateways.o]\nprotocol = \"openai-completions\"\nbase_url = \"https://h\"\n"
	for _, tt := range []struct {
		name string
		src  string
		want []string
	}{
		{"syntax", "model = \n", []string{"1: "}},
		{"unknown top-level key", "modle = \"x\"\n", []string{"1: modle: unknown key"}},
		{"top-level key after a table", gw + "model = \"x\"\n", []string{"4: gateways.g.model: unknown key; model is a top-level key"}},
		{"unknown table", "[hosts.a]\nx = 1\n", []string{"1: hosts.a: unknown key"}},
		{"unknown gateway field", gw + "base_uri = \"x\"\n", []string{"4: gateways.g.base_uri: unknown key"}},
		{"unknown model field", gw + "[models.m]\ngateway = \"g\"\ncontext_window = 1\ncontext = 2\n", []string{"7: models.m.context: unknown key"}},
		{"unknown retry field", gw + "[gateways.g.retry]\njitter = 1\n", []string{"5: gateways.g.retry.jitter: unknown key"}},
		{"unknown auth field", gw + "auth = { source = \"env\", var_name = \"K\", varname = \"K\" }\n", []string{"4: gateways.g.auth.varname: unknown key"}},
		{"quoted key", gw + "[models.\"a.b\"]\ngateway = \"g\"\ncontext_window = 1\nfoo = 1\n", []string{`7: models."a.b".foo: unknown key`}},
		{"wrong type top", "max_prelude_bytes = \"big\"\n", []string{"1: max_prelude_bytes: must be an integer, not a string"}},
		{"wrong type model", gw + "[models.m]\ngateway = \"g\"\ncontext_window = 1.5\n", []string{"6: models.m.context_window: must be an integer, not a float"}},
		{"wrong type table", "gateways = 3\n", []string{"1: gateways: must be a table, not an integer"}},
		{"array of tables", "[[models]]\nx = 1\n", []string{"1: models: must be a table, not an array of tables"}},
		{"models not a table", "models = \"m\"\n", []string{"1: models: must be a table, not a string"}},
		{"retry not a table", gw + "retry = 3\n", []string{"4: gateways.g.retry: must be a table, not an integer"}},
		{"auth wrong type", gw + "auth = 3\n", []string{"4: gateways.g.auth: must be the credential as a string or a table"}},
		{"negative attach timeout", "attach_timeout_secs = -1\n", []string{"1: attach_timeout_secs: must not be negative"}},
		{"zero prelude", "max_prelude_bytes = 0\n", []string{"1: max_prelude_bytes: must be a positive integer"}},
		{"zero compaction requests", "compaction_max_requests = 0\n", []string{"1: compaction_max_requests: must be a positive integer"}},
		{"snapshots not a table", "snapshots = 1\n", []string{"1: snapshots: must be a table, not an integer"}},
		{"unknown snapshots key", "[snapshots]\nkeep = 3\n", []string{"2: snapshots.keep: unknown key"}},
		{"zero keep_turns", "[snapshots]\nkeep_turns = 0\n", []string{"2: snapshots.keep_turns: must be a positive integer"}},
		{"negative max_file_bytes", "[snapshots]\nmax_file_bytes = -1\n", []string{"2: snapshots.max_file_bytes: must be a positive integer"}},
		{"snapshots.enabled wrong type", "[snapshots]\nenabled = \"no\"\n", []string{"2: snapshots.enabled: must be a boolean, not a string"}},
		{"empty base_url", "[gateways.g]\nprotocol = \"openai-responses\"\nbase_url = \"\"\n", []string{"3: gateways.g.base_url: must not be empty"}},
		{"missing base_url", "[gateways.g]\nprotocol = \"openai-responses\"\n", []string{"1: gateways.g.base_url: must not be empty"}},
		{"base_url not http", "[gateways.g]\nprotocol = \"openai-responses\"\nbase_url = \"ftp://h\"\n", []string{`3: gateways.g.base_url: "ftp://h" is not an http or https URL`}},
		{"base_url no host", "[gateways.g]\nprotocol = \"openai-responses\"\nbase_url = \"localhost:8080\"\n", []string{`3: gateways.g.base_url: "localhost:8080" is not an http or https URL`}},
		{"unknown protocol", "[gateways.g]\nprotocol = \"openai\"\nbase_url = \"http://h\"\n", []string{`2: gateways.g.protocol: unknown protocol "openai"`}},
		{"missing protocol", "[gateways.g]\nbase_url = \"http://h\"\n", []string{"1: gateways.g.protocol: required"}},
		{"zero max_request_bytes", gw + "max_request_bytes = 0\n", []string{"4: gateways.g.max_request_bytes: must be a positive integer"}},
		{"model zero max_request_bytes", gw + "[models.m]\ngateway = \"g\"\ncontext_window = 1\nmax_request_bytes = -5\n", []string{"7: models.m.max_request_bytes: must be a positive integer, got -5"}},
		{"negative header timeout", gw + "response_header_timeout_secs = -1\n", []string{"4: gateways.g.response_header_timeout_secs: must not be negative (0 disables the timeout), got -1"}},
		{"negative idle timeout", gw + "stream_idle_timeout_secs = -300\n", []string{"4: gateways.g.stream_idle_timeout_secs: must not be negative (0 disables the timeout), got -300"}},
		{"timeout wrong type", gw + "stream_idle_timeout_secs = 1.5\n", []string{"4: gateways.g.stream_idle_timeout_secs: must be an integer, not a float"}},
		{"timeout overflows", gw + "response_header_timeout_secs = 9_300_000_000\n", []string{"4: gateways.g.response_header_timeout_secs: must be from 0 to 9223372036 seconds (0 disables the timeout), got 9300000000"}},
		{"timeout overflows negative", gw + "response_header_timeout_secs = -9_300_000_000\n", []string{"4: gateways.g.response_header_timeout_secs: must be from 0 to 9223372036 seconds"}},
		{"model negative timeout", gw + "[models.m]\ngateway = \"g\"\ncontext_window = 1\nresponse_header_timeout_secs = -2\n", []string{"7: models.m.response_header_timeout_secs: must not be negative (0 disables the timeout), got -2"}},
		{"inline model negative timeout", "[models.m]\nprotocol = \"openai-responses\"\nbase_url = \"https://h\"\ncontext_window = 1\nstream_idle_timeout_secs = -2\n", []string{"5: models.m.stream_idle_timeout_secs: must not be negative"}},
		{"max_attempts 0", gw + "[gateways.g.retry]\nmax_attempts = 0\n", []string{"5: gateways.g.retry.max_attempts: must be at least 1"}},
		{"multiplier below 1", gw + "retry = { backoff_multiplier = 0.5 }\n", []string{"4: gateways.g.retry.backoff_multiplier: must be a finite number of at least 1"}},
		{"multiplier nan", gw + "retry = { backoff_multiplier = nan }\n", []string{"4: gateways.g.retry.backoff_multiplier: must be a finite"}},
		{"negative backoff", gw + "retry = { initial_backoff_ms = -1, max_backoff_ms = -2 }\n", []string{
			"4: gateways.g.retry.initial_backoff_ms: must not be negative", "4: gateways.g.retry.max_backoff_ms: must not be negative"}},
		{"model retry checked", gw + "[models.m]\ngateway = \"g\"\ncontext_window = 1\n[models.m.retry]\nmax_attempts = 0\n", []string{"8: models.m.retry.max_attempts: must be at least 1"}},
		{"unknown auth source", gw + "auth = { source = \"vault\" }\n", []string{`4: gateways.g.auth.source: unknown auth source "vault"`}},
		{"inline as a source", gw + "auth = { source = \"inline\" }\n", []string{`4: gateways.g.auth.source: unknown auth source "inline"; write the credential itself`}},
		{"auth without source", gw + "auth = { var_name = \"K\" }\n", []string{"4: gateways.g.auth.source: missing"}},
		{"dotted auth without source", gw + "\nauth.var_name = \"K\"\n", []string{"5: gateways.g.auth.source: missing"}},
		{"env without var_name", gw + "auth = { source = \"env\" }\n", []string{"4: gateways.g.auth.var_name: required"}},
		{"var_name not a name", gw + "auth = { source = \"env\", var_name = \"A=B\" }\n", []string{`4: gateways.g.auth.var_name: invalid variable name "A=B"`}},
		{"var_name MYCO_", gw + "auth = { source = \"env\", var_name = \"MYCO_HOME\" }\n", []string{`4: gateways.g.auth.var_name: "MYCO_HOME": MYCO_ variables configure myco itself`}},
		{"file without path", gw + "[models.m]\ngateway = \"g\"\ncontext_window = 1\nauth = { source = \"file\" }\n", []string{"7: models.m.auth.path: required"}},
		{"empty inline credential", gw + "auth = \"\"\n", []string{"4: gateways.g.auth: empty credential"}},
		{"unknown gateway", gw + "[models.m]\ngateway = \"gg\"\ncontext_window = 1\n", []string{`5: models.m.gateway: unknown gateway "gg"; configured gateways: g`}},
		{"no endpoint", "[models.m]\ncontext_window = 1\n", []string{"1: models.m: no endpoint: set gateway, or set protocol and base_url"}},
		{"inline without protocol", "[models.m]\nbase_url = \"http://h\"\ncontext_window = 1\n", []string{"1: models.m.protocol: required"}},
		{"inline without base_url", "[models.m]\nprotocol = \"openai-responses\"\ncontext_window = 1\n", []string{"1: models.m.base_url: must not be empty"}},
		{"model empty base_url override", gw + "[models.m]\ngateway = \"g\"\nbase_url = \"\"\ncontext_window = 1\n", []string{"6: models.m.base_url: must not be empty"}},
		{"model bad protocol override", gw + "[models.m]\ngateway = \"g\"\nprotocol = \"x\"\ncontext_window = 1\n", []string{`6: models.m.protocol: unknown protocol "x"`}},
		{"missing context_window", gw + "[models.m]\ngateway = \"g\"\n", []string{"4: models.m.context_window: required"}},
		{"zero context_window", gw + "[models.m]\ngateway = \"g\"\ncontext_window = 0\n", []string{"6: models.m.context_window: required"}},
		{"empty api_id", gw + "[models.m]\ngateway = \"g\"\napi_id = \"\"\ncontext_window = 1\n", []string{"6: models.m.api_id: must not be empty"}},
		{"thinking effort on anthropic", gw + "[models.m]\ngateway = \"g\"\ncontext_window = 1\nthinking = \"effort\"\n", []string{`7: models.m.thinking: "effort" is not a thinking mode of anthropic-messages; use "adaptive", "budget" or "none"`}},
		{"thinking adaptive on openai", oai + "[models.m]\ngateway = \"o\"\ncontext_window = 1\nthinking = \"adaptive\"\n", []string{`7: models.m.thinking: "adaptive" is not a thinking mode of openai-completions; use "effort" or "none"`}},
		{"thinking budget on openai", oai + "[models.m]\ngateway = \"o\"\ncontext_window = 1\nthinking = \"budget\"\n", []string{`7: models.m.thinking: "budget" is not`}},
		{"zero max_output_tokens", gw + "[models.m]\ngateway = \"g\"\ncontext_window = 1\nmax_output_tokens = 0\n", []string{"7: models.m.max_output_tokens: must be a positive integer"}},
		{"zero image cap", gw + "[models.m]\ngateway = \"g\"\ncontext_window = 1\nmax_image_base64_bytes = 0\n", []string{"7: models.m.max_image_base64_bytes: must be a positive integer"}},
		{"negative truncated resumes", gw + "[models.m]\ngateway = \"g\"\ncontext_window = 1\nmax_truncated_resumes = -1\n", []string{"7: models.m.max_truncated_resumes: must not be negative"}},
		{"auto_compact_at 1", gw + "[models.m]\ngateway = \"g\"\ncontext_window = 1\nauto_compact_at = 1\n", []string{"7: models.m.auto_compact_at: must be greater than 0 and less than 1, got 1"}},
		{"auto_compact_at negative", gw + "[models.m]\ngateway = \"g\"\ncontext_window = 1\nauto_compact_at = -0.5\n", []string{"7: models.m.auto_compact_at: must be greater than 0 and less than 1"}},
		{"auto_compact_at 0", gw + "[models.m]\ngateway = \"g\"\ncontext_window = 1\nauto_compact_at = 0.0\n", []string{"7: models.m.auto_compact_at: must be greater than 0 and less than 1; leave it unset"}},
		{"negative price", gw + "prices = { input = -1, output = 2 }\n", []string{"4: gateways.g.prices.input: must be a price per million tokens, 0 or more, got -1"}},
		{"price not a number", gw + "[models.m]\ngateway = \"g\"\ncontext_window = 1\n[models.m.prices]\ninput = \"3\"\n", []string{"8: models.m.prices.input: must be a float, not a string"}},
		{"price nan", gw + "[models.m]\ngateway = \"g\"\ncontext_window = 1\nprices = { input = nan, output = 1 }\n", []string{"7: models.m.prices.input: must be a price"}},
		{"prices without output", gw + "[models.m]\ngateway = \"g\"\ncontext_window = 1\n[models.m.prices]\ninput = 3\n", []string{"7: models.m.prices: missing output: prices need at least input and output"}},
		{"unknown price field", gw + "prices = { input = 1, output = 2, cached = 3 }\n", []string{"4: gateways.g.prices.cached: unknown key"}},
		{"negative max_cost", "max_cost = -1\n", []string{"1: max_cost: must be the budget of a session tree"}},
		{"max_cost not a number", "max_cost = \"5\"\n", []string{"1: max_cost: must be a float, not a string"}},
		{"default model not configured", gw + "[models.m]\ngateway = \"g\"\ncontext_window = 1\n", nil}, // placeholder, replaced below
		{"all problems at once", "modle = 1\n" + gw + "base_uri = 1\n[models.m]\ngateway = \"nope\"\n[models.n]\ngateway = \"g\"\nthinking = \"x\"\n", []string{
			"1: modle: unknown key",
			"5: gateways.g.base_uri: unknown key",
			"6: models.m.context_window: required",
			`7: models.m.gateway: unknown gateway "nope"`,
			"8: models.n.context_window: required",
			`10: models.n.thinking: "x" is not a thinking mode`,
		}},
		{"an unknown gateway does not hide the model's own problems", gw + "[models.m]\ngateway = \"nope\"\nmax_output_tokens = 0\neffort = \"huge\"\n", []string{
			"4: models.m.context_window: required",
			`5: models.m.gateway: unknown gateway "nope"`,
			`6: models.m.max_output_tokens: must be a positive integer`,
			`7: models.m.effort: "huge" is not an effort`,
		}},
		{"effort without thinking", gw + "[models.m]\ngateway = \"g\"\ncontext_window = 1\nthinking = \"none\"\neffort = \"high\"\n", []string{
			`8: models.m.effort: an effort is sent only with thinking`,
		}},
		{"one bad entry does not hide another", gw + "[models.a]\ngateway = \"g\"\ncontext_window = \"x\"\n[models.b]\ngateway = \"g\"\ncontext_window = 1\nthinking = \"x\"\n", []string{
			"6: models.a.context_window: must be an integer",
			`10: models.b.thinking: "x" is not`,
		}},
	} {
		if tt.name == "default model not configured" {
			tt.src = "model = \"typo\"\n" + tt.src
			tt.want = []string{`1: model: unknown model "typo"; configured models: m`}
		}
		t.Run(tt.name, func(t *testing.T) {
			path := writeConfig(t, tt.src)
			c, err := Load(path, true)
			if err == nil {
				t.Fatalf("Load(%q) = %+v, want errors %q", tt.src, c, tt.want)
			}
			lines := strings.Split(err.Error(), "\n")
			if len(lines) != len(tt.want) {
				t.Errorf("Load(%q) gave %d problems, want %d:\n%v", tt.src, len(lines), len(tt.want), err)
			}
			for i, want := range tt.want {
				if i < len(lines) && !strings.HasPrefix(lines[i], path+":"+want) {
					t.Errorf("Load(%q) problem %d = %q, want %s:%s…", tt.src, i, lines[i], path, want)
				}
			}
			var e *Error
			if !errors.As(err, &e) || e.File != path {
				t.Errorf("Load(%q) = %#v, want an *Error naming the file", tt.src, err)
			}
		})
	}
}

// A model on a gateway that failed to decode is not reported again for what it would have
// inherited, and neither is a default model that failed to decode.
func TestLoadErrorsNotRepeated(t *testing.T) {
	src := "model = \"m\"\n[gateways.g]\nprotocol = 1\nbase_url = \"http://h\"\n[models.m]\ngateway = \"g\"\ncontext_window = 1\n"
	path := writeConfig(t, src)
	_, err := Load(path, true)
	want := path + ":3: gateways.g.protocol: must be a string, not an integer"
	if err == nil || err.Error() != want {
		t.Errorf("Load(%q) = %v, want only %s", src, err, want)
	}

	// A bad gateway's inherited values are reported once, at the gateway.
	for _, bad := range []struct{ protocol, baseURL, want string }{
		{"anthropic-messages", "", "3: gateways.g.base_url: must not be empty"},
		{"bogus", "http://h", `2: gateways.g.protocol: unknown protocol "bogus"`},
	} {
		src = "[gateways.g]\nprotocol = \"" + bad.protocol + "\"\nbase_url = \"" + bad.baseURL + "\"\n[models.m]\ngateway = \"g\"\ncontext_window = 1\n"
		path = writeConfig(t, src)
		_, err = Load(path, true)
		if want := path + ":" + bad.want; err == nil || !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("Load(%q) = %v, want only %s", src, err, want)
		}
	}
}

// A gateway's bad timeout is reported once, at the gateway, not again at each model
// that inherits it.
func TestLoadTimeoutErrorNotRepeated(t *testing.T) {
	src := "[gateways.g]\nprotocol = \"anthropic-messages\"\nbase_url = \"http://h\"\nstream_idle_timeout_secs = -1\n[models.m]\ngateway = \"g\"\ncontext_window = 1\n"
	path := writeConfig(t, src)
	_, err := Load(path, true)
	if want := path + ":4: gateways.g.stream_idle_timeout_secs: must not be negative"; err == nil || !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), "\n") {
		t.Errorf("Load(%q) = %v, want only %s", src, err, want)
	}
}

func TestValidate(t *testing.T) {
	c := &Config{
		File: "x.toml", MaxPreludeBytes: 1, CompactionMaxRequests: 1,
		Models: map[string]Model{"m": {Key: "m", APIID: "m", Protocol: ProtocolOpenAIResponses, BaseURL: "https://h",
			Retry: DefaultRetry(), MaxRequestBytes: 1, ContextWindow: 1, Thinking: ThinkingEffort,
			MaxOutputTokens: 1, MaxImageBase64Bytes: 1}},
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("Validate(valid) = %v", err)
	}
	m := c.Models["m"]
	m.Thinking = ThinkingBudget
	c.Models["m"] = m
	if err := c.Validate(); err == nil || !strings.HasPrefix(err.Error(), "x.toml: models.m.thinking: ") {
		t.Errorf("Validate(budget on responses) = %v, want x.toml: models.m.thinking: …", err)
	}
}
