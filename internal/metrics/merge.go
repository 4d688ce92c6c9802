package metrics

import (
	"bytes"
	"io"
	"strings"
)

// Merge writes parts, expositions in the text format as [Registry.WriteTo] writes them,
// to w as one: each family once, with the # HELP and # TYPE lines of the first part that
// has it and then the samples of every part, in the order the families first appear, as
// the format requires. Other comment lines come first, each once. A family whose type in
// a later part differs from the first's keeps the first's samples only, and a comment says
// so. Merge does not make samples distinct: the parts must differ in a label (a worker's
// profile) or in their families.
func Merge(w io.Writer, parts ...[]byte) error {
	type fam struct {
		help, typ []byte
		samples   [][]byte
	}
	var (
		order    []string
		families = map[string]*fam{}
		comments [][]byte
	)
	get := func(name string) *fam {
		f := families[name]
		if f == nil {
			f = &fam{}
			families[name] = f
			order = append(order, name)
		}
		return f
	}
	comment := func(line []byte) {
		for _, c := range comments {
			if bytes.Equal(c, line) {
				return
			}
		}
		comments = append(comments, line)
	}
	for _, part := range parts {
		var cur *fam
		skip := false
		for line := range bytes.SplitSeq(part, []byte("\n")) {
			switch {
			case len(bytes.TrimSpace(line)) == 0:
			case bytes.HasPrefix(line, []byte("# HELP ")):
				cur, skip = get(field(line[len("# HELP "):])), false
				if cur.help == nil {
					cur.help = line
				}
			case bytes.HasPrefix(line, []byte("# TYPE ")):
				name := field(line[len("# TYPE "):])
				cur, skip = get(name), false
				switch {
				case cur.typ == nil:
					cur.typ = line
				case !bytes.Equal(cur.typ, line):
					skip = true
					comment(AppendComment(nil, "samples of "+name+" of another type were left out: "+string(line)))
				}
			case line[0] == '#':
				comment(line)
			default:
				if cur == nil {
					cur = get(field(line))
				}
				if !skip {
					cur.samples = append(cur.samples, line)
				}
			}
		}
	}
	var b []byte
	for _, c := range comments {
		b = append(append(b, c...), '\n')
	}
	for _, name := range order {
		f := families[name]
		for _, l := range [][]byte{f.help, f.typ} {
			if l != nil {
				b = append(append(b, l...), '\n')
			}
		}
		for _, s := range f.samples {
			b = append(append(b, s...), '\n')
		}
	}
	_, err := w.Write(b)
	return err
}

// field returns the metric name at the start of s: up to a space or a brace.
func field(s []byte) string {
	if i := bytes.IndexAny(s, " {"); i >= 0 {
		s = s[:i]
	}
	return string(s)
}

// AppendComment appends text to b as a comment line of the text format, which a parser
// skips: "# text", its newlines made spaces, and kept apart from a # HELP or # TYPE line.
func AppendComment(b []byte, text string) []byte {
	text = strings.ReplaceAll(text, "\n", " ")
	if strings.HasPrefix(text, "HELP ") || strings.HasPrefix(text, "TYPE ") {
		text = "- " + text
	}
	b = append(b, "# "...)
	b = append(b, text...)
	return append(b, '\n')
}
