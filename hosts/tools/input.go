package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// decodeInput decodes a tool input into v, rejecting unknown fields and trailing data so
// that a misspelled or unsupported field fails before anything runs. fields lists the
// accepted names for the error message; hint, when not empty, is added after an unknown
// field's message.
func decodeInput(input json.RawMessage, v any, fields []string, hint func(field string) string) error {
	if len(bytes.TrimSpace(input)) == 0 {
		input = json.RawMessage("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(input))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var typeErr *json.UnmarshalTypeError
		var syntaxErr *json.SyntaxError
		switch {
		case errors.As(err, &typeErr) && typeErr.Field != "":
			return fmt.Errorf("field %s must be %s, not %s", typeErr.Field, jsonKind(typeErr.Type.Kind().String()), typeErr.Value)
		case errors.As(err, &syntaxErr):
			return fmt.Errorf("input is not valid JSON: %w", err)
		}
		if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			msg := fmt.Sprintf("unknown field %s; the accepted fields are: %s", name, strings.Join(fields, ", "))
			if hint != nil {
				if h := hint(strings.Trim(name, `"`)); h != "" {
					msg += ". " + h
				}
			}
			return errors.New(msg)
		}
		return fmt.Errorf("decode input: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("input has data after the JSON object")
	}
	return nil
}

func jsonKind(goKind string) string {
	switch goKind {
	case "string":
		return "a string"
	case "int", "int64", "float64":
		return "a number"
	case "slice", "array":
		return "an array"
	case "bool":
		return "a boolean"
	}
	return "a " + goKind
}
