package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"myco.dev/internal/fakemodel"
	"myco.dev/internal/needs"
)

// The versions of the client generators the API's tests run: the latest of each when this
// was written (docs/dev/decisions.md). openapi-typescript and TypeScript are pinned in
// package.json.
const oapiCodegen = "github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen@v2.8.2"

// clientReport is what each client program of testdata prints: the Go type of each event
// of its turn, the text deltas joined, and the answer.
type clientReport struct {
	Session string   `json:"session"`
	Types   []string `json:"types"`
	Text    string   `json:"text"`
	Answer  string   `json:"answer"`
}

// served starts the real server over a fake model that answers its turns with answers, in
// order, and returns its profile's URL and the OpenAPI document it serves, written to a
// file.
func served(t *testing.T, answers ...string) (profileURL, doc string) {
	t.Helper()
	var turns []fakemodel.Turn
	for _, a := range answers {
		turns = append(turns, fakemodel.Turn{Text: a})
	}
	srv := fakemodel.New(t, turns...)
	_, u, _ := startServer(t, profileHome(t, "anthropic-messages", srv.URL, ""))
	resp, err := http.Get(u + "api/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /api/openapi.json = %d, %v", resp.StatusCode, err)
	}
	doc = filepath.Join(t.TempDir(), "openapi.json")
	if err := os.WriteFile(doc, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return u, doc
}

// goCmd runs the go command in dir with env added, and returns its output.
func goCmd(t *testing.T, dir string, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir, cmd.Env = dir, append(os.Environ(), env...)
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if e, ok := err.(*exec.ExitError); ok {
			stderr = e.Stderr
		}
		t.Fatalf("go %s in %s: %v\n%s", strings.Join(args, " "), dir, err, stderr)
	}
	return string(out)
}

// copyDir copies the files of directory from into a new directory, and returns it.
func copyDir(t *testing.T, from string) string {
	t.Helper()
	to := t.TempDir()
	entries, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, e.Name()), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return to
}

// runClient runs a client program against the profile at u and checks its report: it saw
// the turn's events as the types want names (among others), their text deltas make the
// answer, and the answer is what the model said.
func runClient(t *testing.T, bin, u, answer string, want []string) {
	t.Helper()
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "MYCO_SERVER_URL="+u, "MYCO_SERVER_TOKEN_FILE=")
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if e, ok := err.(*exec.ExitError); ok {
			stderr = e.Stderr
		}
		t.Fatalf("%s: %v\n%s", filepath.Base(bin), err, stderr)
	}
	var r clientReport
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("%s printed %s: %v", filepath.Base(bin), out, err)
	}
	for _, w := range want {
		if !slices.Contains(r.Types, w) {
			t.Errorf("%s saw the events %v, without a %s", filepath.Base(bin), r.Types, w)
		}
	}
	if r.Answer != answer || r.Text != answer || r.Session == "" {
		t.Errorf("%s: session %q, text deltas %q, answer %q; want the answer %q in both", filepath.Base(bin), r.Session, r.Text, r.Answer, answer)
	}
}

