package mcp

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var png = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")

func TestResult(t *testing.T) {
	lim := limits{maxText: 200, maxImageBase64: 40}
	for _, tt := range []struct {
		name    string
		in      mcp.CallToolResult
		text    string // the whole text
		images  int
		isError bool
	}{
		{"texts joined", mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "a"}, &mcp.TextContent{Text: "b"}}}, "a\nb", 0, false},
		{"isError", mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "no such issue"}}, IsError: true}, "no such issue", 0, true},
		{"png", mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{Data: png, MIMEType: "image/png"}}}, "", 1, false},
		{"png called jpeg", mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{Data: png, MIMEType: "image/jpeg"}}}, "", 1, false},
		{"not an image", mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{Data: []byte("<svg/>"), MIMEType: "image/svg+xml"}}},
			"[myco: an image (image/svg+xml) was left out: it is not a png, jpeg, gif or webp image]", 0, false},
		{"image too big", mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{Data: append(png, make([]byte, 40)...), MIMEType: "image/png"}}},
			"[myco: an image (image/png) was left out: 76 bytes of base64, over the limit of 40 (max_image_base64_bytes)]", 0, false},
		{"audio", mcp.CallToolResult{Content: []mcp.Content{&mcp.AudioContent{Data: []byte("RIFF"), MIMEType: "audio/wav"}}},
			"[myco: audio (audio/wav, 4 bytes) was left out: only text and images reach the model]", 0, false},
		{"link", mcp.CallToolResult{Content: []mcp.Content{&mcp.ResourceLink{URI: "file:///x", Name: "x", MIMEType: "text/plain"}}},
			"[resource link: file:///x (x, text/plain)]", 0, false},
		{"text resource", mcp.CallToolResult{Content: []mcp.Content{&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///x", Text: "hello"}}}},
			"[resource file:///x]\nhello", 0, false},
		{"image resource", mcp.CallToolResult{Content: []mcp.Content{&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///p.png", Blob: png}}}},
			"[resource file:///p.png: the image below]", 1, false},
		{"binary resource", mcp.CallToolResult{Content: []mcp.Content{&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///z", MIMEType: "application/gzip", Blob: []byte{0x1f, 0x8b}}}}},
			"[myco: resource file:///z (application/gzip, 2 bytes) was left out: it is binary and not an image]", 0, false},
		{"structured only", mcp.CallToolResult{StructuredContent: map[string]any{"b": 1, "a": "x"}}, `{"a":"x","b":1}`, 0, false},
		{"structured with text", mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "summary"}}, StructuredContent: map[string]any{"a": 1}}, "summary", 0, false},
		{"nothing", mcp.CallToolResult{}, "(the tool returned no content)", 0, false},
		{"truncated", mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("é", 120)}}},
			strings.Repeat("é", 100) + "\n[myco: the result was truncated: 200 of 240 bytes shown, the cap of a tool result. Ask the tool for less, e.g. a smaller range or page.]", 0, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := result(&tt.in, lim)
			if got.Text != tt.text || len(got.Images) != tt.images || got.IsError != tt.isError || got.Unknown {
				t.Errorf("result(%s) = %+v, want text %q, %d images, IsError %v", tt.name, got, tt.text, tt.images, tt.isError)
			}
			for _, im := range got.Images {
				if im.MediaType != "image/png" {
					t.Errorf("image media type = %q, want the sniffed image/png", im.MediaType)
				}
			}
		})
	}
}

// A cut in the middle of a character keeps the text valid UTF-8.
func TestTruncateUTF8(t *testing.T) {
	s := truncate(strings.Repeat("é", 10), 5)
	if !strings.HasPrefix(s, "éé\n") {
		t.Errorf("truncate = %q, want two whole characters", s)
	}
}

func TestSchema(t *testing.T) {
	for _, tt := range []struct {
		in   any
		want string
	}{
		{map[string]any{"type": "object", "properties": map[string]any{"b": 1, "a": 2}}, `{"properties":{"a":2,"b":1},"type":"object"}`},
		{nil, `{"properties":{},"type":"object"}`},
		{map[string]any{"type": "string"}, `{"properties":{},"type":"object"}`},
		{json.RawMessage(`{"type":"object","required":["x"]}`), `{"required":["x"],"type":"object"}`},
	} {
		if got := string(schema(tt.in)); got != tt.want {
			t.Errorf("schema(%v) = %s, want %s", tt.in, got, tt.want)
		}
	}
}
