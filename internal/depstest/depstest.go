// Package depstest checks a package's imports in its tests: the layers of ARCHITECTURE.md
// import downward only, and the bottom packages import nothing of ours.
package depstest

import (
	"os/exec"
	"strings"
	"testing"
)

// Deps returns the packages that the package in the test's working directory depends on,
// itself included (go list -deps).
func Deps(t testing.TB) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	return strings.Fields(string(out))
}

// Imports returns the packages that the package in the test's working directory imports
// itself, without theirs (go list -f '{{.Imports}}').
func Imports(t testing.TB) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", `{{join .Imports "\n"}}`, ".").Output()
	if err != nil {
		t.Fatalf("go list -f .Imports: %v", err)
	}
	return strings.Fields(string(out))
}

// ForbidImports fails t for every package that the package imports itself and that is one
// of bad or inside one of them: for the package on top (cmd/myco), which depends on every
// other through them, but must not use some of them directly.
func ForbidImports(t testing.TB, bad ...string) {
	t.Helper()
	for _, imp := range Imports(t) {
		if inside(imp, bad) {
			t.Errorf("the package imports %s", imp)
		}
	}
}

func inside(pkg string, of []string) bool {
	for _, b := range of {
		if pkg == b || strings.HasPrefix(pkg, b+"/") {
			return true
		}
	}
	return false
}

// Forbid fails t for every dependency that is one of bad or inside one of them.
func Forbid(t testing.TB, bad ...string) {
	t.Helper()
	for _, dep := range Deps(t) {
		if inside(dep, bad) {
			t.Errorf("the package depends on %s", dep)
		}
	}
}

// Only fails t for every dependency outside the standard library that is not one of allow
// or inside one of them.
func Only(t testing.TB, allow ...string) {
	t.Helper()
	for _, dep := range Deps(t) {
		if first, _, _ := strings.Cut(dep, "/"); !strings.Contains(first, ".") {
			continue // the standard library
		}
		if !inside(dep, allow) {
			t.Errorf("the package depends on %s; want only the standard library and %s", dep, strings.Join(allow, ", "))
		}
	}
}

// Upper are the layers above sessions, which nothing below them may import.
var Upper = []string{"myco.dev/handlers", "myco.dev/views", "myco.dev/static", "github.com/a-h/templ", "github.com/go-chi/chi"}
