package e2e

import (
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"myco.dev/internal/fakemodel"
)

// TestBrowserFlow walks through the main flow a user takes, with real clicks and key
// presses, in one browser tab against the real server:
//   - a prompt sent with Enter: its answer streams into #live-text, then lands as a
//     rendered message; a tool card runs and finishes; the status bar goes busy, then ready;
//   - a turn stopped with the Stop button, another with Esc: the stop note and the unknown
//     outcome of the running call;
//   - /compact from the composer, then the earlier thread, read-only, from the thread list;
//   - an image attached with @path, shown as a thumbnail;
//   - archive and restore from the session list, the Archived filter, and the search box
//     that swaps the list in place; Ctrl+K and the top search;
//   - a workspace Markdown document, rendered under its sandboxing policy.
func TestBrowserFlow(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	gate, open := f.gate("first")
	square := writePNG(t, filepath.Join(t.TempDir(), "square.png"))
	f.model.Script(
		fakemodel.Turn{Thinking: "The user wants a greeting and a command run.", Text: "Let me run a command to check the machine before I answer you.",
			ToolCalls: []fakemodel.ToolCall{bash("call_echo", gate)}, ChunkSize: 6, DelayMs: 30},
		fakemodel.Turn{Text: "## Done\n\nThe command printed `{{tool_result}}`.\n\n```go\nfunc main() {\n\tprintln(\"hi\")\n}\n```\n", ChunkSize: 8, DelayMs: 10},
		fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{bash("call_sleep1", "sleep 30")}},
		fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{bash("call_sleep2", "sleep 30")}},
		fakemodel.Turn{Text: "## Summary\n\nThe user asked for a greeting; `echo hi` printed hi. Two sleeps were stopped."},
		fakemodel.Turn{Text: "A **green** square."},
	)
	b := newBrowser(t)
	tb := newTab(t, b, "main")

	tb.navigate(f.srv.URL)
	tb.wait("the sessions page", `document.querySelector("main.sessions-page h1")?.textContent === "Sessions"`)
	tb.wait("an empty list", `document.querySelector("#session-list .empty")?.textContent.includes("No sessions yet")`)
	// The session is created as a script would (New session is TestBrowserPlainFormPosts's).
	first := f.newSession()
	tb.navigate(first)
	tb.waitLive()
	tb.wait("the empty-session hint", `document.querySelector("#live-notes .empty")`)

	t.Run("a turn streams, runs a tool and ends ready", func(t *testing.T) {
		tb := tb.in(t)
		tb.send("Say hello and run a command")
		tb.wait("the tool card runs", `document.querySelector("#tool-call_echo.running")`)
		r := tb.record()
		if !strings.Contains(r.LiveText, "Let me run a command to check the machine") {
			t.Errorf("#live-text streamed %q, want the first answer's text", r.LiveText)
		}
		if !r.SawBusy {
			t.Error("the status bar never showed busy")
		}
		tb.wait("the streamed text saved as a message and the live region emptied",
			`document.querySelector("#messages .msg.assistant .md")?.textContent.includes("Let me run a command") && document.getElementById("live-text").textContent === ""`)
		tb.wait("the user's message", `document.querySelector("#messages .msg.user .plain")?.textContent.includes("Say hello and run a command")`)
		tb.wait("the Stop button while busy", `document.querySelector("#status .status-bar.busy #stop")`)
		if got := eval[string](tb, `document.querySelector("#tool-call_echo .tool-summary").textContent`); !strings.Contains(got, "echo hi") {
			t.Errorf("the tool card's summary = %q, want the command", got)
		}
		if eval[bool](tb, `document.querySelector("details.thinking").open`) {
			t.Error("the thinking block is open, want it collapsed")
		}
		open()
		tb.wait("the final answer", `document.querySelector("#messages .msg.assistant .md h2")?.textContent === "Done"`)
		tb.wait("ready", `document.querySelector("#status .status-bar:not(.busy) .idle") && !document.getElementById("stop")`)
		tb.wait("the tool card ok", `document.querySelector("#tool-call_echo.ok")`)
		r = tb.record()
		if got := r.Tools["tool-call_echo"]; strings.Join(got, ",") != "running,ok" {
			t.Errorf("the tool card went through %v, want [running ok]", got)
		}
		if !r.ReadyAfterBusy {
			t.Error("the status bar did not go from busy to ready")
		}
		if got := eval[string](tb, `document.querySelector("#messages .msg.assistant .md code")?.textContent || ""`); !strings.Contains(got, "hi") {
			t.Errorf("the answer quotes %q, want the tool's output", got)
		}
		if !eval[bool](tb, `!!document.querySelector('#messages .md pre.ch-chroma code span[class^="ch-"]')`) {
			t.Error("the answer's code block is not highlighted (pre.ch-chroma with chroma's classes)")
		}
		if got := eval[string](tb, `document.getElementById("title").textContent.trim()`); got != "Say hello and run a command" {
			t.Errorf("#title = %q, want the first prompt", got)
		}
		compareFresh(t, b, tb, first)
		// Open the card: its output is there.
		tb.click("#tool-call_echo > summary")
		tb.wait("the open card's output", `document.querySelector("#tool-call_echo[open] .tool-output")?.textContent.includes("hi")`)
	})

	stopped := func(t *testing.T, tb *tab, call string, n int) {
		t.Helper()
		tb.wait("the stop note", `document.querySelectorAll("#messages .msg.end .note.cancelled").length === `+itoa(n))
		note := eval[string](tb, `[...document.querySelectorAll("#messages .msg.end .note.cancelled")].pop().textContent`)
		if !strings.Contains(note, "Stopped") || !strings.Contains(note, "may have taken effect") {
			t.Errorf("the stop note = %q, want it to say the turn stopped and a running call may have taken effect", note)
		}
		tb.wait("the call's unknown outcome", `document.querySelector("#tool-`+call+`.unknown")`)
		if got := eval[string](tb, `document.querySelector("#tool-`+call+` .tool-status").textContent`); got == "" {
			t.Errorf("the stopped call's status label is empty")
		}
		tb.wait("ready again", `document.querySelector("#status .idle") && !document.getElementById("stop")`)
	}
	t.Run("Stop button", func(t *testing.T) {
		tb := tb.in(t)
		tb.send("Sleep for a while")
		tb.wait("the sleep runs", `document.querySelector("#tool-call_sleep1.running")`)
		tb.click("#stop")
		stopped(t, tb, "call_sleep1", 1)
	})
	t.Run("Esc", func(t *testing.T) {
		tb := tb.in(t)
		tb.send("Sleep again")
		tb.wait("the sleep runs", `document.querySelector("#tool-call_sleep2.running") && document.getElementById("stop")`)
		tb.do("press Esc", chromedp.KeyEvent(kb.Escape))
		stopped(t, tb, "call_sleep2", 2)
	})

	t.Run("compact, then the earlier thread", func(t *testing.T) {
		tb := tb.in(t)
		thread := eval[string](tb, `document.querySelector("#messages .msg").id.split("-")[1]`)
		tb.send("/compact")
		tb.wait("the summary starts the new thread", `document.querySelector("#messages > .msg:first-child.summary .md h2")?.textContent === "Summary"`)
		tb.wait("ready", `document.querySelector("#status .idle")`)
		if got := eval[string](tb, `document.querySelector("#messages .msg").id.split("-")[1]`); got == thread {
			t.Errorf("after /compact the messages are still of thread %s, want a new thread", got)
		}
		tb.click("details.threads > summary")
		tb.wait("the thread list", `document.querySelectorAll("#threads > li").length === 2`)
		tb.clickAndLoad(`#threads a:not([aria-current])`)
		tb.wait("the read-only banner", `document.querySelector(".banner[role=note]")?.textContent.includes("read-only")`)
		if eval[bool](tb, `!!document.getElementById("prompt") || !!document.querySelector("#transcript[data-events], #transcript[hx-sse\\:connect]")`) {
			t.Error("the earlier thread has a composer or an event stream, want it read-only")
		}
		tb.wait("the earlier thread's messages", `document.querySelector("#messages .msg.assistant .md h2")?.textContent === "Done" && document.querySelectorAll("#messages .msg.end").length === 2`)
		tb.clickAndLoad(`.banner[role=note] a`)
		tb.wait("back on the active thread", `document.querySelector("#messages .msg.summary") && document.getElementById("prompt")`)
	})

	second := f.newSession()
	t.Run("an image attached with @path", func(t *testing.T) {
		tb := tb.in(t)
		tb.navigate(second)
		tb.waitLive()
		tb.send("What is in @" + square + " ?")
		tb.wait("the answer", `document.querySelector("#messages .msg.assistant .md strong")?.textContent === "green"`)
		tb.wait("the thumbnail, loaded", `(() => { const i = document.querySelector("#messages .msg.user a.thumb img"); return i && i.complete && i.naturalWidth === 16; })()`)
		req := f.model.Requests()
		if last := string(req[len(req)-1].Body); !strings.Contains(last, `"type":"image"`) {
			t.Errorf("the model's request has no image block: %.300s", last)
		}
	})

	t.Run("archive and restore from the list", func(t *testing.T) {
		tb := tb.in(t)
		id := sessionID(first)
		tb.navigate(f.srv.URL)
		tb.wait("both sessions listed", `document.querySelectorAll("#session-list > li.session-row").length === 2`)
		eval[bool](tb, `window.__samePage = true`)
		tb.click("#row-" + id + " form button")
		tb.wait("the row archived in place", `document.querySelector("#row-`+id+`.archived .badge")?.textContent === "archived"`)
		tb.clickAndLoad(`.segmented a[href*="filter=archived"]`)
		tb.wait("the archived list", `document.querySelectorAll("#session-list > li.session-row").length === 1 && document.getElementById("row-`+id+`")`)
		tb.click("#row-" + id + " form button")
		tb.wait("the row restored in place", `(() => { const r = document.getElementById("row-`+id+`"); return r && !r.classList.contains("archived") && r.querySelector("form button").textContent.trim() === "Archive"; })()`)
		tb.clickAndLoad(`.segmented a[href*="filter=active"]`)
		tb.wait("both active again", `document.querySelectorAll("#session-list > li.session-row").length === 2`)
	})

	t.Run("search", func(t *testing.T) {
		tb := tb.in(t)
		tb.navigate(f.srv.URL)
		eval[bool](tb, `window.__samePage = true`)
		tb.do("type a search", typeInto(chromedp.CSS(`form.filters input[type=search]`), "What is"))
		tb.wait("the list swapped to the match", `document.querySelectorAll("#session-list > li.session-row").length === 1 && document.getElementById("row-`+sessionID(second)+`")`)
		if !eval[bool](tb, `window.__samePage === true`) {
			t.Error("the search reloaded the page, want the list swapped in place")
		}
		tb.do("type more", typeInto(chromedp.CSS(`form.filters input[type=search]`), " nothing like it"))
		tb.wait("no match", `document.querySelector("#session-list .empty")?.textContent.includes("No session matches")`)
		// Ctrl+K focuses the top search, which searches all sessions.
		tb.do("press Ctrl+K", chromedp.Click(chromedp.CSS("main h1")), chromedp.KeyEvent("k", chromedp.KeyModifiers(chromedp.ModifierCtrl)))
		tb.wait("the top search focused", `document.activeElement?.id === "search"`)
		tb.do("search hello", typeInto(chromedp.ID("search"), "hello"))
		tb.pressAndLoad(kb.Enter)
		tb.wait("the results", `document.querySelectorAll("#session-list > li.session-row").length === 1 && document.getElementById("row-`+sessionID(first)+`")`)
	})

	t.Run("a workspace document", func(t *testing.T) {
		tb := tb.in(t)
		f.workspaceFile("notes/plan.md", "# The plan\n\nSome *prose* and a [link](other.md).\n\n## Code\n\n```go\nfunc main() {}\n```\n\n| a | b |\n|:--|--:|\n| 1 | 2 |\n")
		tb.clickAndLoad(`header.top nav a[href$="/workspace/"]`)
		tb.wait("the listing", `[...document.querySelectorAll("table.listing a")].some((a) => a.textContent === "notes/")`)
		tb.clickAndLoad(`table.listing a[href$="/notes/"]`)
		resp := tb.clickAndLoadResponse(`table.listing a[href$="/plan.md"]`)
		if csp := header(resp.Headers, "Content-Security-Policy"); !strings.HasPrefix(csp, "sandbox") || !strings.Contains(csp, "default-src 'none'") {
			t.Errorf("the document's Content-Security-Policy = %q, want a sandbox with default-src 'none'", csp)
		}
		tb.wait("the document rendered", `document.querySelector("main.document-body h1")?.textContent === "The plan" && document.querySelector("main.document-body h2")?.textContent === "Code"`)
		if !eval[bool](tb, `!!document.querySelector('main.document-body pre.ch-chroma code span[class^="ch-"]')`) {
			t.Error("the document's code block is not highlighted (pre.ch-chroma with chroma's classes)")
		}
		if got := eval[string](tb, `document.querySelector("main.document-body table td")?.getAttribute("align") || ""`); got != "left" {
			t.Errorf("the table's first cell align = %q, want left (an attribute, not a style)", got)
		}
		// The stylesheet applies (a sandboxed document still loads our CSS).
		if got := eval[string](tb, `getComputedStyle(document.body).fontFamily`); !strings.Contains(got, "system-ui") {
			t.Errorf("the document's font = %q, want app.css applied", got)
		}
	})
}

