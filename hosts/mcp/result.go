package mcp

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"myco.dev/agent/model"
	"myco.dev/hosts/tools"
)

// limits are the caps a call's result is held to.
type limits struct {
	maxText        int // bytes of text; more is truncated with a note
	maxImageBase64 int // bytes of base64 per image; a larger one is left out with a note
}

// result turns what a server answered into the result the model sees: the text parts,
// joined by newlines; each image that is a png, jpeg, gif or webp within the cap (others
// become a note saying why they were left out); resources and links as text; structured
// content as JSON text when the server sent no text (servers are asked to send its JSON
// as text too, so it is not said twice). isError becomes IsError.
func result(r *mcp.CallToolResult, lim limits) tools.Result {
	var parts []string
	var images []model.Image
	text := false
	for _, c := range r.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			parts = append(parts, c.Text)
			text = true
		case *mcp.ImageContent:
			if im, note := image(c.Data, c.MIMEType, "an image", lim); note != "" {
				parts = append(parts, note)
			} else {
				images = append(images, im)
			}
		case *mcp.AudioContent:
			parts = append(parts, fmt.Sprintf("[myco: audio (%s, %d bytes) was left out: only text and images reach the model]", orUnknown(c.MIMEType), len(c.Data)))
		case *mcp.ResourceLink:
			parts = append(parts, fmt.Sprintf("[resource link: %s%s]", c.URI, describeResource(c.Name, c.MIMEType, c.Description)))
		case *mcp.EmbeddedResource:
			if c.Resource == nil {
				continue
			}
			rc := c.Resource
			switch {
			case rc.Blob == nil:
				parts = append(parts, fmt.Sprintf("[resource %s%s]\n%s", rc.URI, describeResource("", rc.MIMEType, ""), rc.Text))
				text = true
			case tools.SniffImage(rc.Blob) != "":
				if im, note := image(rc.Blob, rc.MIMEType, "the image of resource "+rc.URI, lim); note != "" {
					parts = append(parts, note)
				} else {
					parts = append(parts, fmt.Sprintf("[resource %s: the image below]", rc.URI))
					images = append(images, im)
				}
			default:
				parts = append(parts, fmt.Sprintf("[myco: resource %s (%s, %d bytes) was left out: it is binary and not an image]", rc.URI, orUnknown(rc.MIMEType), len(rc.Blob)))
			}
		default:
			parts = append(parts, fmt.Sprintf("[myco: content of type %T was left out]", c))
		}
	}
	if !text && r.StructuredContent != nil {
		if b, err := json.Marshal(r.StructuredContent); err == nil {
			parts = append(parts, string(b))
		}
	}
	out := tools.Result{Text: strings.Join(parts, "\n"), Images: images, IsError: r.IsError}
	if out.Text == "" && len(images) == 0 {
		out.Text = "(the tool returned no content)"
	}
	out.Text = truncate(out.Text, lim.maxText)
	return out
}

// image checks data, an image the server called mimeType, as view_image checks a file:
// the format by its magic number and the size against the cap. It returns the image, or a
// note saying why it was left out.
func image(data []byte, mimeType, what string, lim limits) (model.Image, string) {
	mt := tools.SniffImage(data)
	if mt == "" {
		return model.Image{}, fmt.Sprintf("[myco: %s (%s) was left out: it is not a png, jpeg, gif or webp image]", what, orUnknown(mimeType))
	}
	if n := tools.Base64Len(int64(len(data))); n > int64(lim.maxImageBase64) {
		return model.Image{}, fmt.Sprintf("[myco: %s (%s) was left out: %d bytes of base64, over the limit of %d (max_image_base64_bytes)]", what, mt, n, lim.maxImageBase64)
	}
	return model.Image{MediaType: mt, Data: base64.StdEncoding.EncodeToString(data)}, ""
}

// truncate cuts s to at most max bytes, at a UTF-8 boundary, and says so.
func truncate(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("\n[myco: the result was truncated: %d of %d bytes shown, the cap of a tool result. Ask the tool for less, e.g. a smaller range or page.]", cut, len(s))
}

func describeResource(name, mimeType, description string) string {
	var s []string
	for _, x := range []string{name, mimeType, description} {
		if x != "" {
			s = append(s, x)
		}
	}
	if len(s) == 0 {
		return ""
	}
	return " (" + strings.Join(s, ", ") + ")"
}

func orUnknown(mimeType string) string {
	if mimeType == "" {
		return "no media type"
	}
	return mimeType
}
