package workspace

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDeps keeps the workspace package on the standard library alone.
func TestDeps(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.Contains(strings.SplitN(dep, "/", 2)[0], ".") || strings.HasPrefix(dep, "myco/") && dep != "myco/workspace" {
			t.Errorf("package workspace depends on %s", dep)
		}
	}
}
