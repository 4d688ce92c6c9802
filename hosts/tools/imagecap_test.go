package tools

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"myco.dev/agent/model"
)

// TestViewImageModelLimit: view_image started with a large cap holds each call to the cap
// of the model in its ctx, whichever way the model changed.
func TestViewImageModelLimit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mid.png")
	os.WriteFile(path, append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, 292)...), 0o644) // 300 bytes -> 400 base64
	im := NewImage(ImageOptions{MaxBase64Bytes: 1000})
	small := ImageLimit{MaxBase64Bytes: 399, Model: "small"}
	big := ImageLimit{MaxBase64Bytes: 1000, Model: "big"}
	refusal := path + " is 400 bytes of base64 (about 300 bytes on disk), over the limit of the current model small: max_image_base64_bytes = 399 (399 bytes). The image was not sent to the model. Scale it down or crop it first"
	for _, tt := range []struct {
		name string
		ctx  context.Context
		want string // "" for the image
	}{
		{"no model limit", t.Context(), ""},
		{"the big model", WithImageLimit(t.Context(), big), ""},
		{"switched to the small model", WithImageLimit(t.Context(), small), refusal},
		{"switched back", WithImageLimit(t.Context(), big), ""},
		{"a model limit of 0 is none", WithImageLimit(t.Context(), ImageLimit{Model: "zero"}), ""},
		{"the host's cap is below the model's", WithImageLimit(t.Context(), ImageLimit{MaxBase64Bytes: 5000, Model: "huge"}), ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := im.Call(tt.ctx, "o1", []byte(`{"path":"`+path+`"}`))
			if tt.want == "" && (res.IsError || len(res.Images) != 1) {
				t.Errorf("view = %+v, want the image", res)
			}
			if tt.want != "" && (!res.IsError || len(res.Images) != 0 || !strings.HasPrefix(res.Text, tt.want)) {
				t.Errorf("view = %+v, want %q", res, tt.want)
			}
		})
	}
	res := NewImage(ImageOptions{MaxBase64Bytes: 399}).Call(WithImageLimit(t.Context(), big), "o1", []byte(`{"path":"`+path+`"}`))
	if !res.IsError || !strings.Contains(res.Text, "over view_image's limit here of 399 bytes of base64") {
		t.Errorf("view over the host's cap under a bigger model's = %+v, want the host's refusal", res)
	}
}

func TestCapImages(t *testing.T) {
	img := func(n int) model.Image { return model.Image{MediaType: "image/png", Data: strings.Repeat("A", n)} }
	ok := Result{Text: "x.png: image/png", Images: []model.Image{img(8), img(4)}}
	ctx := WithImageLimit(t.Context(), ImageLimit{MaxBase64Bytes: 8, Model: "m"})
	if got := CapImages(t.Context(), ok, "", "x.png"); len(got.Images) != 2 || got.IsError {
		t.Errorf("CapImages without a limit = %+v", got)
	}
	if got := CapImages(ctx, ok, "", "x.png"); len(got.Images) != 2 || got.IsError {
		t.Errorf("CapImages at the limit = %+v", got)
	}
	over := Result{Text: "x.png: image/png", Images: []model.Image{img(4), img(12)}}
	got := CapImages(ctx, over, "host devbox: ", "x.png")
	want := "host devbox: x.png (image 2 of 2) is 12 bytes of base64 (about 9 bytes on disk), over the limit of the current model m: max_image_base64_bytes = 8 (8 bytes)."
	if !got.IsError || len(got.Images) != 0 || !strings.HasPrefix(got.Text, want) {
		t.Errorf("CapImages over the limit = %+v, want %q", got, want)
	}
	if got := CapImages(ctx, Result{Images: []model.Image{img(9)}}, "", ""); !strings.HasPrefix(got.Text, "the image in this result is 9 bytes") {
		t.Errorf("CapImages of an unnamed image = %q", got.Text)
	}
}
