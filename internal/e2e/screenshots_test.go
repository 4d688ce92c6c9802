package e2e

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"myco.dev/internal/fakemodel"
)

// TestBrowserScreenshots saves the main screens (the sessions list, a session with a
// finished turn showing a tool card and a code block, a session in trouble — a broken-off
// answer with Retry, a running job, a queued message — a workspace document) in light and
// dark, wide (1440×900) and narrow (390×844, a phone), as PNG files of the window, in
// $MYCO_SCREENSHOTS (make screenshots sets it), else in a temporary directory. It also
// fails when a screen is wider than a narrow window: nothing may scroll sideways.
func TestBrowserScreenshots(t *testing.T) {
	t.Parallel()
	dir := os.Getenv("MYCO_SCREENSHOTS")
	if dir == "" {
		dir = t.TempDir()
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// Full mode: the screens are those of a session whose calls run at once (its edit is
	// of a path outside the session's directory, which workspace mode would ask about);
	// TestBrowserApprovals captures the approval cards.
	f := newFixtureConfig(t, "[approvals]\nmode = \"full\"\n",
		fakemodel.Turn{Text: "I'll look at the build first:\n\n- list the packages\n- run the failing test\n",
			ToolCalls: []fakemodel.ToolCall{bash("call_list", "printf 'agent\\nhandlers\\nsessions\\nviews\\n'"),
				bash("call_fail", "printf '--- FAIL: TestLoad (0.00s)\\n    config_test.go:42: Load(missing) = nil, want an error\\n'; exit 1"),
				{ID: "call_edit", Name: "str_replace_based_edit_tool", Args: `{"command":"str_replace","path":"/nonexistent/config/loader.go","old_str":"a","new_str":"b"}`}}},
		fakemodel.Turn{Text: "## The fix\n\nThe test failed because `Load` returned a nil error for a missing file. " +
			"Here is the change, with a long line to see how a narrow window copes with it:\n\n" +
			"```go\nfunc Load(path string) (*Config, error) {\n\tdata, err := os.ReadFile(path) // a comment that makes this line rather long for a phone screen\n" +
			"\tif err != nil {\n\t\treturn nil, fmt.Errorf(\"load %s: %w\", path, err)\n\t}\n\treturn parse(data)\n}\n```\n\n" +
			"| package | tests | time |\n|:--|--:|--:|\n| config | 42 | 0.3 s |\n| sessions | 117 | 2.1 s |\n\n" +
			"| Line | Count | What the line does in the loader |\n|---|--:|---|\n| 17 | 3 | reads the whole configuration file into memory before it parses anything |\n| 42 | 1 | returns the error |\n\nAll green now.",
		},
	)
	gate, open := f.gate("long-job")
	f.model.Script(
		fakemodel.Turn{Text: "The failure comes from **two** places: the loader, and", ChunkSize: 8, Drop: true},
		fakemodel.Turn{Text: "Starting the long job.", ToolCalls: []fakemodel.ToolCall{bash("call_gate", "echo building…; "+gate)}},
		fakemodel.Turn{Text: "Reading the build log, the first error is", ChunkSize: 8, Drop: true},
		// An answer still streaming, in an open code block: the model holds it open.
		fakemodel.Turn{Text: "The parser, rewritten:\n\n```go\nfunc parse(src []byte) (*File, error) {\n\tp := &parser{src: src}\n\tfor !p.done() {\n\t\tif err := p.next(); err != nil {\n\t\t\treturn nil, err\n", Stall: true},
		fakemodel.Turn{Text: "The job is done."},
		fakemodel.Turn{Text: "Summary: all good."},
	)
	page := f.newSession()
	f.newSession() // an untitled one, for the list
	doc := f.workspaceFile("notes/design.md", "# Design notes\n\nThe server streams every change of a session to its page as **htmx partials**; "+
		"a tab that reconnects gets what it missed.\n\n## Events\n\n1. accepted\n2. checkpoint\n3. done\n\n```sh\nmyco --addr 127.0.0.1:8080\n```\n\n"+
		"> A quote, to see how it looks.\n\n| column | value |\n|---|---|\n| a | 1 |\n")

	b := newBrowser(t)
	tb := newTab(t, b, "shots")
	tb.navigate(page)
	tb.waitLive()
	tb.send("Why does the config test fail? Fix it.")
	tb.wait("the answer", `document.querySelector("#messages .msg.assistant .md h2")?.textContent === "The fix" && document.querySelector("#status .idle")`)

	// A session in trouble: an answer that broke off (kept, with the failure's note, its
	// folded detail and Retry), a long job running, and a message queued behind it.
	trouble := f.newSession()
	tb.navigate(trouble)
	tb.waitLive()
	tb.send("Explain the failure")
	tb.wait("the failure", `document.querySelector("#messages .msg.end .note.error")`)
	tb.send("Run the long job")
	tb.wait("the job runs", `document.querySelector("#tool-call_gate.running")`)
	tb.send("And then summarise what changed")
	tb.wait("the queued message", `document.querySelector("#queue .queued")`)
	defer open()

	// A session whose last turn failed, at rest: the failure's note, and Retry with what it
	// does beside it.
	failed := f.newSession()
	tb.navigate(failed)
	tb.waitLive()
	tb.send("Why did the build break?")
	tb.wait("the failure and its Retry", `document.querySelector("#messages form.retry .hint")`)

	// A session whose answer streams now, in an open code block.
	streaming := f.newSession()
	tb.navigate(streaming)
	tb.waitLive()
	tb.send("Rewrite the parser")
	tb.wait("the open code block", `document.querySelector("#live-tail pre code")?.textContent.includes("p.next()")`)

	screens := []struct{ name, url, ready string }{
		{"sessions", f.srv.URL, `document.querySelectorAll("#session-list > li.session-row").length === 5`},
		{"session", page, `document.querySelector("#tool-call_list.ok") && document.querySelector("#messages .md table")`},
		{"session-top", page, `document.querySelector("#tool-call_fail.error") && (scrollTo(0, 0), scrollY === 0)`},
		{"document", doc, `document.querySelector("main.document-body h1")`},
		{"trouble", trouble, `document.querySelector("#queue .queued") && document.querySelector("#messages .note.partial") && document.querySelector("#tool-call_gate.running")`},
		{"failed", failed, `document.querySelector("#messages form.retry .hint") && document.querySelector("#status .idle")`},
		{"streaming", streaming, `document.querySelector("#live-tail pre code")?.textContent.includes("p.next()")`},
		{"new", f.srv.URL + "new", `document.activeElement?.id === "prompt" && document.getElementById("cwd")`},
		{"table", page, `(() => { const t = [...document.querySelectorAll("#messages .md table")].pop(); t?.scrollIntoView({block: "center"}); return !!t; })()`},
	}
	sizes := []struct {
		name          string
		width, height int64
	}{{"wide", 1440, 900}, {"narrow", 390, 844}}
	for _, scheme := range []string{"light", "dark"} {
		tb.do("prefers-color-scheme: "+scheme, chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
			_, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
				Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}})
			return err
		}))
		for _, size := range sizes {
			tb.do("viewport "+size.name, chromedp.EmulateViewport(size.width, size.height))
			for _, s := range screens {
				tb.navigate(s.url)
				tb.wait(s.name, s.ready)
				if s.name == "session" || s.name == "trouble" || s.name == "failed" {
					// The end of the session, with the status bar and the composer: a
					// session should open there, but does not yet (TestBrowserFollowsTheEnd),
					// so the reader goes there with End.
					tb.do("go to the end", chromedp.Click(chromedp.CSS("#messages .msg.user .plain"), chromedp.NodeVisible), chromedp.KeyEvent(kb.End))
					tb.wait("the page at its end", `innerHeight + scrollY >= document.documentElement.scrollHeight - 2`)
				}
				if got := eval[string](tb, `matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light"`); got != scheme {
					t.Fatalf("the page sees the %s scheme, want %s", got, scheme)
				}
				if s.name == "table" {
					// No word and no number of a table is broken over lines ("Li/n/e").
					if broken := eval[string](tb, brokenCells); broken != "" {
						t.Errorf("%s at %d px: table cells broken inside a word: %s", s.name, size.width, broken)
					}
				}
				if s.name == "session-top" {
					// A long tool name gives way; the failed call's status stays in view.
					if r := eval[float64](tb, `document.querySelector("#tool-call_edit .tool-status").getBoundingClientRect().right`); r > float64(size.width) {
						t.Errorf("%s at %d px: the editor call's status ends at %.0f px, off the window", s.name, size.width, r)
					}
				}
				if size.name == "narrow" {
					if w := eval[int](tb, `document.documentElement.scrollWidth`); w > int(size.width) {
						t.Errorf("%s at %d px: the page is %d px wide and scrolls sideways; widest: %s", s.name, size.width, w,
							eval[string](tb, widest))
					}
				}
				// What the window shows (a full-page capture draws the sticky header and
				// composer in the middle of the page): the top of a page, the end of a
				// session, where it follows the transcript.
				png, err := chromedp.Run(tb.ctx, chromedp.CaptureScreenshot())
				if err != nil {
					t.Fatalf("screenshot %s: %v", s.name, err)
				}
				name := filepath.Join(dir, s.name+"-"+scheme+"-"+size.name+".png")
				if err := os.WriteFile(name, png, 0o644); err != nil {
					t.Fatal(err)
				}
				t.Logf("saved %s", name)
			}
		}
	}
}

