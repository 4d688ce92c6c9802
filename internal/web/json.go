package web

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
)

// WriteJSON answers v as indented JSON with status, not to be cached. The indentation is
// part of the contract: an agent's shell picks top-level fields out of an answer line by
// line (docs/browser.md).
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(v)
}

// DecodeJSON reads a JSON request body into v: Content-Type application/json, at most max
// bytes, one value, and no field v does not have. What is wrong with a body is an [*Error]
// (415, 413 or 400) that says so.
func DecodeJSON(w http.ResponseWriter, r *http.Request, v any, max int64) error {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "application/json" {
		return NewError(http.StatusUnsupportedMediaType, "unsupported_media_type", "send the body as JSON with Content-Type: application/json")
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, max))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var tooBig *http.MaxBytesError
		var syntax *json.SyntaxError
		var typ *json.UnmarshalTypeError
		switch {
		case errors.As(err, &tooBig):
			return NewError(http.StatusRequestEntityTooLarge, "too_large", fmt.Sprintf("the body is over %d bytes", max))
		case errors.As(err, &syntax):
			return NewError(http.StatusBadRequest, "invalid_json", fmt.Sprintf("the body is not valid JSON at byte %d: %v", syntax.Offset, syntax))
		case errors.As(err, &typ):
			return NewError(http.StatusBadRequest, "invalid_field", fmt.Sprintf("field %q must be a %s, not %s", typ.Field, typ.Type, typ.Value))
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			return NewError(http.StatusBadRequest, "unknown_field", "unknown field "+strings.TrimPrefix(err.Error(), "json: unknown field ")+" in the body")
		case errors.Is(err, io.EOF):
			return NewError(http.StatusBadRequest, "invalid_json", "the body is empty; send a JSON object")
		}
		return NewError(http.StatusBadRequest, "invalid_json", "the body is not a JSON object this endpoint takes: "+err.Error())
	}
	if dec.More() {
		return NewError(http.StatusBadRequest, "invalid_json", "the body holds more than one JSON value")
	}
	return nil
}
