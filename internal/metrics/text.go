package metrics

import (
	"math"
	"strconv"
	"unicode/utf8"
)

// encoder appends samples in the text format.
type encoder struct {
	b        []byte
	constant []byte // the registry's constant labels, rendered
	num      []byte // scratch for a value
}

// header appends f's # HELP and # TYPE lines.
func (e *encoder) header(f *family) {
	e.b = append(e.b, "# HELP "...)
	e.b = append(e.b, f.name...)
	e.b = append(e.b, ' ')
	e.b = appendEscaped(e.b, f.help, false)
	e.b = append(e.b, "\n# TYPE "...)
	e.b = append(e.b, f.name...)
	e.b = append(e.b, ' ')
	e.b = append(e.b, f.typ...)
	e.b = append(e.b, '\n')
}

// sample appends one sample line: name and suffix, the constant labels, labels with their
// values, le when it is not "", and value. It panics when values are not one per label.
func (e *encoder) sample(name, suffix string, labels, values []string, le string, value []byte) {
	if len(values) != len(labels) {
		panic("metrics: " + name + " takes " + strconv.Itoa(len(labels)) + " label values, not " + strconv.Itoa(len(values)))
	}
	e.b = append(e.b, name...)
	e.b = append(e.b, suffix...)
	if len(e.constant) > 0 || len(labels) > 0 || le != "" {
		e.b = append(e.b, '{')
		e.b = append(e.b, e.constant...)
		sep := len(e.constant) > 0
		for i, l := range labels {
			if sep {
				e.b = append(e.b, ',')
			}
			e.b = appendLabel(e.b, l, values[i])
			sep = true
		}
		if le != "" {
			if sep {
				e.b = append(e.b, ',')
			}
			e.b = appendLabel(e.b, "le", le)
		}
		e.b = append(e.b, '}')
	}
	e.b = append(e.b, ' ')
	e.b = append(e.b, value...)
	e.b = append(e.b, '\n')
}

// histogram appends h's samples: a cumulative _bucket per upper bound and +Inf, _sum and
// _count.
func (e *encoder) histogram(name string, labels, values []string, h *Histogram) {
	cum, sum := h.snapshot()
	for i, bound := range h.bounds {
		e.sample(name, "_bucket", labels, values, formatFloat(bound), e.uint(cum[i]))
	}
	count := cum[len(cum)-1]
	e.sample(name, "_bucket", labels, values, "+Inf", e.uint(count))
	e.sample(name, "_sum", labels, values, "", e.float(sum))
	e.sample(name, "_count", labels, values, "", e.uint(count))
}

func (e *encoder) uint(v uint64) []byte {
	e.num = strconv.AppendUint(e.num[:0], v, 10)
	return e.num
}

func (e *encoder) int(v int64) []byte {
	e.num = strconv.AppendInt(e.num[:0], v, 10)
	return e.num
}

func (e *encoder) float(v float64) []byte {
	e.num = append(e.num[:0], formatFloat(v)...)
	return e.num
}

// formatFloat formats v as the text format reads it: Go's shortest representation,
// "+Inf", "-Inf" or "NaN".
func formatFloat(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case math.IsNaN(v):
		return "NaN"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// appendLabel appends name="value", the value escaped.
func appendLabel(b []byte, name, value string) []byte {
	b = append(b, name...)
	b = append(b, '=', '"')
	b = appendEscaped(b, value, true)
	return append(b, '"')
}

// appendEscaped appends s escaped as the text format wants: a backslash and a newline as
// \\ and \n, and in a label value (quoted) a double quote as \". Bytes that are not UTF-8
// become U+FFFD, since a parser refuses them.
func appendEscaped(b []byte, s string, quoted bool) []byte {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			b = utf8.AppendRune(b, utf8.RuneError)
		case r == '\\':
			b = append(b, '\\', '\\')
		case r == '\n':
			b = append(b, '\\', 'n')
		case r == '"' && quoted:
			b = append(b, '\\', '"')
		default:
			b = append(b, s[i:i+n]...)
		}
		i += n
	}
	return b
}

// validName reports whether s is a metric name: [a-zA-Z_:][a-zA-Z0-9_:]*.
func validName(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c == ':' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return s != ""
}

// validLabel reports whether s is a label name: [a-zA-Z_][a-zA-Z0-9_]*.
func validLabel(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return s != ""
}