// TestBrowserPlainFormPosts clicks the buttons that are plain forms, not htmx: New session
// on the sessions page and Start session on the page it opens, and Archive in a session's
// head.
func TestBrowserPlainFormPosts(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	b := newBrowser(t)
	tb := newTab(t, b, "main")
	tb.navigate(f.srv.URL)
	tb.clickAndLoad(`form.new-session button[type=submit]`)
	tb.do("type the first message", typeInto(chromedp.ID("prompt"), "Hello"))
	tb.clickAndLoad(`form#new-session-form button#start-session`)
	tb.wait("the new session's page", `document.getElementById("transcript") && document.getElementById("prompt")`)
	// Its first turn ends at once (no scripted answer: rejected, the session needs you);
	// the stream's re-render of the page then must not take the button from under the click.
	tb.wait("the first turn's end", `document.querySelector('#status .status-bar[data-state="needs_you"]')`)
	tb.clickAndLoad("#archive-button")
	tb.wait("the session archived", `document.getElementById("archive-button")?.textContent.trim() === "Restore"`)
	tb.clickAndLoad("#archive-button")
	tb.wait("the session restored", `document.getElementById("archive-button")?.textContent.trim() === "Archive"`)
}

// writePNG writes a 16×16 green square.
func writePNG(t *testing.T, path string) string {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 16, 16))
	for y := range 16 {
		for x := range 16 {
			img.Set(x, y, color.RGBA{G: 160, A: 255})
		}
	}
	out, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	if err := png.Encode(out, img); err != nil {
		t.Fatal(err)
	}
	return path
}

// sessionID is the id in a session page's URL.
func sessionID(page string) string {
	_, rest, _ := strings.Cut(page, "/s/")
	return strings.TrimSuffix(rest, "/")
}
