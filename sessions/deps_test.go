package sessions

import (
	"os/exec"
	"strings"
	"testing"
)

func TestDeps(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, banned := range []string{"myco/handlers", "myco/views", "github.com/a-h/templ", "github.com/go-chi/chi"} {
			if dep == banned || strings.HasPrefix(dep, banned+"/") {
				t.Errorf("sessions imports %s", dep)
			}
		}
	}
}
