package web

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"
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

// DecodeJSON reads a JSON request body into v, a pointer to a struct: Content-Type
// application/json, at most max bytes, valid UTF-8, one JSON object whose field names are
// v's exactly (encoding/json alone matches them case-insensitively, so that "Request_ID"
// would fill request_id) and appear once each (encoding/json alone keeps the last of two).
// What is wrong with a body is an [*Error] (415, 413 or 400) that names the field.
func DecodeJSON(w http.ResponseWriter, r *http.Request, v any, max int64) error {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "application/json" {
		return NewError(http.StatusUnsupportedMediaType, "unsupported_media_type", "send the body as JSON with Content-Type: application/json")
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, max))
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return NewError(http.StatusRequestEntityTooLarge, "too_large", fmt.Sprintf("the body is over %d bytes", max))
		}
		return NewError(http.StatusBadRequest, "invalid_json", "the body could not be read: "+err.Error())
	}
	if err := checkJSON(body, fieldsOf(v)); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var typ *json.UnmarshalTypeError
		switch {
		case errors.As(err, &typ):
			return NewError(http.StatusBadRequest, "invalid_field", fmt.Sprintf("field %q must be a %s, not %s", typ.Field, typ.Type, typ.Value))
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			return NewError(http.StatusBadRequest, "unknown_field", "unknown field "+strings.TrimPrefix(err.Error(), "json: unknown field ")+" in the body")
		}
		return NewError(http.StatusBadRequest, "invalid_json", "the body is not a JSON object this endpoint takes: "+err.Error())
	}
	return nil
}

// fieldsOf returns the JSON names of the fields of the struct v points to, or nil when v
// is not a pointer to a struct (then any name is let through to the decoder).
func fieldsOf(v any) map[string]bool {
	t := reflect.TypeOf(v)
	if t == nil || t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return nil
	}
	t = t.Elem()
	names := map[string]bool{}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch name {
		case "-":
			continue
		case "":
			name = f.Name
		}
		names[name] = true
	}
	return names
}

// checkJSON checks what encoding/json lets through: body must be valid UTF-8 (the decoder
// would make U+FFFD of a bad byte, so two different ids could become one), hold exactly
// one JSON value, an object, with no key twice in any object and, when fields is not nil,
// only those keys at the top, matched exactly.
func checkJSON(body []byte, fields map[string]bool) error {
	bad := -1
	if !utf8.Valid(body) {
		for i := 0; i < len(body); {
			r, n := utf8.DecodeRune(body[i:])
			if r == utf8.RuneError && n <= 1 {
				bad = i
				break
			}
			i += n
		}
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	// keys holds, per open object, the keys seen and the one whose value is being read.
	type object struct {
		seen map[string]bool
		key  string
		want bool // the next string token is a key
	}
	var stack []*object
	var arrays []int // depths (len(stack)) at which arrays opened, to tell keys from values
	path := func() string {
		var parts []string
		for _, o := range stack {
			if o.key != "" {
				parts = append(parts, o.key)
			}
		}
		return strings.Join(parts, ".")
	}
	inArray := func() bool { return len(arrays) > 0 && arrays[len(arrays)-1] == len(stack) }
	first := true
	for {
		before := dec.InputOffset()
		tok, err := dec.Token()
		if err == io.EOF {
			if first {
				return NewError(http.StatusBadRequest, "invalid_json", "the body is empty; send a JSON object")
			}
			break
		}
		if err != nil {
			if bad >= 0 && int64(bad) < dec.InputOffset()+1 {
				return badUTF8(path(), bad)
			}
			var syntax *json.SyntaxError
			if errors.As(err, &syntax) {
				return NewError(http.StatusBadRequest, "invalid_json", fmt.Sprintf("the body is not valid JSON at byte %d: %v", syntax.Offset, syntax))
			}
			return NewError(http.StatusBadRequest, "invalid_json", "the body is not valid JSON: "+err.Error())
		}
		if first {
			if d, ok := tok.(json.Delim); !ok || d != '{' {
				return NewError(http.StatusBadRequest, "invalid_json", "the body must be a JSON object")
			}
			first = false
		} else if len(stack) == 0 {
			return NewError(http.StatusBadRequest, "invalid_json", "the body holds more than one JSON value")
		}
		if bad >= 0 && int64(bad) >= before && int64(bad) < dec.InputOffset() {
			name := path()
			if s, ok := tok.(string); ok && len(stack) > 0 && stack[len(stack)-1].want && !inArray() {
				name = strings.TrimPrefix(name+"."+s, ".")
			}
			return badUTF8(name, bad)
		}
		top := (*object)(nil)
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{':
				if top != nil && !inArray() {
					top.want = false
				}
				stack = append(stack, &object{seen: map[string]bool{}, want: true})
			case '}':
				stack = stack[:len(stack)-1]
				if len(stack) > 0 && !inArray() {
					stack[len(stack)-1].key, stack[len(stack)-1].want = "", true
				}
			case '[':
				if top != nil && !inArray() {
					top.want = false
				}
				arrays = append(arrays, len(stack))
			case ']':
				arrays = arrays[:len(arrays)-1]
				if top != nil && !inArray() {
					top.key, top.want = "", true
				}
			}
		default:
			if top == nil || inArray() {
				continue
			}
			if top.want {
				key, _ := t.(string)
				if top.seen[key] {
					return NewError(http.StatusBadRequest, "duplicate_field", fmt.Sprintf("field %s appears twice in the body; send it once",
						strconv.Quote(strings.TrimPrefix(path()+"."+key, "."))))
				}
				top.seen[key] = true
				if len(stack) == 1 && fields != nil && !fields[key] {
					msg := "unknown field " + strconv.Quote(key) + " in the body"
					for f := range fields {
						if strings.EqualFold(f, key) {
							msg += "; field names are case-sensitive: did you mean " + strconv.Quote(f) + "?"
						}
					}
					return NewError(http.StatusBadRequest, "unknown_field", msg)
				}
				top.key, top.want = key, false
				continue
			}
			top.key, top.want = "", true
		}
	}
	if bad >= 0 {
		return badUTF8("", bad)
	}
	return nil
}

func badUTF8(field string, at int) error {
	if field == "" {
		return NewError(http.StatusBadRequest, "invalid_json", fmt.Sprintf("the body is not valid UTF-8 (byte %d)", at))
	}
	return NewError(http.StatusBadRequest, "invalid_field", fmt.Sprintf("field %q is not valid UTF-8 (byte %d of the body)", field, at))
}
