package config

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDeps keeps the package at the bottom of the import graph: the standard library and
// the TOML decoder only.
func TestDeps(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for dep := range strings.FieldsSeq(string(out)) {
		if dep == "myco/config" || dep == "github.com/BurntSushi/toml" ||
			strings.HasPrefix(dep, "github.com/BurntSushi/toml/") {
			continue
		}
		if first, _, _ := strings.Cut(dep, "/"); strings.Contains(first, ".") || first == "myco" {
			t.Errorf("config imports %s; want only the standard library and toml", dep)
		}
	}
}
