package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"myco.dev/internal/fakemodel"
)

// longAnswer is an answer taller than the window.
func longAnswer(title string) string {
	var b strings.Builder
	b.WriteString("## " + title + "\n\n")
	for i := range 30 {
		b.WriteString("Paragraph " + itoa(i+1) + " of a long answer, long enough to push the end of the transcript below the window.\n\n")
	}
	b.WriteString("The last line.")
	return b.String()
}

// endVisible is true when the last message's end is in the window, above the status bar,
// and the status bar is above the composer: nothing the reader needs is covered.
const endVisible = `(() => {
  const msgs = document.querySelectorAll("#messages > .msg");
  const last = msgs[msgs.length - 1];
  if (!last) return false;
  const end = last.getBoundingClientRect().bottom, status = document.getElementById("status").getBoundingClientRect(),
    composer = document.getElementById("composer-slot").getBoundingClientRect();
  return end <= status.top + 1 && status.bottom <= composer.top + 1 && composer.bottom <= innerHeight + 1;
})()`

// where describes the positions endVisible compares, for a failure message.
const where = `JSON.stringify({scrollY, innerHeight, scrollHeight: document.documentElement.scrollHeight,
  lastEnd: [...document.querySelectorAll("#messages > .msg")].pop()?.getBoundingClientRect().bottom,
  status: document.getElementById("status").getBoundingClientRect().top, composer: document.getElementById("composer-slot").getBoundingClientRect().top})`

// TestBrowserFollowsTheEnd checks that a session shows its end, where the answer finishes
// above the status bar and the composer: after a turn that streamed a long answer, and
// when the page is opened afresh.
func TestBrowserFollowsTheEnd(t *testing.T) {
	t.Parallel()
	f := newFixture(t, fakemodel.Turn{Text: longAnswer("A long answer"), ChunkSize: 200})
	page := f.newSession()
	b := newBrowser(t)
	tb := newTab(t, b, "follow")
	tb.navigate(page)
	tb.waitLive()
	tb.send("Write a lot")
	tb.wait("the answer", `document.querySelector("#messages .msg.assistant .md")?.textContent.includes("The last line.") && document.querySelector("#status .idle")`)
	tb.waitExplained(5*time.Second, "the end of the answer in view after the turn", endVisible, where)

	tb.navigate(page)
	tb.waitExplained(5*time.Second, "the end in view on a fresh load", endVisible, where)
}

// TestBrowserStopWhileScrolledUp scrolls up during a long turn, as a reader does: the page
// stops following and offers "↓ latest", and the Stop button stays in view and clickable
// (not covered by the composer); a click on it stops the turn, and "↓ latest" goes back to
// the end.
func TestBrowserStopWhileScrolledUp(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	gate, _ := f.gate("never")
	f.model.Script(fakemodel.Turn{Text: longAnswer("Before the command"), ToolCalls: []fakemodel.ToolCall{bash("call_long", gate)}})
	page := f.newSession()
	b := newBrowser(t)
	tb := newTab(t, b, "scroll")
	tb.navigate(page)
	tb.waitLive()
	tb.send("Write a lot, then wait")
	tb.wait("the call runs", `document.querySelector("#tool-call_long.running") && document.getElementById("stop")`)

	// The reader clicks into the transcript (leaving the composer) and presses Home.
	tb.do("scroll up", chromedp.Click(chromedp.CSS("#messages .msg.user .plain"), chromedp.NodeVisible), chromedp.KeyEvent(kb.Home))
	tb.wait("the ↓ latest button", `!document.getElementById("to-latest").hidden && scrollY === 0`)
	if !eval[bool](tb, `(() => { const s = document.getElementById("stop"), r = s.getBoundingClientRect();
  const at = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
  return r.bottom <= innerHeight && (at === s || s.contains(at)); })()`) {
		t.Fatalf("the Stop button is covered or out of view while scrolled up: %s", eval[string](tb, where))
	}
	tb.click("#stop")
	tb.wait("the turn stopped", `document.querySelector("#messages .msg.end .note.cancelled") && document.querySelector("#status .idle")`)
	tb.click("#to-latest")
	tb.wait("back at the end", `document.getElementById("to-latest").hidden && innerHeight + scrollY >= document.documentElement.scrollHeight - 2`)
}

// TestBrowserScrollBeforeItsEvent: the transcript changes between a reader's scroll up
// and the scroll's event (which comes with the next frame): the page stays where the
// reader went, and offers "↓ latest".
func TestBrowserScrollBeforeItsEvent(t *testing.T) {
	t.Parallel()
	f := newFixture(t, fakemodel.Turn{Text: longAnswer("A long answer")})
	page := f.newSession()
	b := newBrowser(t)
	tb := newTab(t, b, "race")
	tb.navigate(page)
	tb.waitLive()
	tb.send("Write a lot")
	tb.wait("the answer, at the end", `document.querySelector("#messages .msg.assistant .md")?.textContent.includes("The last line.") && document.querySelector("#status .idle") && innerHeight + scrollY >= document.documentElement.scrollHeight - 2`)
	eval[bool](tb, `(() => { scrollTo(0, 0); document.getElementById("messages").append(document.createComment("late")); return true; })()`)
	time.Sleep(300 * time.Millisecond) // frames for a wrong scroll to happen
	if y := eval[float64](tb, `scrollY`); y != 0 {
		t.Errorf("the page went back to %v after the reader scrolled to the top", y)
	}
	tb.wait("the ↓ latest button", `!document.getElementById("to-latest").hidden`)
}
