package hosts

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"myco.dev/agent/model"
	"myco.dev/hosts/tools"
)

// echoTool records the owner and input of each call.
type echoTool struct {
	name string
	got  []string
}

func (e *echoTool) Name() string { return e.name }
func (e *echoTool) Spec() model.ToolSpec {
	return model.ToolSpec{Name: e.name, Schema: json.RawMessage(`{"type":"object","properties":{"command":{"type":"string"}},"additionalProperties":false}`)}
}
func (e *echoTool) Call(ctx context.Context, owner string, in json.RawMessage) tools.Result {
	e.got = append(e.got, owner+" "+string(in))
	return tools.Result{Text: "ok"}
}

func TestHarnessRouting(t *testing.T) {
	bash := &echoTool{name: "bash"}
	meta := &echoTool{name: "session_meta"}
	h, err := NewHarness(Options{Tools: []tools.Tool{bash}, Root: []tools.Tool{meta}})
	if err != nil {
		t.Fatal(err)
	}
	ex := h.For("rt1")
	tests := []struct {
		name, tool, input string
		wantErr           string
		wantGot           string
	}{
		{"omitted host is local", "bash", `{"command":"ls"}`, "", `rt1 {"command":"ls"}`},
		{"explicit local, field stripped", "bash", `{"command":"ls","host":"local"}`, "", `rt1 {"command":"ls"}`},
		{"unknown host", "bash", `{"command":"ls","host":"devbox"}`, `unknown host "devbox"`, ""},
		{"host not a string", "bash", `{"command":"ls","host":3}`, "host must be a string", ""},
		{"not an object", "bash", `[1]`, "not a JSON object", ""},
		{"unknown tool", "grep", `{}`, `unknown tool "grep"`, ""},
		{"root tool on local", "session_meta", `{"action":"get"}`, "", `rt1 {"action":"get"}`},
		{"root tool on a remote", "session_meta", `{"action":"get","host":"devbox"}`, "root-only", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bash.got, meta.got = nil, nil
			res := ex.Call(t.Context(), model.ToolCall{ID: "c1", Name: tt.tool, Input: json.RawMessage(tt.input)})
			if res.CallID != "c1" {
				t.Errorf("CallID = %q", res.CallID)
			}
			if tt.wantErr != "" {
				if !res.IsError || !strings.Contains(res.Text, tt.wantErr) {
					t.Fatalf("result = %+v, want an error containing %q", res, tt.wantErr)
				}
				if len(bash.got)+len(meta.got) != 0 {
					t.Errorf("a rejected call reached a tool: %v %v", bash.got, meta.got)
				}
				return
			}
			got := append(bash.got, meta.got...)
			if res.IsError || len(got) != 1 || got[0] != tt.wantGot {
				t.Fatalf("result %+v, tool saw %v, want %q", res, got, tt.wantGot)
			}
		})
	}
}

func TestHarnessSpecsAddHostField(t *testing.T) {
	h, err := NewHarness(Options{Tools: []tools.Tool{&echoTool{name: "bash"}}, Root: []tools.Tool{&echoTool{name: "prelude"}}})
	if err != nil {
		t.Fatal(err)
	}
	specs := h.Specs()
	if len(specs) != 2 {
		t.Fatalf("Specs = %d, want 2", len(specs))
	}
	if !strings.Contains(string(specs[0].Schema), `"host"`) || !strings.Contains(string(specs[0].Schema), `"local"`) {
		t.Errorf("routed schema lacks the host field: %s", specs[0].Schema)
	}
	if strings.Contains(string(specs[1].Schema), `"host"`) {
		t.Errorf("root-only schema has a host field: %s", specs[1].Schema)
	}
}

func TestHarnessDuplicateTool(t *testing.T) {
	_, err := NewHarness(Options{Tools: []tools.Tool{&echoTool{name: "bash"}}, Root: []tools.Tool{&echoTool{name: "bash"}}})
	if err == nil {
		t.Fatal("NewHarness accepted two tools named bash")
	}
}