// TestGoClientFromAnotherModule (issue 29): a program in a module of its own that imports
// myco.dev/client and myco.dev/api, put with this module in a go.work workspace (no replace
// line), builds without any of the server's packages (no templ, chi, goldmark, chroma,
// bluemonday; of myco only api and client), and drives the real server: it creates a
// session, submits, streams the turn's events into api's types and reads the answer. The
// program of docs/browser.md's "From a program" runs as it is written, the same way.
func TestGoClientFromAnotherModule(t *testing.T) {
	answer := "Hello from the Go client, \"quoted\" & <bracketed>."
	docAnswer := "There are 154 files."
	u, _ := served(t, answer, docAnswer)
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := copyDir(t, "testdata/goclient")
	example := docExample(t)
	work := filepath.Join(t.TempDir(), "go.work")
	if err := os.WriteFile(work, []byte("go 1.26.0\n\nuse (\n\t"+dir+"\n\t"+example+"\n\t"+root+"\n)\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"GOWORK=" + work}
	for _, dep := range strings.Fields(goCmd(t, dir, env, "list", "-deps", ".")) {
		for _, bad := range []string{"github.com/a-h/templ", "github.com/go-chi/chi", "github.com/yuin/goldmark", "github.com/alecthomas/chroma", "github.com/microcosm-cc/bluemonday"} {
			if dep == bad || strings.HasPrefix(dep, bad+"/") {
				t.Errorf("the program depends on %s", dep)
			}
		}
		if strings.HasPrefix(dep, "myco.dev/") && dep != "myco.dev/api" && dep != "myco.dev/client" {
			t.Errorf("the program depends on %s; of myco, want only api and client", dep)
		}
	}
	bin := filepath.Join(t.TempDir(), "goclient")
	goCmd(t, dir, env, "build", "-o", bin, ".")
	if fi, err := os.Stat(bin); err == nil {
		t.Logf("a program of myco.dev/client: %.1f MB", float64(fi.Size())/1e6)
	}
	runClient(t, bin, u, answer, []string{"api.AcceptedEvent", "api.TextDeltaEvent", "api.DoneEvent", "api.StateEvent"})

	exampleBin := filepath.Join(t.TempDir(), "example")
	goCmd(t, example, env, "build", "-o", exampleBin, ".")
	cmd := exec.Command(exampleBin)
	cmd.Env = append(os.Environ(), "MYCO_SERVER_URL="+u, "MYCO_SERVER_TOKEN_FILE=")
	out, err := cmd.CombinedOutput()
	if want := docAnswer + "\nthe turn ended: done\n"; err != nil || string(out) != want {
		t.Errorf("the example of docs/browser.md printed %q, %v; want %q", out, err, want)
	}
}

// docExample writes the Go program under "### From a program" in docs/browser.md into a
// module of its own, and returns its directory.
func docExample(t *testing.T) string {
	t.Helper()
	doc, err := os.ReadFile("../../docs/browser.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(doc), "### From a program")
	m := regexp.MustCompile("(?s)```go\n(package main\n.*?)```").FindStringSubmatch(after)
	if !ok || m == nil {
		t.Fatal("docs/browser.md has no Go program under ### From a program")
	}
	dir := t.TempDir()
	for name, data := range map[string]string{"go.mod": "module example.com/docexample\n\ngo 1.26.0\n", "main.go": m[1]} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestOpenAPIGoClient (issue 29): oapi-codegen's client, generated from the document the
// real server serves, compiles in a module of its own (with oapi-codegen's runtime, pinned
// in testdata/oapiclient/go.sum) and drives the server: an action is sent as the union it
// is (not {}), the turn's events are read into one generated type each, and the answer is
// read.
func TestOpenAPIGoClient(t *testing.T) {
	needs.Long(t, "oapi-codegen's client (it builds the generator)")
	answer := "Hello from the generated client."
	u, doc := served(t, answer)
	dir := copyDir(t, "testdata/oapiclient")
	os.Mkdir(filepath.Join(dir, "mycoapi"), 0o700)
	env := []string{"GOWORK=off"}
	goCmd(t, dir, env, "run", oapiCodegen, "-config", "oapi-codegen.yaml", doc)
	bin := filepath.Join(t.TempDir(), "oapiclient")
	goCmd(t, dir, env, "build", "-o", bin, ".")
	if fi, err := os.Stat(bin); err == nil {
		t.Logf("a program of oapi-codegen's client: %.1f MB", float64(fi.Size())/1e6)
	}
	runClient(t, bin, u, answer, []string{"mycoapi.AcceptedEvent", "mycoapi.TextDeltaEvent", "mycoapi.DoneEvent", "mycoapi.StateEvent"})
}

// TestOpenAPITypeScript (issue 29): openapi-typescript's types, generated from the document
// the real server serves, compile with a program that narrows each event to its own type,
// builds actions and reads an action's answer (tsc --strict; its @ts-expect-error lines
// must fail: a text delta has no busy field, select_model needs its model).
func TestOpenAPITypeScript(t *testing.T) {
	bin, _ := filepath.Abs("../../node_modules/.bin")
	for _, p := range []string{"openapi-typescript", "tsc"} {
		if _, err := os.Stat(filepath.Join(bin, p)); err != nil {
			needs.Missing(t, "%s is not installed (npm ci installs it from package.json)", p)
		}
	}
	_, doc := served(t, "unused")
	dir := copyDir(t, "testdata/tsclient")
	for _, args := range [][]string{
		{"openapi-typescript", doc, "-o", filepath.Join(dir, "schema.d.ts")},
		{"tsc", "--noEmit", "--strict", "--target", "es2022", "--module", "esnext", "--moduleResolution", "bundler", "client.ts"},
	} {
		cmd := exec.Command(filepath.Join(bin, args[0]), args[1:]...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}
