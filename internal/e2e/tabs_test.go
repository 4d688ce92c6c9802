package e2e

import (
	"encoding/json"
	"net/http"
	"testing"

	"myco.dev/internal/fakemodel"
)

// TestBrowserTabs opens one session in two tabs, which share the browser's one event
// connection: a prompt sent from one shows, streamed and answered, in both; then a tab is
// closed in the middle of a turn, and the turn carries on to its answer in the other
// (closing a tab never stops the work).
func TestBrowserTabs(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	gate, open := f.gate("tabs")
	f.model.Script(
		fakemodel.Turn{Text: "Hello from **both** tabs.", ChunkSize: 4, DelayMs: 10},
		fakemodel.Turn{Text: "Working on it.", ToolCalls: []fakemodel.ToolCall{bash("call_tabs", gate)}},
		fakemodel.Turn{Text: "## Finished\n\nThe command printed `{{tool_result}}`."},
	)
	page := f.newSession()
	b := newBrowser(t)
	one, two := newTab(t, b, "one"), newTab(t, b, "two")
	for _, tb := range []*tab{one, two} {
		tb.navigate(page)
		tb.waitLive()
		if state := eval[string](tb, `document.visibilityState`); state != "visible" {
			t.Fatalf("tab %s is %s, want visible (a hidden tab pauses its stream)", tb.name, state)
		}
	}

	if n := eventStreams(t, f.srv); n != 1 {
		t.Errorf("the server has %d event streams open for two tabs of one browser, want 1 (the events worker's)", n)
	}

	two.send("Say hello")
	for _, tb := range []*tab{one, two} {
		tb.wait("the answer in tab "+tb.name, `document.querySelector("#messages .msg.assistant .md strong")?.textContent === "both" && document.querySelector("#status .idle")`)
		tb.wait("the prompt in tab "+tb.name, `document.querySelector("#messages .msg.user .plain")?.textContent.includes("Say hello")`)
		if r := tb.record(); r.LiveText == "" || !r.SawBusy {
			t.Errorf("tab %s: streamed %q, busy seen %v; want the answer streamed live in every tab", tb.name, r.LiveText, r.SawBusy)
		}
	}

	two.send("Run something, then I close this tab")
	for _, tb := range []*tab{one, two} {
		tb.wait("the tool card runs in tab "+tb.name, `document.querySelector("#tool-call_tabs.running")`)
	}
	two.close()
	open()
	one.wait("the turn's answer", `document.querySelector("#messages .msg.assistant .md h2")?.textContent === "Finished" && document.querySelector("#tool-call_tabs.ok") && document.querySelector("#status .idle")`)
	if eval[bool](one, `!!document.querySelector("#messages .msg.end")`) {
		t.Error("the turn shows an end note (stopped or failed) after a tab closed, want it answered")
	}
	compareFresh(t, b, one, page)
}

// eventStreams is the number of browser event streams the server has open (its /status).
func eventStreams(t *testing.T, s *server) int {
	t.Helper()
	resp, err := http.Get(s.origin() + "/status")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st struct {
		EventStreams *int `json:"event_streams"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil || st.EventStreams == nil {
		t.Fatalf("GET /status: %v, %s: want JSON with event_streams", err, resp.Status)
	}
	return *st.EventStreams
}
