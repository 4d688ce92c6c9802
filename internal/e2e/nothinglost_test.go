package e2e

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"myco.dev/internal/fakemodel"
)

// TestBrowserNothingLost: what a user saw survives a Stop and a failure, and a failure can
// be sent again. Stop during a bash call that printed keeps its lines after a reload; a
// model stream that breaks mid-answer keeps the partial answer, says so in plain words
// with the detail folded, and Retry produces the next answer; a bash that exits 1 says
// exit 1, not ok; a message sent while a turn runs is queued and runs after it; a sent
// message can be edited and sent again.
func TestBrowserNothingLost(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	gate, open := f.gate("queue")
	f.model.Script(
		fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{bash("call_print", "echo line one; echo line two; sleep 30")}},
		fakemodel.Turn{Text: "Half of a **long** answer, and then", ChunkSize: 4, DelayMs: 20, Drop: true},
		fakemodel.Turn{Text: "The whole answer after the retry."},
		fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{bash("call_false", "echo oops; exit 1")}},
		fakemodel.Turn{Text: "It failed with exit 1."},
		fakemodel.Turn{Text: "Working on it slowly.", ToolCalls: []fakemodel.ToolCall{bash("call_wait", gate)}},
		fakemodel.Turn{Text: "The first one is done."},
		fakemodel.Turn{Text: "The queued message ran."},
		fakemodel.Turn{Text: "The answer to the edited message."},
	)
	b := newBrowser(t)
	tb := newTab(t, b, "main")
	page := f.newSession()
	tb.navigate(page)
	tb.waitLive()

	t.Run("Stop keeps what bash printed", func(t *testing.T) {
		tb := tb.in(t)
		tb.send("Print two lines, then wait")
		tb.wait("the printed lines stream into the card", `document.querySelector("#tool-call_print .tool-output")?.textContent.includes("line two")`)
		tb.click("#stop")
		tb.wait("the stop note", `document.querySelector("#messages .msg.end .note.cancelled")`)
		tb.navigate(page)
		tb.waitLive()
		tb.wait("after a reload, the stopped card", `document.querySelector("#tool-call_print .tool-status")?.textContent.trim() === "stopped"`)
		out := eval[string](tb, `document.querySelector("#tool-call_print .tool-output")?.textContent ?? ""`)
		if !strings.Contains(out, "line one\nline two") || strings.Contains(out, "cancelled while running") {
			t.Errorf("the stopped card's output = %q, want the lines it printed and only them", out)
		}
		if !eval[bool](tb, `!!document.querySelector("#messages .msg.end form.retry button")`) {
			t.Error("the stopped turn has no Retry")
		}
	})
	t.Run("a broken stream keeps the partial answer, and Retry answers", func(t *testing.T) {
		tb := tb.in(t)
		tb.send("Explain it")
		tb.wait("the failure note", `[...document.querySelectorAll("#messages .msg.end .note.error")].some(n => n.textContent.includes("broke off"))`)
		tb.navigate(page)
		tb.waitLive()
		tb.wait("after a reload, the partial answer, marked", `[...document.querySelectorAll("#messages .msg.assistant")].some(m => m.querySelector(".md strong")?.textContent === "long" && m.querySelector(".note.partial"))`)
		detail := eval[string](tb, `[...document.querySelectorAll("#messages .msg.end details.detail pre")].pop()?.textContent ?? ""`)
		if detail == "" {
			t.Error("the failure has no folded detail")
		}
		if eval[bool](tb, `[...document.querySelectorAll("#messages .msg.end details.detail")].pop()?.open`) {
			t.Error("the technical detail is not folded")
		}
		if n := eval[int](tb, `document.querySelectorAll("#messages form.retry button").length`); n != 1 {
			t.Errorf("%d Retry buttons, want one: on the last turn's end", n)
		}
		tb.click("#messages form.retry button")
		tb.wait("the retried answer", `document.querySelector("#messages")?.textContent.includes("The whole answer after the retry.") && !!document.querySelector("#status .idle")`)
		if eval[bool](tb, `!!document.querySelector("#messages form.retry button")`) {
			t.Error("Retry is still offered after the turn answered")
		}
	})
	t.Run("a failed bash says its exit status", func(t *testing.T) {
		tb := tb.in(t)
		tb.send("Run false")
		tb.wait("the failed card", `document.querySelector("#tool-call_false.error .tool-status")?.textContent.trim() === "exit 1"`)
		tb.wait("the answer", `document.querySelector("#messages")?.textContent.includes("It failed with exit 1.") && !!document.querySelector("#status .idle")`)
	})
	t.Run("a message sent while busy is queued and runs after the turn", func(t *testing.T) {
		tb := tb.in(t)
		tb.send("Answer slowly")
		tb.wait("the turn runs", `document.querySelector("#tool-call_wait.running") && document.getElementById("stop")`)
		tb.send("And then this")
		tb.wait("the composer says it is queued", `document.getElementById("composer-notice")?.textContent.includes("Queued")`)
		tb.wait("the queued message shows, with Edit and Cancel", `document.querySelector("#queue .queued-text")?.textContent === "And then this" && !!document.querySelector("#queue summary[title]") && !!document.querySelector("#queue button[title^='Withdraw']")`)
		open()
		tb.wait("the queued message runs after the turn", `document.querySelector("#messages")?.textContent.includes("The queued message ran.") && !!document.querySelector("#status .idle")`)
		if n := eval[int](tb, `document.querySelectorAll("#queue .queued").length`); n != 0 {
			t.Errorf("%d messages still queued", n)
		}
		users := eval[string](tb, `[...document.querySelectorAll("#messages .msg.user .plain")].slice(-2).map(p => p.textContent).join("|")`)
		if users != "Answer slowly|And then this" {
			t.Errorf("the last user messages = %q, want the turn's, then the queued one", users)
		}
	})
	t.Run("Edit a sent message and send it again", func(t *testing.T) {
		tb := tb.in(t)
		eval[bool](tb, `([...document.querySelectorAll("#messages .msg.user details.edit-message > summary")].pop().click(), true)`)
		tb.wait("the edit form, holding the message", `[...document.querySelectorAll("#messages .msg.user details.edit-message[open] textarea")].pop()?.value === "And then this"`)
		eval[bool](tb, `([...document.querySelectorAll("#messages .msg.user details.edit-message[open] textarea")].pop().value = "", true)`)
		tb.do("type the edit", typeInto(chromedp.CSS(`#messages .msg.user details.edit-message[open] textarea`), "Something else instead"))
		tb.click(`#messages .msg.user details.edit-message[open] button[type=submit]`)
		tb.wait("the edit's answer", `document.querySelector("#messages")?.textContent.includes("The answer to the edited message.") && !!document.querySelector("#status .idle")`)
		if eval[bool](tb, `document.querySelector("#messages")?.textContent.includes("The queued message ran.")`) {
			t.Error("the answer to the message before the edit is still in the active thread")
		}
		if n := eval[int](tb, `document.querySelectorAll("#threads li").length`); n < 2 {
			t.Errorf("the thread list has %d threads, want the earlier one kept", n)
		}
	})
}
