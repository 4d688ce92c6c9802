package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"myco.dev/internal/fakemodel"
)

// The controls a person touches in their first hour, each checked by what the person gets:
// the model the next request names, the clipboard's text, the scroll offset.

// twoModels is a catalog with a second model, big, whose wire id tells its requests apart.
const twoModels = "[models.big]\nprotocol = \"anthropic-messages\"\nbase_url = \"{{model_url}}\"\napi_id = \"big-model\"\ncontext_window = 200000\n"

// TestBrowserModelSelect chooses another model in the composer's select with the keyboard,
// as a person does: the next turn's request names it, and a reload shows it chosen.
func TestBrowserModelSelect(t *testing.T) {
	t.Parallel()
	f := newFixtureConfig(t, twoModels, fakemodel.Turn{Text: "On the first model."}, fakemodel.Turn{Text: "On the big one."})
	page := f.newSession()
	b := newBrowser(t)
	tb := newTab(t, b, "main")
	tb.navigate(page)
	tb.waitLive()
	tb.send("Which model?")
	tb.wait("the first answer", `document.querySelector("#messages")?.textContent.includes("On the first model.") && document.querySelector("#status .idle")`)
	if got := requestModel(t, f.model); got != "m" {
		t.Fatalf("the first request names model %q, want m", got)
	}

	// A focused select takes the option whose name starts with the letter typed.
	tb.do("choose big in the select", chromedp.Focus(chromedp.ID("model"), chromedp.NodeVisible), chromedp.KeyEvent("b"))
	tb.wait("big chosen", `document.getElementById("model").value === "big"`)
	waitServer(t, page, `<option value="big" selected>`)
	if eval[bool](tb, `!!document.querySelector("#toast .error, #toast [role=alert]")`) {
		t.Fatalf("choosing a model showed an error: %s", eval[string](tb, `document.getElementById("toast").textContent`))
	}
	tb.send("And now?")
	tb.wait("the second answer", `document.querySelector("#messages")?.textContent.includes("On the big one.") && document.querySelector("#status .idle")`)
	if got := requestModel(t, f.model); got != "big-model" {
		t.Errorf("after choosing big, the next request names model %q, want big-model", got)
	}
	tb.navigate(page)
	if got := eval[string](tb, `document.getElementById("model").value`); got != "big" {
		t.Errorf("after a reload the select shows %q, want big", got)
	}
}

// requestModel is the model id of the fake model's last request.
func requestModel(t *testing.T, m *fakemodel.Server) string {
	t.Helper()
	reqs := m.Requests()
	if len(reqs) == 0 {
		t.Fatal("the fake model got no request")
	}
	s, _ := reqs[len(reqs)-1].JSON()["model"].(string)
	return strings.TrimSpace(s)
}

