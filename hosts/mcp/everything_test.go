package mcp

import (
	"bytes"
	"encoding/base64"
	"slices"
	"strings"
	"testing"
	"time"

	"myco.dev/hosts/tools"
)

// TestEverything runs @modelcontextprotocol/server-everything, the protocol's reference
// server, over stdio and over streamable HTTP, and calls its tools through the Set: echo,
// the image tool, a tool that errors, and a long one cancelled by the tool timeout.
func TestEverything(t *testing.T) {
	bin := npmServer(t, "mcp-server-everything")
	t.Setenv("ANTHROPIC_API_KEY", "sk-myco-test-secret") // myco's credential, in myco's environment
	for _, tt := range []struct {
		name string
		srv  func(t *testing.T) Server
	}{
		{"stdio", func(t *testing.T) Server {
			return Server{Name: "everything", Command: bin, Args: []string{"stdio"},
				Env: map[string]string{"GZIP_ALLOWED_DOMAINS": "example.com"}}
		}},
		{"http", func(t *testing.T) Server {
			return Server{Name: "everything", URL: everythingHTTP(t)}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := tt.srv(t)
			srv.ToolTimeout = 3 * time.Second
			s := newSet(t, Options{Servers: []Server{srv}})
			s.Discover(t.Context())

			t.Run("tools", func(t *testing.T) {
				echo := tool(t, s, "mcp__everything__echo")
				spec := echo.Spec()
				if spec.Name != "mcp__everything__echo" || !strings.Contains(spec.Description, "Echoes") ||
					!bytes.Contains(spec.Schema, []byte(`"message"`)) || !bytes.Contains(spec.Schema, []byte(`"type":"object"`)) {
					t.Errorf("echo's spec = %s %q %s, want the server's description and schema", spec.Name, spec.Description, spec.Schema)
				}
				names := []string{}
				for _, tl := range s.Tools() {
					names = append(names, tl.Name())
				}
				if !slices.IsSorted(names) || !slices.Contains(names, "mcp__everything__get-tiny-image") {
					t.Errorf("Tools() = %v, want the server's tools in name order", names)
				}
			})
			t.Run("echo", func(t *testing.T) {
				wantText(t, "echo", call(t, s, "o1", "mcp__everything__echo", `{"message":"hello, MCP"}`), "Echo: hello, MCP")
			})
			t.Run("image", func(t *testing.T) {
				res := call(t, s, "o1", "mcp__everything__get-tiny-image", `{}`)
				wantText(t, "get-tiny-image", res, "Here's the image you requested:", "The image above is the MCP logo.")
				if len(res.Images) != 1 || res.Images[0].MediaType != "image/png" {
					t.Fatalf("get-tiny-image images = %+v, want one png", res.Images)
				}
				data, err := base64.StdEncoding.DecodeString(res.Images[0].Data)
				if err != nil || tools.SniffImage(data) != "image/png" {
					t.Errorf("get-tiny-image image does not decode to a png: %v", err)
				}
			})
			t.Run("image over the model's limit", func(t *testing.T) {
				ctx := tools.WithImageLimit(t.Context(), tools.ImageLimit{MaxBase64Bytes: 100, Model: "tiny-model"})
				res := tool(t, s, "mcp__everything__get-tiny-image").Call(ctx, "o1", []byte(`{}`))
				wantError(t, "get-tiny-image for a model that takes 100 bytes", res, "mcp server everything: ", "tiny-model", "max_image_base64_bytes = 100")
				if len(res.Images) != 0 {
					t.Errorf("the image over the limit was sent: %+v", res.Images)
				}
			})
			t.Run("error", func(t *testing.T) {
				// The server's own validation throws, which it answers as isError.
				res := call(t, s, "o1", "mcp__everything__gzip-file-as-resource", `{"name":"x.gz","data":"ftp://example.com/x"}`)
				wantError(t, "gzip-file-as-resource of an ftp URL", res, "Unsupported URL protocol")
				if strings.Contains(res.Text, "refused the call") {
					t.Errorf("gzip-file-as-resource = %q, want the tool's isError result, not a protocol error", res.Text)
				}
				res = call(t, s, "o1", "mcp__everything__get-sum", `{"a":"one","b":2}`)
				wantError(t, "get-sum of a string", res, "Input validation error")
			})
			t.Run("timeout", func(t *testing.T) {
				start := time.Now()
				res := call(t, s, "o1", "mcp__everything__trigger-long-running-operation", `{"duration":60,"steps":2}`)
				wantError(t, "a 60 s operation with a 3 s tool timeout", res,
					"mcp server everything: ", "did not answer within 3s (tool_timeout_secs)", "cancelled the call on the server (notifications/cancelled)")
				if d := time.Since(start); d > 10*time.Second {
					t.Errorf("the call returned after %v, want soon after the 3 s timeout", d)
				}
				// The server is still there: only the call was cancelled.
				wantText(t, "echo after the timeout", call(t, s, "o1", "mcp__everything__echo", `{"message":"still here"}`), "still here")
			})
			t.Run("structured", func(t *testing.T) {
				res := call(t, s, "o1", "mcp__everything__get-structured-content", `{"location":"New York"}`)
				wantText(t, "get-structured-content", res, "temperature")
				if n := strings.Count(res.Text, "temperature"); n != 1 {
					t.Errorf("get-structured-content = %q: the JSON is there %d times, want once (the text part, not the structured copy)", res.Text, n)
				}
			})
			if tt.name != "stdio" {
				return
			}
			t.Run("env", func(t *testing.T) {
				// The server gets PATH, HOME and LANG, and what its env names: nothing else.
				res := call(t, s, "o1", "mcp__everything__get-env", `{}`)
				wantText(t, "get-env", res, `"GZIP_ALLOWED_DOMAINS": "example.com"`, `"PATH"`)
				if strings.Contains(res.Text, "sk-myco-test-secret") {
					t.Errorf("the server got myco's credential: %s", res.Text)
				}
				for _, line := range strings.Split(res.Text, "\n") {
					k, _, ok := strings.Cut(strings.TrimSpace(line), `":`)
					if !ok {
						continue
					}
					if k = strings.TrimPrefix(k, `"`); !slices.Contains([]string{"PATH", "HOME", "LANG", "GZIP_ALLOWED_DOMAINS"}, k) {
						t.Errorf("the server's environment has %s, which no one gave it", k)
					}
				}
				res = call(t, s, "o1", "mcp__everything__gzip-file-as-resource", `{"name":"x.gz","data":"https://other.invalid/x"}`)
				wantError(t, "gzip-file-as-resource of a domain its env does not allow", res, "not in the allowed domains list")
			})
		})
	}
}

// The tool list, its order and its specs are the same for two Sets of the same server:
// the system prompt stays byte-identical between sessions.
func TestEverythingSpecsStable(t *testing.T) {
	bin := npmServer(t, "mcp-server-everything")
	var specs [2]string
	for i := range specs {
		s := newSet(t, Options{Servers: []Server{{Name: "everything", Command: bin}}})
		s.Discover(t.Context())
		var b strings.Builder
		for _, tl := range s.Tools() {
			sp := tl.Spec()
			b.WriteString(sp.Name + "\n" + sp.Description + "\n" + string(sp.Schema) + "\n")
		}
		specs[i] = b.String()
		s.Close()
	}
	if specs[0] == "" || specs[0] != specs[1] {
		t.Errorf("two Sets of the same server give different specs:\n%s\n---\n%s", specs[0], specs[1])
	}
}
