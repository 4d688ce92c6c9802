package docs

import (
	"bufio"
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
)

// TestTour checks the code tour, dev/tour.md, against the code: every `file.go:Func`,
// `file.go:Type.Method`, `file_test.go:TestName`, `file.js:name` and `file.templ:Name` it
// names must be there, and every step must name a place in the code and a test. A
// renamed or removed function fails it, naming the reference.
func TestTour(t *testing.T) {
	md, err := os.ReadFile("dev/tour.md")
	if err != nil {
		t.Fatal(err)
	}
	refs, problems := checkTour(os.DirFS(".."), md)
	for _, p := range problems {
		t.Error(p)
	}
	if refs < 100 {
		t.Errorf("dev/tour.md: %d references found, want the tour's hundred and more: is the reference syntax still `path/file.go:Name`?", refs)
	}
}

// TestTourChecker runs the checker on a small tree: good references pass, and each kind of
// bad one (a renamed function, a method on the wrong type, a missing file, a helper named
// as a test, a JavaScript or templ name that is not there, a malformed reference, a code
// span broken across lines, a step without a test or without code) is reported naming it;
// and the good tour fails once the function it names is renamed.
func TestTourChecker(t *testing.T) {
	tree := fstest.MapFS{
		"a/a.go":      {Data: []byte("package a\n\ntype T struct{}\n\ntype G[K any] struct{}\n\nfunc F() {}\n\nfunc (t *T) M() {}\n\nfunc (g G[K]) N() {}\n")},
		"a/a_test.go": {Data: []byte("package a\n\nimport \"testing\"\n\nfunc TestF(t *testing.T) {}\n\nfunc helper() {}\n")},
		"static/x.js": {Data: []byte("(() => {\n  const bar = (x) => x;\n})();\nfunction foo() {}\n")},
		"v/c.templ":   {Data: []byte("package v\n\ntempl Card(n int) {\n\t<p>{ n }</p>\n}\n")},
	}
	step := func(refs ...string) string {
		return "# Tour\n\n1. **A step.** What happens.\n   Code: `" + strings.Join(refs, "`, `") + "`.\n"
	}
	good := step("a/a.go:F", "a/a.go:T.M", "a/a.go:G.N", "static/x.js:foo", "static/x.js:bar", "v/c.templ:Card", "a/a_test.go:TestF")
	for _, tt := range []struct {
		name string
		md   string
		want string // a problem that names the reference; "" for none
	}{
		{"good", good, ""},
		{"prose outside the steps", "Intro: `a/a.go:F`.\n\n" + good, ""},
		{"a function that is not there", step("a/a.go:Gone", "a/a_test.go:TestF"), "`a/a.go:Gone`: a/a.go has no function Gone"},
		{"a method on another type", step("a/a.go:G.M", "a/a_test.go:TestF"), "`a/a.go:G.M`: a/a.go has no method G.M"},
		{"a method named as a function", step("a/a.go:M", "a/a_test.go:TestF"), "`a/a.go:M`: a/a.go has no function M"},
		{"a missing file", step("a/b.go:F", "a/a_test.go:TestF"), "`a/b.go:F`: open a/b.go"},
		{"a path out of the tree", step("../a.go:F", "a/a_test.go:TestF"), "`../a.go:F`: not a path inside the repository"},
		{"a test that is not there", step("a/a.go:F", "a/a_test.go:TestGone"), "`a/a_test.go:TestGone`: a/a_test.go has no test TestGone"},
		{"a helper named as a test", step("a/a.go:F", "a/a_test.go:helper"), "`a/a_test.go:helper`: a/a_test.go has no test helper"},
		{"a JavaScript name that is not there", step("static/x.js:baz", "a/a_test.go:TestF"), "`static/x.js:baz`: static/x.js defines no function baz"},
		{"a JavaScript method", step("static/x.js:a.b", "a/a_test.go:TestF"), "`static/x.js:a.b`: a .js or .templ reference names a function"},
		{"a component that is not there", step("v/c.templ:Table", "a/a_test.go:TestF"), "`v/c.templ:Table`: v/c.templ defines no component Table"},
		{"a malformed reference", step("a/a.go:F()", "a/a_test.go:TestF"), "`a/a.go:F()`: not a reference"},
		{"a step without a test", step("a/a.go:F"), "tour.md:3: the step names no test"},
		{"a step without code", step("a/a_test.go:TestF"), "tour.md:3: the step names no place in the code"},
		{"a reference broken across lines", strings.Replace(good, "`a/a.go:T.M`", "`a/a.go:\n   T.M`", 1), "tour.md:4: a code span breaks across lines"},
		{"a fenced block is not read", good + "\n```\n`a/a.go:Gone` and `\n```\n", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, problems := checkTour(tree, []byte(tt.md))
			if tt.want == "" {
				if len(problems) > 0 {
					t.Errorf("checkTour = %q, want no problem", problems)
				}
				return
			}
			if !slices.ContainsFunc(problems, func(p string) bool { return strings.Contains(p, tt.want) }) {
				t.Errorf("checkTour = %q, want a problem with %q", problems, tt.want)
			}
		})
	}

	// The same tour after a rename in the code: the reference to the old name fails.
	renamed := fstest.MapFS{}
	for name, f := range tree {
		renamed[name] = f
	}
	renamed["a/a.go"] = &fstest.MapFile{Data: bytes.Replace(tree["a/a.go"].Data, []byte("func F()"), []byte("func Renamed()"), 1)}
	if _, problems := checkTour(renamed, []byte(good)); len(problems) != 1 || !strings.Contains(problems[0], "`a/a.go:F`") {
		t.Errorf("after renaming F, checkTour = %q, want the reference to F reported", problems)
	}
}

