package tools

import (
	"context"
	"fmt"
	"slices"

	"myco.dev/agent/model"
)

// ImageLimit is the image cap of the model a tool call is made for.
type ImageLimit struct {
	// MaxBase64Bytes is the model's max_image_base64_bytes: the largest image it takes,
	// measured on the base64 encoding. 0 means no cap.
	MaxBase64Bytes int
	Model          string // the model's catalog key, for messages
}

type imageLimitKey struct{}

// WithImageLimit returns a copy of ctx under which tool calls are held to l: view_image
// refuses a larger image before reading it, and the host harness turns any image over it
// in a call's result (from a remote host, or from another tool) into an error result. The
// session runtime sets it per call from the session's current model, so a model switch
// takes effect at the next call while the hosts keep the cap they were started with (the
// largest of the catalog).
func WithImageLimit(ctx context.Context, l ImageLimit) context.Context {
	return context.WithValue(ctx, imageLimitKey{}, l)
}

// ImageLimitFrom returns the limit in ctx (see [WithImageLimit]); ok is false when there is
// none or it sets no cap.
func ImageLimitFrom(ctx context.Context) (l ImageLimit, ok bool) {
	l, ok = ctx.Value(imageLimitKey{}).(ImageLimit)
	return l, ok && l.MaxBase64Bytes > 0
}

// OverModelLimit is the error text for an image of b64 bytes of base64, named by what,
// that is over l: the sizes, the cap, the model, and what to do.
func (l ImageLimit) OverModelLimit(what string, b64 int64) string {
	model := l.Model
	if model == "" {
		model = "in use"
	}
	return fmt.Sprintf("%s is %d bytes of base64 (about %d bytes on disk), over the limit of the current model %s: max_image_base64_bytes = %d (%s). The image was not sent to the model. Scale it down or crop it first, for example with convert -resize 50%%, and view the smaller file; a model with a larger max_image_base64_bytes would take it as it is",
		what, b64, b64/4*3, model, l.MaxBase64Bytes, mib(l.MaxBase64Bytes))
}

// CapImages holds res to the image limit in ctx, if any: when an image of res is over it,
// the images are dropped and res becomes an error result that says so (prefixed by where,
// e.g. "host devbox: "). what names the call's image in the message (its path). An image
// is never dropped silently.
func CapImages(ctx context.Context, res Result, where, what string) Result {
	l, ok := ImageLimitFrom(ctx)
	if !ok {
		return res
	}
	i := slices.IndexFunc(res.Images, func(im model.Image) bool { return len(im.Data) > l.MaxBase64Bytes })
	if i < 0 {
		return res
	}
	if what == "" {
		what = "the image in this result"
	}
	if len(res.Images) > 1 {
		what = fmt.Sprintf("%s (image %d of %d)", what, i+1, len(res.Images))
	}
	return Result{Text: where + l.OverModelLimit(what, int64(len(res.Images[i].Data))), IsError: true}
}
