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
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// WriteJSON answers v as indented JSON with status, not to be cached, with <, > and & as
// they are. The indentation is
// part of the contract: an agent's shell picks top-level fields out of an answer line by
// line (docs/browser.md).
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false) // "a && b" reads so; the answer is JSON, never HTML
	enc.Encode(v)
}

// DecodeJSON reads a JSON request body into v, a pointer to a struct: Content-Type
// application/json, at most max bytes, valid UTF-8, one JSON object whose field names are
// v's exactly (encoding/json alone matches them case-insensitively, so that "Request_ID"
// would fill request_id) and appear once each (encoding/json alone keeps the last of two),
// with every field tagged required:"true" set (see [CheckRequired]). What is wrong with a
// body is an [*Error] (415, 413 or 400) that names the field.
func DecodeJSON(w http.ResponseWriter, r *http.Request, v any, max int64) error {
	body, err := ReadJSON(w, r, max)
	if err != nil {
		return err
	}
	return UnmarshalJSON(body, v)
}

// ReadJSON reads a JSON request body as [DecodeJSON] does, without decoding it: its
// Content-Type must be application/json and it may have at most max bytes.
func ReadJSON(w http.ResponseWriter, r *http.Request, max int64) ([]byte, error) {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "application/json" {
		return nil, NewError(http.StatusUnsupportedMediaType, "unsupported_media_type", "send the body as JSON with Content-Type: application/json")
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, max))
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return nil, NewError(http.StatusRequestEntityTooLarge, "too_large", fmt.Sprintf("the body is over %d bytes", max))
		}
		return nil, NewError(http.StatusBadRequest, "invalid_json", "the body could not be read: "+err.Error())
	}
	return body, nil
}

// CheckJSON checks body as [UnmarshalJSON] does before decoding, whatever its field names:
// valid UTF-8, one JSON object, no key twice in any object.
func CheckJSON(body []byte) error { return checkJSON(body, nil) }

// UnmarshalJSON decodes body, read by [ReadJSON], into v as [DecodeJSON] does.
func UnmarshalJSON(body []byte, v any) error {
	fields := fieldsOf(v)
	if err := checkJSON(body, fields); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var typ *json.UnmarshalTypeError
		switch {
		case errors.As(err, &typ):
			return NewError(http.StatusBadRequest, "invalid_field", fmt.Sprintf("field %q must be %s, not %s", typ.Field, jsonKind(typ.Type), typ.Value))
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			return NewError(http.StatusBadRequest, "unknown_field", "unknown field "+strings.TrimPrefix(err.Error(), "json: unknown field ")+" in the body")
		}
		return NewError(http.StatusBadRequest, "invalid_json", "the body is not a JSON object this endpoint takes: "+err.Error())
	}
	return CheckRequired(v)
}

// jsonKind names the JSON kind of a Go type, for an error message: "a string", "a number".
func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	}
	return "a " + t.String()
}

// CheckRequired reports the first field of the struct v points to that is tagged
// required:"true" and is empty (a zero value, or a string of white space only), as a 400
// missing_field that names it; nil when every such field is set.
func CheckRequired(v any) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.Elem().Kind() != reflect.Struct {
		return nil
	}
	rv = rv.Elem()
	for _, f := range fieldList(rv.Type()) {
		fv := rv.Field(f.index)
		if f.required && (fv.IsZero() || fv.Kind() == reflect.String && strings.TrimSpace(fv.String()) == "") {
			return MissingField(f.name)
		}
	}
	return nil
}

// MissingField is the answer to a request without a field it must have.
func MissingField(name string) *Error {
	return NewError(http.StatusBadRequest, "missing_field", "field "+strconv.Quote(name)+" is required")
}

// field is a JSON field of a request struct: its name, its index in the struct, and
// whether it is required (tagged required:"true").
type field struct {
	name     string
	index    int
	required bool
}

// fieldList returns the JSON fields of struct type t, in order.
func fieldList(t reflect.Type) []field {
	var out []field
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
		out = append(out, field{name: name, index: i, required: f.Tag.Get("required") == "true"})
	}
	return out
}

// fieldsOf returns the JSON names of the fields of the struct v points to, in order, or nil
// when v is not a pointer to a struct (then any name is let through to the decoder).
func fieldsOf(v any) []string {
	t := reflect.TypeOf(v)
	if t == nil || t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return nil
	}
	names := []string{}
	for _, f := range fieldList(t.Elem()) {
		names = append(names, f.name)
	}
	return names
}

// checkJSON checks what encoding/json lets through: body must be valid UTF-8 (the decoder
// would make U+FFFD of a bad byte, so two different ids could become one), hold exactly
// one JSON value, an object, with no key twice in any object and, when fields is not nil,
// only those keys at the top, matched exactly.
func checkJSON(body []byte, fields []string) error {
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
				if len(stack) == 1 && fields != nil && !slices.Contains(fields, key) {
					return UnknownField(key, fields)
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

// UnknownField is the answer to a body with a field that is not one of fields (in the
// order they are listed): it names the field, the one it may have meant, and the fields
// the request takes.
func UnknownField(key string, fields []string) *Error {
	msg := "unknown field " + strconv.Quote(key) + " in the body"
	for _, f := range fields {
		if strings.EqualFold(f, key) {
			msg += "; field names are case-sensitive: did you mean " + strconv.Quote(f) + "?"
		}
	}
	return NewError(http.StatusBadRequest, "unknown_field", msg+"; the fields this request takes are "+strings.Join(fields, ", "))
}

func badUTF8(field string, at int) error {
	if field == "" {
		return NewError(http.StatusBadRequest, "invalid_json", fmt.Sprintf("the body is not valid UTF-8 (byte %d)", at))
	}
	return NewError(http.StatusBadRequest, "invalid_field", fmt.Sprintf("field %q is not valid UTF-8 (byte %d of the body)", field, at))
}
