package agent

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDeps keeps the loop below the layers that use it.
func TestDeps(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, bad := range []string{"myco/handlers", "myco/views", "myco/sessions", "myco/hosts", "github.com/a-h/templ", "github.com/go-chi/chi"} {
			if dep == bad || strings.HasPrefix(dep, bad+"/") {
				t.Errorf("package agent depends on %s", dep)
			}
		}
	}
}