// A reference is `path:Name` or `path:Type.Method` in backticks, path a file of the
// repository ending in .go, .js or .templ. A backticked span that has such a file and a
// colon but is not that is reported as malformed rather than skipped.
var (
	codeSpan  = regexp.MustCompile("`([^`\n]+)`")
	candidate = regexp.MustCompile(`\.(go|js|templ):`)
	reference = regexp.MustCompile(`^([A-Za-z0-9_./-]+\.(?:go|js|templ)):([A-Za-z_$][A-Za-z0-9_$]*)(?:\.([A-Za-z_][A-Za-z0-9_]*))?$`)
	stepStart = regexp.MustCompile(`^\d+\. `)
)

// checkTour checks every reference of the tour md against the files of root (the
// repository) and every numbered step for a place in the code and a test. It returns how
// many references it checked and one problem per bad reference or step.
func checkTour(root fs.FS, md []byte) (refs int, problems []string) {
	c := &checker{root: root, names: map[string]map[string]bool{}, errs: map[string]error{}}
	var step struct {
		line       int // 0 outside a step
		code, test bool
	}
	endStep := func() {
		if step.line == 0 {
			return
		}
		if !step.code {
			problems = append(problems, fmt.Sprintf("tour.md:%d: the step names no place in the code (`path/file.go:Func`)", step.line))
		}
		if !step.test {
			problems = append(problems, fmt.Sprintf("tour.md:%d: the step names no test (`path/file_test.go:TestName`)", step.line))
		}
		step.line = 0
	}
	fenced := false
	sc := bufio.NewScanner(bytes.NewReader(md))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		if strings.Count(line, "`")%2 != 0 {
			// A code span that breaks across lines would hide a reference from the check.
			problems = append(problems, fmt.Sprintf("tour.md:%d: a code span breaks across lines; keep each on one line", n))
		}
		switch {
		case stepStart.MatchString(line):
			endStep()
			step.line, step.code, step.test = n, false, false
		case strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#"):
			endStep()
		}
		for _, m := range codeSpan.FindAllStringSubmatch(line, -1) {
			span := m[1]
			if !candidate.MatchString(span) {
				continue
			}
			refs++
			if err := c.check(span); err != nil {
				problems = append(problems, fmt.Sprintf("tour.md:%d: `%s`: %v", n, span, err))
			}
			if strings.Contains(span, "_test.go:") {
				step.test = true
			} else {
				step.code = true
			}
		}
	}
	endStep()
	return refs, problems
}

