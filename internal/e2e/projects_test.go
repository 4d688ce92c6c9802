package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"myco.dev/internal/fakemodel"
)

// TestBrowserProjects: New session asks for the directory: a bad one is refused at the
// field, a typed one is completed, the session starts there and its head names it. Its
// answer's path:line reference opens the file in the read-only viewer at that line; its
// directory's tree is a click away; the sessions list shows the directory and filters by
// it.
func TestBrowserProjects(t *testing.T) {
	t.Parallel()
	f := newFixture(t, fakemodel.Turn{Text: "The handler is at `src/app.go:7`; see [the readme](README.md)."})
	proj := filepath.Join(t.TempDir(), "proj")
	var src strings.Builder
	src.WriteString("package app\n")
	for i := 2; i <= 12; i++ {
		src.WriteString("// line " + itoa(i) + "\n")
	}
	for p, text := range map[string]string{"src/app.go": src.String(), "README.md": "# Proj\n\nRead [the code](src/app.go).\n"} {
		p = filepath.Join(proj, p)
		os.MkdirAll(filepath.Dir(p), 0o700)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	b := newBrowser(t)
	tb := newTab(t, b, "main")
	tb.navigate(f.srv.URL)
	tb.clickAndLoad(`form.new-session button[type=submit]`)
	tb.wait("the new session page", `document.getElementById("cwd") && document.getElementById("start-session")`)
	tb.do("type the first message", typeInto(chromedp.ID("prompt"), "Where is the handler?"))

	set := func(v string) {
		eval[bool](tb, `(() => { const c = document.getElementById("cwd"); c.value = `+quoteJS(v)+`; c.dispatchEvent(new Event("input", {bubbles: true})); return true; })()`)
	}
	set("relative/dir")
	tb.allow(`status of 400 \(Bad Request\) ` + regexp.QuoteMeta(f.srv.URL+"s")) // the refusal, on purpose
	tb.clickAndLoad(`button#start-session`)
	tb.wait("the refusal at the field, the message kept", `document.getElementById("cwd-error")?.textContent.includes("is not an absolute path") && document.getElementById("cwd").getAttribute("aria-invalid") === "true" && document.getElementById("cwd").value === "relative/dir" && document.getElementById("prompt").value === "Where is the handler?"`)

	set(filepath.Join(proj, "sr"))
	tb.wait("the typed path completed", `[...document.querySelectorAll("#cwd-options option")].some((o) => o.value === `+quoteJS(filepath.Join(proj, "src")+"/")+`)`)
	set(proj)
	tb.clickAndLoad(`button#start-session`)
	tb.waitLive()
	if got := eval[string](tb, `document.getElementById("session-cwd").textContent`); got != proj {
		t.Errorf("the session's head names %q, want %s", got, proj)
	}
	tb.wait("the answer's link to the file", `!!document.querySelector("#messages .msg.assistant a[href$='/files/src/app.go?line=7#L7'] code")`)
	session := eval[string](tb, `location.href`)
	tb.clickAndLoad(`#messages .msg.assistant a[href$='/files/src/app.go?line=7#L7']`)
	tb.wait("the file at line 7", `location.hash === "#L7" && document.getElementById("L7")?.matches(":target") && document.querySelector(".code-file")?.textContent.includes("// line 7")`)
	if got := eval[string](tb, `document.querySelector("main h1")?.textContent`); got != "app.go" {
		t.Errorf("the file's page is headed %q, want app.go", got)
	}
	tb.clickAndLoad(`main .back a`) // the way back to the session
	tb.wait("back at the session", `location.href === `+quoteJS(session)+` && document.getElementById("transcript")`)

	tb.navigate(session)
	tb.clickAndLoad(`#session-cwd`)
	tb.wait("the directory's tree", `[...document.querySelectorAll("table.listing a")].map((a) => a.textContent).join(" ") === "src/ README.md"`)
	tb.clickAndLoad(`table.listing a[href$='README.md']`)
	tb.wait("the readme, rendered, linking into the project", `!!document.querySelector("main.document-body a[href$='/files/src/app.go']")`)

	tb.navigate(f.srv.URL)
	tb.wait("the list shows the directory", `[...document.querySelectorAll("#session-list a.cwd")].some((a) => a.title.endsWith(`+quoteJS(proj)+`))`)
	tb.clickAndLoad(`#session-list a.cwd`)
	tb.wait("the list of that directory", `document.querySelectorAll("#session-list li.session-row").length === 1 && document.getElementById("dir-filter").value === `+quoteJS(proj))
}