// brokenCells lists the table cells of the page's answers whose text has no space but
// takes more than one line: a word or a number broken inside.
const brokenCells = `[...document.querySelectorAll("#messages .md th, #messages .md td")].filter((c) => {
  const text = c.textContent.trim();
  if (!text || /\s/.test(text)) return false;
  const range = document.createRange();
  range.selectNodeContents(c);
  return new Set([...range.getClientRects()].map((r) => Math.round(r.top))).size > 1;
}).map((c) => c.textContent.trim()).join(", ")`

// widest names the elements that reach past the window's right edge, for the message of
// an overflow.
const widest = `(() => {
  const out = [];
  for (const el of document.querySelectorAll("body *")) {
    const r = el.getBoundingClientRect();
    if (r.right > innerWidth + 1 && ![...el.parentElement.children].some((s) => s !== el && s.contains(el))) {
      let p = el.parentElement, inside = false;
      for (; p; p = p.parentElement) if (p.getBoundingClientRect().right > innerWidth + 1 && getComputedStyle(p).overflowX !== "visible") inside = true;
      if (!inside) out.push(el.tagName.toLowerCase() + (el.id ? "#" + el.id : "") + (el.className && typeof el.className === "string" ? "." + el.className.trim().split(/\s+/).join(".") : "") + " right=" + Math.round(r.right));
    }
  }
  return out.slice(0, 8).join(", ");
})()`

