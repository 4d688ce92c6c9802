package e2e

import (
	"testing"
	"time"

	"myco.dev/internal/fakemodel"
)

// TestBrowserReconnect cuts the browser's event connection in the middle of a turn and
// keeps it down while the turn finishes, then lets it come back: the events worker
// subscribes the page again from the last event it got, the page catches up, and its
// transcript, status and head are what a fresh load of the page shows in a new tab. The
// banner says the connection is lost while it is, and goes when it is back.
//
// The cut is made in the worker (see [cutWorkerStream]): DevTools' offline emulation does
// not cut a response in flight, and its request interception does not see a shared
// worker's requests.
func TestBrowserReconnect(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	gate, open := f.gate("cut")
	f.model.Script(
		fakemodel.Turn{Text: "Checking the machine first.", ToolCalls: []fakemodel.ToolCall{bash("call_wait", gate)}},
		fakemodel.Turn{Text: "## All done\n\nThe command printed `{{tool_result}}` while you were away.\n\n```sh\necho hi\n```\n"},
	)
	page := f.newSession()
	b := newBrowser(t)
	tb := newTab(t, b, "cut")
	tb.navigate(page)
	tb.waitLive()
	tb.send("Run something while I lose the connection")
	tb.wait("the tool card runs", `document.querySelector("#tool-call_wait.running")`)

	w := b.worker(t)
	path := quoteJS(eval[string](tb, `location.pathname + "events"`))
	last := eval[string](w, `[...pages.values()].find((p) => p.url === `+path+`).after`)
	restore := cutWorkerStream(w)
	tb.waitFor(5*time.Second, "the connection-lost banner", `!document.getElementById("conn-banner").hidden`)

	// The turn finishes meanwhile; the server has it, the tab does not.
	open()
	waitServer(t, page, "All done")
	if eval[bool](tb, `document.getElementById("messages").textContent.includes("All done")`) {
		t.Fatal("the tab got the end of the turn while cut off; the cut did not cut")
	}

	restore()
	tb.wait("the tab caught up", `document.querySelector("#messages .msg.assistant .md h2")?.textContent === "All done" && document.querySelector("#status .idle")`)
	tb.wait("the banner hidden", `document.getElementById("conn-banner").hidden`)
	again := eval[[]string](w, `self.__subscribes.filter((s) => s.op === "subscribe" && s.url === `+path+`).map((s) => s.after)`)
	if len(again) == 0 || again[0] != last {
		t.Errorf("the page was subscribed again from %q, want from %q, the last event it got before the cut", again, last)
	}
	compareFresh(t, b, tb, page)
}

// cutWorkerStream closes the events worker's stream and makes its new ones fail, as the
// network going down does, until the returned func brings it back. The worker's fetch is
// wrapped too, so that self.__subscribes lists the subscriptions it makes from then on.
func cutWorkerStream(w *tab) (restore func()) {
	w.t.Helper()
	eval[bool](w, `(() => {
  self.__subscribes = [];
  const realFetch = self.fetch;
  self.fetch = (url, opts) => {
    try { if (opts && typeof opts.body === "string") self.__subscribes.push(JSON.parse(opts.body)); } catch (e) {}
    return realFetch(url, opts);
  };
  self.__EventSource = EventSource;
  self.EventSource = class {
    static CONNECTING = 0; static OPEN = 1; static CLOSED = 2;
    constructor() { this.readyState = 2; setTimeout(() => this.onerror && this.onerror(new Event("error")), 0); }
    close() {}
  };
  const s = stream.source;
  s.close();
  s.onerror(new Event("error"));
  return true;
})()`)
	return func() {
		w.t.Helper()
		eval[bool](w, `(self.EventSource = self.__EventSource, true)`)
	}
}

// TestBrowserServerRestart stops the server (SIGTERM) in the middle of a turn: the tab
// shows the connection-lost banner within seconds while the server is down; a new server
// on the same port and MYCO_HOME brings it back with exactly one re-render (the page's
// event ids are of another boot), the banner hides, and the page shows the turn as
// stopped, as a fresh load does.
func TestBrowserServerRestart(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	gate, _ := f.gate("never")
	f.model.Script(fakemodel.Turn{Text: "Waiting on something.", ToolCalls: []fakemodel.ToolCall{bash("call_hold", gate)}})
	page := f.newSession()
	b := newBrowser(t)
	tb := newTab(t, b, "restart")
	tb.navigate(page)
	tb.waitLive()
	tb.send("Hold on")
	tb.wait("the tool card runs", `document.querySelector("#tool-call_hold.running")`)
	before := tb.record()

	b.worker(t) // its console is checked too
	f.srv.stop()
	tb.waitFor(10*time.Second, "the connection-lost banner", `!document.getElementById("conn-banner").hidden`)

	f.srv = startServer(t, f.home, f.srv.Addr)
	tb.waitFor(30*time.Second, "the banner hidden after the reconnection", `document.getElementById("conn-banner").hidden`)
	// The stop may have reached the page before the old server went; the re-render comes
	// once the new server has started the profile's worker.
	tb.wait("the re-render from the new server", `window.__e2e.resets > `+itoa(before.Resets))
	tb.wait("the turn shown stopped", `document.querySelector("#messages .msg.end .note.cancelled") && document.querySelector("#tool-call_hold.unknown") && document.querySelector("#status .idle")`)
	compareFresh(t, b, tb, page)
	if n := tb.record().Resets - before.Resets; n != 1 {
		t.Errorf("%d re-renders of the transcript after the restart, want 1", n)
	}
}
