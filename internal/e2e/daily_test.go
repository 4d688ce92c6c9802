package e2e

import (
	"strings"
	"testing"

	"myco.dev/internal/fakemodel"
)

// streamingAnswer is an answer with every kind of block, long enough to stream for a few
// seconds at the pace the tests set.
const streamingAnswer = "## The plan\n\nFirst a **bold** claim and some `code`.\n\n" +
	"| step | what |\n|---|---|\n| 1 | read the code |\n| 2 | fix the test |\n\n" +
	"```go\nfunc main() {\n\tprintln(\"hi\")\n}\n```\n\n" +
	"- one item\n- another item\n\nThen a long closing paragraph that keeps the stream going for a while, " +
	"so that the page can be looked at, and reloaded, while it is still arriving. " +
	"It goes on and on, word after word, as answers do when they explain themselves at length.\n\n" +
	"## The end\n\nThat is all."

// TestBrowserStreamingMarkdown: an answer's Markdown is rendered while it streams (the
// heading, the table and the highlighted code block are there before the turn ends), and a
// page reloaded in the middle of it shows the beginning of the answer at once, then the
// rest as it comes; the finished answer is what a fresh load shows.
func TestBrowserStreamingMarkdown(t *testing.T) {
	t.Parallel()
	f := newFixture(t, fakemodel.Turn{Text: streamingAnswer, ChunkSize: 5, DelayMs: 25})
	b := newBrowser(t)
	tb := newTab(t, b, "main")
	page := f.newSession()
	tb.navigate(page)
	tb.waitLive()
	tb.send("Explain the plan")

	tb.wait("the heading, rendered while the answer streams",
		`document.querySelector("#live-md h2")?.textContent === "The plan" && !!document.querySelector("#status .status-bar.busy")`)
	tb.wait("the table and the highlighted code, while it streams",
		`!!document.querySelector("#live-md table td") && !!document.querySelector("#live-md pre code, #live-md pre .ch-kd, #live-md .chroma") && !!document.querySelector("#status .status-bar.busy")`)
	if eval[bool](tb, `document.getElementById("live-text").textContent.includes("| step |")`) {
		t.Error("the table's pipes show as text after it settled")
	}

	// Reload in the middle: the start of the answer is on the page as it loads.
	tb.navigate(page)
	if !eval[bool](tb, `document.querySelector("#live-md h2")?.textContent === "The plan" && !!document.querySelector("#live-md table")`) {
		t.Errorf("a reload mid-stream lacks the start of the answer: %q", eval[string](tb, `document.getElementById("live").innerHTML.slice(0, 400)`))
	}
	tb.wait("the rest of the answer, then the end of the turn",
		`[...document.querySelectorAll("#messages .msg.assistant .md h2")].some((h) => h.textContent === "The end") && !!document.querySelector("#status .idle")`)
	text := eval[string](tb, `document.querySelector("#messages .msg.assistant .md").textContent`)
	if !strings.Contains(text, "The plan") || !strings.Contains(text, "That is all.") || strings.Count(text, "The plan") != 1 {
		t.Errorf("the saved answer = %q, want it whole and once", text)
	}
	compareFresh(t, b, tb, page)
}
