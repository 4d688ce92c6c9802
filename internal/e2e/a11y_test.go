package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"myco.dev/internal/fakemodel"
	"myco.dev/internal/needs"
)

// axeSource is axe-core, from npm (package.json pins it; npm ci installs it).
func axeSource(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "node_modules", "axe-core", "axe.min.js"))
	if err != nil {
		needs.Missing(t, "axe-core is not installed (run npm ci in the repository): %v", err)
	}
	return string(b)
}

// axeViolation is one rule a page breaks, as axe-core reports it.
type axeViolation struct {
	ID     string `json:"id"`
	Impact string `json:"impact"`
	Help   string `json:"help"`
	Nodes  []struct {
		Target  []any  `json:"target"`
		Summary string `json:"failureSummary"`
	} `json:"nodes"`
}

// axe runs axe-core on the tab's page and fails t for each violation of impact serious or
// critical, and for every control whose accessible name does not contain its visible label
// (label-content-name-mismatch, which axe counts as experimental and runs only when asked).
func (tb *tab) axe(t *testing.T, src, what string) {
	t.Helper()
	tb.axeIn(t, src, "document", what)
}

// axeIn is axe on the part of the page that the JavaScript expression in selects.
func (tb *tab) axeIn(t *testing.T, src, in, what string) {
	t.Helper()
	if !eval[bool](tb, `!!window.axe`) {
		eval[bool](tb, `(() => { `+src+`; return true; })()`)
	}
	raw := await[string](tb, `axe.run(`+in+`, {resultTypes: ["violations"], rules: {"label-content-name-mismatch": {enabled: true}}}).then((r) => JSON.stringify(r.violations))`)
	var vs []axeViolation
	if err := json.Unmarshal([]byte(raw), &vs); err != nil {
		t.Fatalf("%s: axe's answer: %v", what, err)
	}
	for _, v := range vs {
		if v.Impact != "serious" && v.Impact != "critical" && !alsoEnforced[v.ID] {
			continue
		}
		var nodes []string
		for _, n := range v.Nodes {
			nodes = append(nodes, fmtTarget(n.Target)+": "+strings.ReplaceAll(n.Summary, "\n", " "))
		}
		t.Errorf("%s: %s (%s, %s):\n  %s", what, v.ID, v.Impact, v.Help, strings.Join(nodes, "\n  "))
	}
}

// alsoEnforced are rules of a lesser impact that the pages keep too: one main landmark,
// at the top level, an h1 on every page, every control's name containing its label.
var alsoEnforced = map[string]bool{
	"label-content-name-mismatch": true,
	"landmark-main-is-top-level":  true,
	"landmark-no-duplicate-main":  true,
	"landmark-one-main":           true,
	"page-has-heading-one":        true,
	"heading-order":               true,
	"region":                      true,
}

func fmtTarget(t []any) string {
	b, _ := json.Marshal(t)
	return string(b)
}

// TestBrowserAccessibility runs axe-core on the main pages, light and dark: the list, a
// session with a finished turn (tool cards, a table, code), the New session page, the
// workspace, a file page and a session's file.
func TestBrowserAccessibility(t *testing.T) {
	t.Parallel()
	answer := "## Result\n\n| Line | Count |\n|---|---|\n| parser.go | 17 |\n| lexer.go | 4 |\n\n```go\nfunc main() {\n\tprintln(\"hi\")\n}\n```\n\nSee `main.go`."
	f := newFixtureConfig(t, twoModels,
		fakemodel.Turn{Text: "Checking.", ToolCalls: []fakemodel.ToolCall{bash("call_ok", "echo fine"), bash("call_bad", "exit 3")}},
		fakemodel.Turn{Text: answer},
	)
	src := axeSource(t)
	f.workspaceFile("notes/plan.txt", "the plan\n")
	page := f.newSession()
	if err := os.WriteFile(filepath.Join(f.srv.cmd.Dir, "main.go"), []byte("package main\n\nfunc main() {}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t)
	tb := newTab(t, b, "main")
	tb.navigate(page)
	tb.waitLive()
	tb.send("Count the lines")
	tb.wait("the finished turn", `document.querySelector("#messages .msg.assistant table") && document.querySelector("#tool-call_bad.error") && document.querySelector("#status .idle")`)
	tb.click(`#tool-call_ok summary`)

	for _, theme := range []string{"light", "dark"} {
		for _, p := range []struct{ name, url string }{
			{"session", page},
			{"list", f.srv.URL},
			{"new session", f.srv.URL + "new"},
			{"workspace", f.srv.URL + "workspace/"},
			{"workspace file", f.srv.URL + "workspace/notes/plan.txt"},
			{"session file", page + "files/main.go"},
		} {
			t.Run(theme+" "+p.name, func(t *testing.T) {
				tb := tb.in(t)
				if eval[string](tb, `location.href`) != p.url {
					tb.navigate(p.url)
				}
				eval[bool](tb, `(document.documentElement.dataset.theme = `+quoteJS(theme)+`, true)`)
				tb.axe(t, src, theme+" "+p.name)
			})
		}
	}
}