// screens captures the window in light and dark, 1440 and 390 px wide, as name-SCHEME-SIZE.png
// in $MYCO_SCREENSHOTS (a temporary directory without it), once inView (a script, "" for
// none) is true; at 390 px the page must not scroll sideways. The viewport is put back.
func screens(t *testing.T, tb *tab, name, inView string) {
	t.Helper()
	dir := os.Getenv("MYCO_SCREENSHOTS")
	if dir == "" {
		dir = t.TempDir()
	}
	os.MkdirAll(dir, 0o755)
	for _, scheme := range []string{"light", "dark"} {
		tb.do("prefers-color-scheme: "+scheme, chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
			_, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
				Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}})
			return err
		}))
		for _, size := range []struct {
			name          string
			width, height int64
		}{{"wide", 1440, 900}, {"narrow", 390, 844}} {
			tb.do("viewport "+size.name, chromedp.EmulateViewport(size.width, size.height))
			if inView != "" {
				tb.wait(name+" in view", inView)
			}
			if size.name == "narrow" {
				if w := eval[int](tb, `document.documentElement.scrollWidth`); w > int(size.width) {
					t.Errorf("%s at %d px: the page is %d px wide; widest: %s", name, size.width, w, eval[string](tb, widest))
				}
			}
			png, err := chromedp.Run(tb.ctx, chromedp.CaptureScreenshot())
			if err != nil {
				t.Fatalf("screenshot %s: %v", name, err)
			}
			p := filepath.Join(dir, name+"-"+scheme+"-"+size.name+".png")
			if err := os.WriteFile(p, png, 0o644); err != nil {
				t.Fatal(err)
			}
			t.Logf("saved %s", p)
		}
	}
	tb.do("viewport back", chromedp.EmulateViewport(1280, 900))
}