// checker looks names up in the files of root, reading each file once.
type checker struct {
	root  fs.FS
	names map[string]map[string]bool // file -> the names it defines
	errs  map[string]error           // file -> why it could not be read
}

// check reports why span, a candidate reference, does not name something that is there.
func (c *checker) check(span string) error {
	m := reference.FindStringSubmatch(span)
	if m == nil {
		return fmt.Errorf("not a reference: write `path/file.go:Func`, `path/file.go:Type.Method` or `path/file_test.go:TestName`")
	}
	file, name := m[1], m[2]
	if m[3] != "" {
		name += "." + m[3]
	}
	if !fs.ValidPath(file) {
		return fmt.Errorf("not a path inside the repository")
	}
	isGo := strings.HasSuffix(file, ".go")
	if !isGo && m[3] != "" {
		return fmt.Errorf("a .js or .templ reference names a function or component, not a method")
	}
	names, err := c.load(file)
	if err != nil {
		return err
	}
	switch {
	case names[name]:
		return nil
	case strings.HasSuffix(file, "_test.go"):
		return fmt.Errorf("%s has no test %s", file, name)
	case isGo && m[3] != "":
		return fmt.Errorf("%s has no method %s", file, name)
	case isGo:
		return fmt.Errorf("%s has no function %s", file, name)
	case strings.HasSuffix(file, ".js"):
		return fmt.Errorf("%s defines no function %s (`function %s(` or `const %s =`)", file, name, name, name)
	default:
		return fmt.Errorf("%s defines no component %s (`templ %s(`)", file, name, name)
	}
}

// jsName and templName find what a .js or .templ file defines, by the text of the
// definition: a function declaration or a function bound to a const, let or var; a templ
// component.
var (
	jsName    = regexp.MustCompile(`(?m)(?:\bfunction\s+([A-Za-z_$][A-Za-z0-9_$]*)\s*\(|\b(?:const|let|var)\s+([A-Za-z_$][A-Za-z0-9_$]*)\s*=)`)
	templName = regexp.MustCompile(`(?m)^templ\s+([A-Za-z_][A-Za-z0-9_]*)\s*\(`)
)

// load returns the names file defines: for Go, its functions (tests only, in a _test.go
// file) and its methods as Type.Method; for .js and .templ, what [jsName] and [templName]
// find.
func (c *checker) load(file string) (map[string]bool, error) {
	if names, ok := c.names[file]; ok {
		return names, c.errs[file]
	}
	names := map[string]bool{}
	src, err := fs.ReadFile(c.root, file) // its error names the file
	switch {
	case err != nil:
	case strings.HasSuffix(file, ".go"):
		var f *ast.File
		if f, err = parser.ParseFile(token.NewFileSet(), file, src, parser.SkipObjectResolution); err != nil {
			err = fmt.Errorf("parse: %w", err) // the parser's error names the file
			break
		}
		test := strings.HasSuffix(file, "_test.go")
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			switch {
			case !ok:
			case fd.Recv != nil && len(fd.Recv.List) == 1:
				names[receiver(fd.Recv.List[0].Type)+"."+fd.Name.Name] = true
			case fd.Recv == nil && (!test || strings.HasPrefix(fd.Name.Name, "Test")):
				names[fd.Name.Name] = true
			}
		}
	case strings.HasSuffix(file, ".js"):
		for _, m := range jsName.FindAllSubmatch(src, -1) {
			names[string(m[1])+string(m[2])] = true
		}
	default:
		for _, m := range templName.FindAllSubmatch(src, -1) {
			names[string(m[1])] = true
		}
	}
	c.names[file], c.errs[file] = names, err
	return names, err
}

// receiver returns the name of a method's receiver type: T for T, *T, T[K] and *T[K, V].
func receiver(e ast.Expr) string {
	for {
		switch x := e.(type) {
		case *ast.StarExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.IndexListExpr:
			e = x.X
		case *ast.ParenExpr:
			e = x.X
		case *ast.Ident:
			return x.Name
		default:
			return ""
		}
	}
}
