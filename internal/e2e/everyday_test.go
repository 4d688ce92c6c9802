package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"myco.dev/internal/fakemodel"
)

// grantClipboard lets the tab's pages read and write the clipboard, as a user allows.
func (tb *tab) grantClipboard(origin string) {
	tb.t.Helper()
	for _, name := range []string{"clipboard-read", "clipboard-write"} {
		if _, err := chromedp.Call(tb.ctx, cdpbrowser.SetPermission, cdpbrowser.SetPermissionParams{
			Permission: &cdpbrowser.PermissionDescriptor{Name: name, AllowWithoutSanitization: true}, Setting: cdpbrowser.PermissionSettingGranted, Origin: origin,
		}); err != nil {
			tb.fail("grant %s: %v", name, err)
		}
	}
}

// clipboard reads the clipboard in the page.
func (tb *tab) clipboard() string {
	tb.t.Helper()
	return await[string](tb, `navigator.clipboard.readText()`)
}

// TestBrowserEverydayActions: the controls a user reaches for all day, each found by its
// accessible name: New session from any page, Copy on an answer (its Markdown) and on a
// code block, Rename in place, Export as Markdown, and the theme toggle, which a reload
// keeps.
func TestBrowserEverydayActions(t *testing.T) {
	t.Parallel()
	answer := "Here is the command:\n\n```sh\necho hi\n```\n\nDone **now**."
	f := newFixture(t, fakemodel.Turn{Text: answer}, fakemodel.Turn{Text: "A new one."}, fakemodel.Turn{Text: "Read it."})
	b := newBrowser(t)
	tb := newTab(t, b, "main")
	tb.grantClipboard(f.srv.origin())

	tb.navigate(f.srv.URL + "workspace/")
	tb.clickAndLoad(`button#new-session`)
	tb.startSession("Show me the command") // in the directory offered: the server's
	first := eval[string](tb, `location.href`)
	tb.waitLive()
	tb.wait("the answer", `document.querySelector("#messages .msg.assistant .md strong")?.textContent === "now" && !!document.querySelector("#status .idle")`)

	t.Run("Copy an answer", func(t *testing.T) {
		tb := tb.in(t)
		tb.clickAndSee(`#messages .msg.assistant button.copy[aria-label="Copy message"]`, "Copied")
		if got := tb.clipboard(); got != answer {
			t.Errorf("the clipboard holds %q, want the answer's Markdown %q", got, answer)
		}
	})
	t.Run("Copy a code block", func(t *testing.T) {
		tb := tb.in(t)
		tb.clickAndSee(`#messages .msg.assistant .code button.copy-code[aria-label="Copy code"]`, "Copied")
		if got := strings.TrimSpace(tb.clipboard()); got != "echo hi" {
			t.Errorf("the clipboard holds %q, want the code", got)
		}
	})
	t.Run("Rename", func(t *testing.T) {
		tb := tb.in(t)
		tb.click(`button#rename`)
		tb.wait("the title's field", `document.activeElement?.id === "rename-input" && !document.getElementById("rename-form").hidden`)
		if got := eval[string](tb, `document.getElementById("rename-input").value`); got != "Show me the command" {
			t.Errorf("the title's field holds %q, want the title it had", got)
		}
		eval[bool](tb, `(document.getElementById("rename-input").value = "", true)`)
		tb.do("type a title", typeInto(chromedp.CSS("#rename-input"), "Deploy notes"), pressEnter())
		tb.wait("the new title in place", `document.getElementById("title").textContent.trim() === "Deploy notes" && document.getElementById("rename-form").hidden`)
		waitServer(t, first, "Deploy notes")
	})
	t.Run("Export", func(t *testing.T) {
		tb := tb.in(t)
		got := await[string](tb, `fetch(document.querySelector("a.export[download]").href).then((r) => r.text())`)
		for _, want := range []string{"# Deploy notes", "### You", "Show me the command", "### myco", "Done **now**."} {
			if !strings.Contains(got, want) {
				t.Errorf("the export lacks %q:\n%s", want, got)
			}
		}
	})
	t.Run("New session from a session page", func(t *testing.T) {
		tb := tb.in(t)
		tb.clickAndLoad(`button#new-session`)
		tb.startSession("Read this")
		if now := eval[string](tb, `location.href`); now == first || !strings.Contains(now, "/s/") {
			t.Errorf("New session led to %s (from %s)", now, first)
		}
	})
	t.Run("theme", func(t *testing.T) {
		tb := tb.in(t)
		tb.click(`button#theme`)
		tb.wait("light", `document.documentElement.dataset.theme === "light" && document.getElementById("theme").getAttribute("aria-label") === "Theme: light"`)
		tb.click(`button#theme`)
		tb.wait("dark", `document.documentElement.dataset.theme === "dark"`)
		tb.navigate(first)
		tb.wait("dark after a reload", `document.documentElement.dataset.theme === "dark" && getComputedStyle(document.body).colorScheme !== "light"`)
		tb.click(`button#theme`)
		tb.wait("the system's again", `document.documentElement.dataset.theme === undefined && document.getElementById("theme").getAttribute("aria-label") === "Theme: follows the system"`)
	})
	t.Run("Complete an @path", func(t *testing.T) {
		tb := tb.in(t)
		if err := os.WriteFile(filepath.Join(f.srv.cmd.Dir, "deploy-notes.md"), []byte("remember the --force flag\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		os.Mkdir(filepath.Join(f.srv.cmd.Dir, "deploy"), 0o700)
		tb.waitLive()
		tb.do("type an @path", chromedp.Click(chromedp.ID("prompt"), chromedp.NodeVisible), typeInto(chromedp.ID("prompt"), "Read @dep"))
		tb.wait("the matching files", `[...document.querySelectorAll("#at-list [role=option]")].map((o) => o.textContent).join("|") === "deploy/|deploy-notes.md" && !document.getElementById("at-list").hidden`)
		tb.do("go down to the file", chromedp.KeyEvent(kb.ArrowDown))
		tb.wait("the file is selected", `document.querySelector("#at-list [aria-selected=true]")?.textContent === "deploy-notes.md" && document.getElementById("prompt").getAttribute("aria-activedescendant") === "at-1"`)
		tb.do("take it", pressEnter())
		tb.wait("the path in the message, the list gone", `document.getElementById("prompt").value === "Read @deploy-notes.md " && document.getElementById("at-list").hidden`)
		tb.do("finish and send", typeInto(chromedp.ID("prompt"), "please"), pressEnter())
		tb.wait("the attachment's chip", `[...document.querySelectorAll("#messages .msg.user .attached summary")].some((s) => s.textContent.includes("deploy-notes.md"))`)
		tb.wait("the answer", `document.querySelector("#messages")?.textContent.includes("Read it.")`)
		reqs := f.model.Requests()
		if body := string(reqs[len(reqs)-1].Body); !strings.Contains(body, "remember the --force flag") {
			t.Errorf("the completed file did not reach the model:\n%s", body)
		}
	})
	t.Run("Type on past an @path", func(t *testing.T) {
		// The list's answer comes late (a loaded machine): it must not open once the caret
		// left the @path, where it would take the Enter that sends.
		tb := tb.in(t)
		tb.waitLive()
		tb.holdFetch("GET", "/complete?", 400)
		typed := "Read @deploy-notes.md and tell me"
		tb.do("type past an @path", chromedp.Click(chromedp.ID("prompt"), chromedp.NodeVisible), typeInto(chromedp.ID("prompt"), typed))
		time.Sleep(time.Second) // the late answer
		if open := eval[bool](tb, `!document.getElementById("at-list").hidden`); open {
			t.Errorf("the list of files opened after the caret left the @path")
		}
		if got := eval[string](tb, `document.getElementById("prompt").value`); got != typed {
			t.Errorf("the message is %q, want %q", got, typed)
		}
		eval[bool](tb, `(document.getElementById("prompt").value = "", true)`)
	})
}

// TestBrowserPasteImage: an image pasted into the composer shows as a chip, goes with the
// message, and reaches the model; the sent message shows it as a captioned thumbnail.
func TestBrowserPasteImage(t *testing.T) {
	t.Parallel()
	f := newFixture(t, fakemodel.Turn{Text: "A **pasted** image."})
	b := newBrowser(t)
	tb := newTab(t, b, "main")
	page := f.newSession()
	tb.navigate(page)
	tb.waitLive()
	eval[bool](tb, `(() => {
		const png = Uint8Array.from(atob("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="), (c) => c.charCodeAt(0));
		const dt = new DataTransfer();
		dt.items.add(new File([png], "pasted.png", { type: "image/png" }));
		const prompt = document.getElementById("prompt");
		prompt.focus();
		prompt.dispatchEvent(new ClipboardEvent("paste", { clipboardData: dt, bubbles: true, cancelable: true }));
		return true;
	})()`)
	tb.wait("the chip", `document.querySelector("#chips .chip span")?.textContent.startsWith("pasted.png") && !!document.querySelector('#chips button[aria-label="Remove pasted.png"]')`)
	tb.send("What is this?")
	tb.wait("the answer", `document.querySelector("#messages .msg.assistant .md strong")?.textContent === "pasted" && !!document.querySelector("#status .idle")`)
	tb.wait("the thumbnail, captioned", `document.querySelector("#messages .msg.user figure.attached figcaption")?.textContent === "pasted.png"`)
	reqs := f.model.Requests()
	if len(reqs) == 0 || !strings.Contains(string(reqs[len(reqs)-1].Body), `"media_type":"image/png"`) {
		t.Errorf("the model's request lacks the pasted image")
	}
}
