package handlers

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// The descriptions of the OpenAPI document: the doc comments of package api's types and
// fields, read from its sources, with the fields' JSON names for their Go names.

// comments are the doc comments of a package's types and their fields.
type comments struct {
	types  map[string]string            // type name -> its doc
	fields map[string]map[string]string // type name -> field name -> its doc
}

func readComments(t testing.TB, dir string) comments {
	t.Helper()
	c := comments{types: map[string]string{}, fields: map[string]map[string]string{}}
	files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok {
				continue
			}
			for _, spec := range gd.Specs {
				if sp, ok := spec.(*ast.TypeSpec); ok {
					doc := sp.Doc
					if doc == nil && len(gd.Specs) == 1 {
						doc = gd.Doc
					}
					c.types[sp.Name.Name] = text(doc)
					st, ok := sp.Type.(*ast.StructType)
					if !ok {
						continue
					}
					fs := map[string]string{}
					for _, f := range st.Fields.List {
						d := strings.TrimSpace(text(f.Doc) + " " + text(f.Comment))
						for _, n := range f.Names {
							fs[n.Name] = d
						}
					}
					c.fields[sp.Name.Name] = fs
				}
			}
		}
	}
	return c
}

var docLinks = regexp.MustCompile(`\[([*A-Za-z0-9_./]+)\]`)

// text is a comment as a description: one paragraph per blank line, Go's [Links] unbracketed.
func text(g *ast.CommentGroup) string {
	if g == nil {
		return ""
	}
	var paras []string
	for p := range strings.SplitSeq(strings.TrimSpace(g.Text()), "\n\n") {
		paras = append(paras, strings.Join(strings.Fields(p), " "))
	}
	return docLinks.ReplaceAllString(strings.Join(paras, "\n\n"), "$1")
}

// fieldNames maps the Go names of struct t's fields (those of embedded structs included)
// to their JSON names.
func fieldNames(t reflect.Type) map[string]string {
	m := map[string]string{}
	for _, f := range reflect.VisibleFields(t) {
		if !f.IsExported() || f.Anonymous {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name != "" && name != "-" {
			m[f.Name] = name
		}
	}
	return m
}

// jsonNames writes the Go names of fields in a description as their JSON names:
// "LastTurn, LastError and Answer" becomes "last_turn, last_error and answer".
func jsonNames(d string, names map[string]string) string {
	return goWord.ReplaceAllStringFunc(d, func(w string) string {
		if n, ok := names[w]; ok {
			return n
		}
		return w
	})
}

var goWord = regexp.MustCompile(`\b[A-Z][A-Za-z0-9]*\b`)
