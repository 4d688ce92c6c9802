package sessions

import (
	"encoding/json"
	"testing"

	"myco.dev/agent/model"
)

// TestPreviewOf: the preview is the answer's first line, without a heading's or a quote's
// Markdown marks.
func TestPreviewOf(t *testing.T) {
	for text, want := range map[string]string{
		"## The fix\nmore": "The fix",
		"> quoted":         "quoted",
		"plain #1 line":    "plain #1 line",
	} {
		var rec struct {
			Message struct {
				Message model.Message `json:"message"`
			} `json:"message"`
		}
		rec.Message.Message = model.Message{Role: model.Assistant, Parts: []model.Part{model.TextPart(text)}}
		body, err := json.Marshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		if got := previewOf(body); got != want {
			t.Errorf("previewOf(%q) = %q, want %q", text, got, want)
		}
	}
}
