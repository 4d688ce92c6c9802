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

// Forbid fails t for every dependency that is one of bad or inside one of them.
func Forbid(t testing.TB, bad ...string) {
	t.Helper()
	for _, dep := range Deps(t) {
		for _, b := range bad {
			if dep == b || strings.HasPrefix(dep, b+"/") {
				t.Errorf("the package depends on %s", dep)
			}
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
		ok := false
		for _, a := range allow {
			ok = ok || dep == a || strings.HasPrefix(dep, a+"/")
		}
		if !ok {
			t.Errorf("the package depends on %s; want only the standard library and %s", dep, strings.Join(allow, ", "))
		}
	}
}

// Upper are the layers above sessions, which nothing below them may import.
var Upper = []string{"myco.dev/handlers", "myco.dev/views", "myco.dev/static", "github.com/a-h/templ", "github.com/go-chi/chi"}