// TestBrowserCopyExact clicks each Copy control and reads the clipboard: a code block gives
// its source exactly (a command continued with \, a heredoc with a tab, a diff), the Copy
// of a message with tool calls gives the message as the page shows it (its text, each
// command and what it printed), and a tool card's own Copy gives its whole output.
func TestBrowserCopyExact(t *testing.T) {
	t.Parallel()
	continued := "docker run \\\n  --rm \\\n  alpine echo hi"
	heredoc := "cat <<'EOF' > notes.txt\nline one\n\tindented\n\nEOF"
	patch := "--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n-old\n+new\n same"
	answer := "Run it:\n\n```sh\n" + continued + "\n```\n\nA heredoc:\n\n```bash\n" + heredoc + "\n```\n\nA diff:\n\n```diff\n" + patch + "\n```\n"
	command := `printf 'a & b\nsecond <line>\n'`
	f := newFixture(t,
		fakemodel.Turn{Text: answer},
		fakemodel.Turn{Text: "Let me look.", ToolCalls: []fakemodel.ToolCall{bash("call_look", command)}},
		fakemodel.Turn{Text: "Done."},
		fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{bash("call_long", "seq 1 5000")}},
		fakemodel.Turn{Text: "Counted."},
	)
	page := f.newSession()
	b := newBrowser(t)
	tb := newTab(t, b, "main")
	tb.grantClipboard(f.srv.origin())
	tb.navigate(page)
	tb.waitLive()
	tb.send("Show me code")
	tb.wait("the answer's three code blocks", `document.querySelectorAll("#messages .msg.assistant .code button.copy-code").length === 3 && document.querySelector("#status .idle")`)
	for i, want := range []string{continued, heredoc, patch} {
		// The block in the middle of the window, where the dock does not cover it.
		eval[bool](tb, `(() => { const c = document.querySelectorAll("#messages .msg.assistant .code")[`+itoa(i)+`]; c.id = "code-`+itoa(i)+`"; c.scrollIntoView({block: "center"}); return true; })()`)
		tb.clickAndSee(`#code-`+itoa(i)+` button.copy-code`, "Copied")
		if got := tb.clipboard(); got != want {
			t.Errorf("code block %d: the clipboard holds %q, want exactly %q", i+1, got, want)
		}
	}

	tb.send("Look at it")
	tb.wait("the tool card and the answer", `document.querySelector("#tool-call_look.ok") && document.querySelector("#messages")?.textContent.includes("Done.") && document.querySelector("#status .idle")`)
	tb.click(`#tool-call_look summary`)
	tb.clickAndSee(`#tool-call_look button.copy-output`, "Copied")
	if got := tb.clipboard(); got != "a & b\nsecond <line>\n" {
		t.Errorf("the tool card's Copy put %q on the clipboard, want what the command printed", got)
	}
	tb.clickAndSee(`#messages .msg.assistant:has(#tool-call_look) button.copy`, "Copied")
	got := tb.clipboard()
	for _, want := range []string{"Let me look.", command, "a & b\nsecond <line>"} {
		if !strings.Contains(got, want) {
			t.Errorf("the message's Copy lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, `\u0026`) {
		t.Errorf("the message's Copy escapes & as \\u0026:\n%s", got)
	}
	got = await[string](tb, `fetch(document.querySelector("a.export[download]").href).then((r) => r.text())`)
	if !strings.Contains(got, command) || strings.Contains(got, `\u0026`) {
		t.Errorf("the export does not show the command as written (%q):\n%s", command, got)
	}

	// show all: the whole output takes the place of its head and tail, once.
	tb.send("Count")
	tb.wait("the long call", `document.querySelector("#tool-call_long.ok") && document.querySelector("#messages")?.textContent.includes("Counted.") && document.querySelector("#status .idle")`)
	tb.click(`#tool-call_long summary`)
	tb.click(`#tool-call_long details.show-all summary`)
	tb.wait("the whole output", `document.querySelector("#tool-call_long-out pre.tool-output")?.textContent.includes("\n2500\n")`)
	if n := eval[int](tb, `document.querySelector("#tool-call_long-out").textContent.split("\n5000\n").length - 1`); n != 1 {
		t.Errorf("after show all the output's last line shows %d times, want once: %s", n, eval[string](tb, `document.querySelector("#tool-call_long-out").innerHTML.slice(0, 300)`))
	}
}

// TestBrowserStaysWhereYouRead scrolls up with the mouse wheel while an answer streams, as
// a reader does, and checks the scroll offset when the turn ends and after: the page stays
// where the reader is; only "↓ latest" goes to the end.
func TestBrowserStaysWhereYouRead(t *testing.T) {
	t.Parallel()
	// Both answers stream slowly: the test scrolls while each streams (an answer sent at
	// once could end before a loaded machine's poll saw it busy).
	f := newFixture(t, fakemodel.Turn{Text: longAnswer("Streaming slowly"), ChunkSize: 24, DelayMs: 25},
		fakemodel.Turn{Text: longAnswer("Again"), ChunkSize: 24, DelayMs: 25})
	page := f.newSession()
	b := newBrowser(t)
	tb := newTab(t, b, "main")
	tb.navigate(page)
	tb.waitLive()
	for round, prompt := range []string{"Write a lot", "Once more"} {
		tb.send(prompt)
		tb.wait("a long part of the answer", `document.documentElement.scrollHeight > innerHeight * 2 && document.querySelector("#status .busy")`)
		tb.wheel(-500)
		tb.wait("the reader scrolled up", `!document.getElementById("to-latest").hidden`)
		at := eval[float64](tb, `scrollY`)
		tb.wait("the turn ends", `document.querySelector("#status .idle") && !document.querySelector("#live-md").textContent`)
		// The end's swaps (the saved message in place of the live one, the status) and
		// the resize they cause have happened; give the page's own reactions a moment.
		tb.do("a moment", chromedp.Sleep(300*time.Millisecond))
		if now := eval[float64](tb, `scrollY`); now < at-2 || now > at+2 {
			t.Errorf("round %d: the page moved from y %.0f to y %.0f when the turn ended; the reader scrolled up", round+1, at, now)
		}
		if eval[bool](tb, `document.getElementById("to-latest").hidden`) {
			t.Errorf("round %d: ↓ latest is gone though the reader is not at the end", round+1)
		}
		tb.click("#to-latest")
		tb.wait("back at the end", `document.getElementById("to-latest").hidden && innerHeight + scrollY >= document.documentElement.scrollHeight - 2`)
	}
}

// TestBrowserOpenBlocksStream: a code block streams as a code block from its first line
// (monospaced, in its box, never its fence as text), a table as a table from its first
// whole rows, and nothing jumps when they settle: the layout shift of the whole turn stays
// under 0.05 (the "good" bound of Core Web Vitals is 0.1).
func TestBrowserOpenBlocksStream(t *testing.T) {
	t.Parallel()
	var code, rows strings.Builder
	for i := range 40 {
		code.WriteString("\tfmt.Println(\"line " + itoa(i+1) + "\")\n")
	}
	for i := range 30 {
		rows.WriteString("| " + itoa(i+1) + " | row " + itoa(i+1) + " of the table |\n")
	}
	answer := "Here is the program:\n```go\nfunc main() {\n" + code.String() + "}\n```\n\nAnd the table:\n\n| n | what |\n|---|---|\n" + rows.String() + "\nThat is all."
	f := newFixture(t, fakemodel.Turn{Text: answer, ChunkSize: 12, DelayMs: 25})
	page := f.newSession()
	b := newBrowser(t)
	tb := newTab(t, b, "main")
	tb.navigate(page)
	tb.waitLive()
	eval[bool](tb, `(() => { window.__cls = 0; new PerformanceObserver((l) => { for (const e of l.getEntries()) if (!e.hadRecentInput) window.__cls += e.value; }).observe({type: "layout-shift", buffered: true}); return true; })()`)
	tb.send("Show me")

	tb.wait("the open code block, mid-stream", `document.querySelector("#live-tail pre code")?.textContent.includes("line 5") && !document.querySelector("#live-tail pre code").textContent.includes("line 40")`)
	if text := eval[string](tb, `document.getElementById("live-text").textContent`); strings.Contains(text, "```") {
		t.Errorf("the open fence shows as text: %q", text)
	}
	if font := eval[string](tb, `getComputedStyle(document.querySelector("#live-tail pre code")).fontFamily`); !strings.Contains(strings.ToLower(font), "mono") {
		t.Errorf("the open code block's font is %q, want the monospaced one", font)
	}
	if !eval[bool](tb, `document.querySelector("#live-md p")?.textContent === "Here is the program:"`) {
		t.Errorf("the paragraph before the fence is not rendered: %s", eval[string](tb, `document.getElementById("live-text").innerHTML.slice(0, 300)`))
	}
	tb.wait("the open table, mid-stream", `document.querySelectorAll("#live-tail table tbody tr").length >= 3 && !document.querySelector("#live-text")?.textContent.includes("That is all")`)
	if text := eval[string](tb, `document.getElementById("live-tail").textContent`); strings.Contains(text, "|") {
		t.Errorf("the open table shows pipes as text: %q", text)
	}
	tb.wait("the end of the turn", `document.querySelector("#status .idle") && document.querySelector("#messages .msg.assistant table")`)
	tb.do("a moment for the last frames", chromedp.Sleep(300*time.Millisecond))
	if cls := eval[float64](tb, `window.__cls`); cls >= 0.05 {
		t.Errorf("the turn's layout shift is %.3f, want under 0.05", cls)
	}
}

// TestBrowserHeadStaysCurrent: while the first turn runs, the sidebar's row and the tab's
// title already have the session's title and the meter counts the tokens of the step that
// ended; a rename shows at once in the header, the sidebar and the title of every tab on
// the session.
func TestBrowserHeadStaysCurrent(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	gate, open := f.gate("first")
	f.model.Script(
		// The model takes its time to answer: the session has its title meanwhile.
		fakemodel.Turn{Text: "Let me check.", ToolCalls: []fakemodel.ToolCall{bash("call_gate", gate)}, Usage: fakemodel.Usage{Input: 5000, Output: 20}, HangMs: 5000},
		fakemodel.Turn{Text: "Done.", Usage: fakemodel.Usage{Input: 6200, Output: 10}},
	)
	page := f.newSession()
	id := sessionID(page)
	b := newBrowser(t)
	tb := newTab(t, b, "main")
	tb.navigate(page)
	tb.waitLive()
	other := newTab(t, b, "other")
	other.navigate(page)
	other.waitLive()

	tb.send("Fix the flaky parser test")
	title := "Fix the flaky parser test"
	tb.wait("the title in the header", `document.getElementById("title").textContent.trim() === `+quoteJS(title))
	row := `document.querySelector("#side-` + id + ` a")?.textContent.replace("●", "").trim()`
	if eval[bool](tb, `!!document.querySelector("#tool-call_gate")`) {
		t.Fatal("the model answered before the checks of the waiting turn")
	}
	tb.waitExplained(2*time.Second, "the sidebar row's title before the model answers", row+` === `+quoteJS(title), row)
	tb.waitExplained(2*time.Second, "the tab's title before the model answers", `document.title.startsWith(`+quoteJS(title)+`)`, `document.title`)
	tb.wait("the call runs", `document.querySelector("#tool-call_gate.running")`)
	tb.waitExplained(waitTimeout, "the meter counts the first step", `document.querySelector("#status .meter")?.textContent.includes("5k of 100k")`,
		`document.querySelector("#status .meter")?.textContent`)
	open()
	tb.wait("the answer", `document.querySelector("#messages")?.textContent.includes("Done.") && document.querySelector("#status .idle")`)
	tb.wait("the meter after the turn", `document.querySelector("#status .meter")?.textContent.includes("6.2k of 100k")`)

	tb.click(`button#rename`)
	eval[bool](tb, `(document.getElementById("rename-input").value = "", true)`)
	tb.do("type a title", typeInto(chromedp.CSS("#rename-input"), "Parser flake"), pressEnter())
	for _, tab := range []*tab{tb, other} {
		tab.waitExplained(waitTimeout, "the new title in the header, the sidebar and the tab's title",
			`document.getElementById("title").textContent.trim() === "Parser flake" && `+row+` === "Parser flake" && document.title.startsWith("Parser flake")`,
			`JSON.stringify([document.getElementById("title").textContent, `+row+`, document.title])`)
	}
}

// TestBrowserNewSessionOnSend: New session is a composer; visiting it and leaving writes
// nothing (the list stays as it was), and the session is made by its first message, in
// the directory of the session the person came from, which the page offers first.
func TestBrowserNewSessionOnSend(t *testing.T) {
	t.Parallel()
	f := newFixture(t, fakemodel.Turn{Text: "First answer."}, fakemodel.Turn{Text: "Second answer."})
	proj := t.TempDir()
	b := newBrowser(t)
	tb := newTab(t, b, "main")
	rows := `document.querySelectorAll("#session-list li.session-row").length`

	tb.navigate(f.srv.URL)
	tb.clickAndLoad(`form.new-session button[type=submit]`)
	tb.wait("the composer at once", `document.activeElement?.id === "prompt" && document.getElementById("cwd")`)
	eval[bool](tb, `(() => { const c = document.getElementById("cwd"); c.value = `+quoteJS(proj)+`; return true; })()`)
	tb.navigate(f.srv.URL) // and leave
	tb.clickAndLoad(`button#new-session`)
	tb.navigate(f.srv.URL)
	if n := eval[int](tb, rows); n != 0 {
		t.Fatalf("visiting New session twice and leaving listed %d sessions, want none", n)
	}

	tb.clickAndLoad(`form.new-session button[type=submit]`)
	eval[bool](tb, `(() => { const c = document.getElementById("cwd"); c.value = `+quoteJS(proj)+`; return true; })()`)
	tb.startSession("Start here")
	tb.waitLive()
	tb.wait("the first message and its answer", `document.querySelector("#messages .msg.user")?.textContent.includes("Start here") && document.querySelector("#messages")?.textContent.includes("First answer.")`)
	if got := eval[string](tb, `document.getElementById("session-cwd").title`); !strings.HasSuffix(got, proj) {
		t.Errorf("the session works in %q, want %s", got, proj)
	}
	first := eval[string](tb, `location.href`)

	// From a session page, New session offers that session's directory.
	tb.clickAndLoad(`button#new-session`)
	if got := eval[string](tb, `document.getElementById("cwd").value`); got != proj {
		t.Errorf("New session from a session in %s offers %q", proj, got)
	}
	tb.startSession("Another")
	if now := eval[string](tb, `location.href`); now == first {
		t.Errorf("the second session's page is the first's")
	}
	tb.navigate(f.srv.URL)
	if n := eval[int](tb, rows); n != 2 {
		t.Errorf("the list has %d sessions, want the two that were sent a message", n)
	}
}

// TestBrowserKeyboard: the keyboard alone: Tab's first stop is the skip link, which goes
// past the header and the sidebar to the transcript; ↑ in the empty composer brings back
// the last message; in a message's Edit box Enter sends the edit and Esc closes the box.
func TestBrowserKeyboard(t *testing.T) {
	t.Parallel()
	f := newFixture(t, fakemodel.Turn{Text: "One."}, fakemodel.Turn{Text: "Two."}, fakemodel.Turn{Text: "Three."})
	for range 5 {
		f.newSession() // a sidebar to skip
	}
	page := f.newSession()
	b := newBrowser(t)
	tb := newTab(t, b, "main")
	tb.navigate(page)
	tb.waitLive()

	first := `[...document.querySelectorAll("a[href], button, input, select, textarea, summary, [tabindex]")].find((e) => e.tabIndex >= 0 && !e.disabled && e.type !== "hidden")`
	if got := eval[string](tb, first+`?.textContent`); got != "Skip to the content" {
		t.Fatalf("the first stop of Tab is %q, want the skip link", got)
	}
	// From the top of the page (the composer has the focus on load), Tab reaches it first.
	eval[bool](tb, `(`+first+`.focus(), true)`)
	tb.do("Shift+Tab", chromedp.KeyEvent(kb.Tab, chromedp.KeyModifiers(kb.ModifierShift)))
	tb.do("Tab", chromedp.KeyEvent(kb.Tab))
	if got := eval[string](tb, `document.activeElement.textContent`); got != "Skip to the content" || !eval[bool](tb, `document.querySelector(".skip-link").getBoundingClientRect().top >= 0`) {
		t.Fatalf("Tab from the top stops at %q, want the skip link, in view", got)
	}
	tb.do("Enter on the skip link", pressEnter())
	tb.wait("at the transcript", `location.hash === "#transcript"`)
	tb.do("Tab", chromedp.KeyEvent(kb.Tab))
	if eval[bool](tb, `!!document.activeElement.closest("header.top, aside.sidebar")`) {
		t.Errorf("after the skip link, Tab goes to %s", eval[string](tb, `document.activeElement.outerHTML.slice(0, 200)`))
	}

	tb.send("Deploy to staging")
	tb.wait("the answer", `document.querySelector("#messages")?.textContent.includes("One.") && document.querySelector("#status .idle")`)
	tb.do("↑ in the empty composer", chromedp.Focus(chromedp.ID("prompt"), chromedp.NodeVisible), chromedp.KeyEvent(kb.ArrowUp))
	if got := eval[string](tb, `document.getElementById("prompt").value`); got != "Deploy to staging" {
		t.Fatalf("↑ in the empty composer gives %q, want the last message", got)
	}
	tb.do("send it again", pressEnter())
	tb.wait("the second answer", `document.querySelector("#messages")?.textContent.includes("Two.") && document.querySelector("#status .idle")`)

	eval[bool](tb, `([...document.querySelectorAll("#messages .msg.user")].pop().querySelector("details.edit-message").id = "the-edit", true)`)
	edit := `#the-edit`
	tb.click(edit + ` summary`)
	tb.wait("the Edit box", `document.querySelector(`+quoteJS(edit)+`).open`)
	tb.do("type and Esc", typeInto(chromedp.CSS(edit+" textarea"), " now"), chromedp.KeyEvent(kb.Escape))
	tb.wait("the box closed", `!document.querySelector(`+quoteJS(edit)+`).open`)
	tb.click(edit + ` summary`)
	eval[bool](tb, `(document.querySelector(`+quoteJS(edit+" textarea")+`).value = "Deploy to production", true)`)
	tb.do("Enter sends the edit", chromedp.Focus(chromedp.CSS(edit+" textarea"), chromedp.NodeVisible), pressEnter())
	tb.wait("the edit's answer", `document.querySelector("#messages")?.textContent.includes("Three.") && document.querySelector("#status .idle")`)
	reqs := f.model.Requests()
	if body := string(reqs[len(reqs)-1].Body); !strings.Contains(body, "Deploy to production") || strings.Contains(body, `Deploy to production\n`) {
		t.Errorf("the edit that reached the model is not the one typed (without a newline):\n%s", body)
	}
}

// TestBrowserCompactHint: past 80% of the window (the model has no auto_compact_at), the
// meter offers Compact; a click on it compacts the session into a new thread.
func TestBrowserCompactHint(t *testing.T) {
	t.Parallel()
	f := newFixture(t,
		fakemodel.Turn{Text: "A long answer.", Usage: fakemodel.Usage{Input: 60000, Output: 100}},
		fakemodel.Turn{Text: "Another.", Usage: fakemodel.Usage{Input: 86000, Output: 100}},
		fakemodel.Turn{Text: "## Summary\n\nTwo questions were answered."},
	)
	page := f.newSession()
	b := newBrowser(t)
	tb := newTab(t, b, "main")
	tb.navigate(page)
	tb.waitLive()
	tb.send("First")
	tb.wait("the answer at 60%", `document.querySelector("#status .meter")?.textContent.includes("60k of 100k") && document.querySelector("#status .idle")`)
	if eval[bool](tb, `!!document.getElementById("compact")`) {
		t.Errorf("Compact is offered at 60%% of the window")
	}
	tb.send("Second")
	tb.wait("Compact offered at 86%", `document.querySelector("#status .meter")?.textContent.includes("86k of 100k") && document.querySelector("#status .idle") && document.getElementById("compact")`)
	n := len(f.model.Requests())
	tb.click("#compact")
	tb.wait("the compacted session", `document.querySelector("#threads") && document.querySelector("#status .idle") && !document.getElementById("compact")`)
	if reqs := f.model.Requests(); len(reqs) != n+1 {
		t.Fatalf("Compact sent %d requests, want the one of the compaction", len(reqs)-n)
	}
}

// TestBrowserSendWhileServerDown: a message sent while the server is down stays in the
// composer, which says that it was not sent and what to do.
func TestBrowserSendWhileServerDown(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	page := f.newSession()
	b := newBrowser(t)
	tb := newTab(t, b, "main")
	tb.navigate(page)
	tb.waitLive()
	tb.allow(`ERR_CONNECTION_REFUSED|Failed to fetch|net::ERR`) // the server is down on purpose
	f.srv.stop()
	tb.send("Is anyone there?")
	tb.wait("the composer says it was not sent", `document.querySelector("#composer #composer-error")?.textContent.includes("Not sent: the server could not be reached")`)
	if got := eval[string](tb, `document.getElementById("prompt").value`); got != "Is anyone there?" {
		t.Errorf("the composer holds %q, want the message that was not sent", got)
	}
}
