package e2e

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"myco.dev/internal/fakemodel"
)

// TestBrowserWithoutSharedWorker runs a session page in a browser without SharedWorker,
// where each page streams on its own through htmx's SSE extension: an answer streams in
// live; then the stream is cut in the middle of a turn and kept down while the turn
// finishes (the banner shows); when it comes back htmx reconnects with Last-Event-ID and
// the page catches up to what a fresh load shows.
func TestBrowserWithoutSharedWorker(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	gate, open := f.gate("alone")
	f.model.Script(
		fakemodel.Turn{Text: "Hello from a page that streams **alone**.", ChunkSize: 5, DelayMs: 10},
		fakemodel.Turn{Text: "Checking.", ToolCalls: []fakemodel.ToolCall{bash("call_alone", gate)}},
		fakemodel.Turn{Text: "## Back\n\nThe command printed `{{tool_result}}`."},
	)
	session := f.newSession()
	b := newBrowser(t)
	tb := newTab(t, b, "alone")
	tb.do("no SharedWorker", chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		_, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: `delete window.SharedWorker;`})
		return err
	}))
	requests := tb.streamRequests()
	tb.navigate(session)
	if eval[bool](tb, `!!window.SharedWorker`) {
		t.Fatal("the page still has SharedWorker")
	}
	tb.waitLive()
	if reqs := requests(); len(reqs) != 1 {
		t.Errorf("the page opened %d event streams, want 1: %+v", len(reqs), reqs)
	}

	tb.send("Say hello")
	tb.wait("the answer", `document.querySelector("#messages .msg.assistant .md strong")?.textContent === "alone" && document.querySelector("#status .idle")`)
	if r := tb.record(); !strings.Contains(r.LiveText, "Hello from a page") {
		t.Errorf("#live-text streamed %q, want the answer", r.LiveText)
	}
	compareFresh(t, b, tb, session)

	tb.send("Run something while I lose the connection")
	tb.wait("the tool card runs", `document.querySelector("#tool-call_alone.running")`)
	restore := tb.cutStream()
	tb.waitFor(5*time.Second, "the connection-lost banner", `!document.getElementById("conn-banner").hidden`)
	open()
	waitServer(t, session, "Back")
	if eval[bool](tb, `document.getElementById("messages").textContent.includes("Back")`) {
		t.Fatal("the tab got the end of the turn while cut off; the cut did not cut")
	}
	restore()
	tb.wait("the tab caught up", `document.querySelector("#messages .msg.assistant .md h2")?.textContent === "Back" && document.querySelector("#status .idle")`)
	tb.wait("the banner hidden", `document.getElementById("conn-banner").hidden`)
	reqs := requests()
	if len(reqs) < 2 || reqs[len(reqs)-1].lastEventID == "" {
		t.Errorf("the event stream's requests %+v: want a reconnection that sends Last-Event-ID", reqs)
	}
	compareFresh(t, b, tb, session)
}

// cutStream cuts a page's own event stream: the browser aborts the open request (its
// connection closes, the server sees the page leave) and every new request of an event
// stream fails as the network being down, until the returned func brings it back.
//
// DevTools' offline emulation does not cut a response in flight (both
// Network.emulateNetworkConditions and its per-rule successor leave the stream open), so
// the stream's own AbortController does it.
func (tb *tab) cutStream() (restore func()) {
	tb.t.Helper()
	var (
		mu  sync.Mutex
		cut = true
	)
	paused := chromedp.Events(tb.ctx, fetch.RequestPaused)
	tb.do("intercept event streams", chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		_, err := chromedp.Call(ctx, fetch.Enable, fetch.EnableParams{Patterns: []*fetch.RequestPattern{{URLPattern: "*/events?*"}}})
		return err
	}))
	tb.wg.Go(func() {
		for ev, err := range paused {
			if err != nil {
				return
			}
			mu.Lock()
			down := cut
			mu.Unlock()
			if down {
				chromedp.Call(tb.ctx, fetch.FailRequest, fetch.FailRequestParams{RequestID: ev.RequestID, ErrorReason: network.ErrorReasonInternetDisconnected})
			} else {
				chromedp.Call(tb.ctx, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: ev.RequestID})
			}
		}
	})
	tb.allow(`net::ERR_INTERNET_DISCONNECTED`)
	tb.allow(`htmx:sse:error`)
	eval[bool](tb, `(document.getElementById("transcript")._htmx.sse.abortController.abort(), true)`)
	return func() {
		mu.Lock()
		cut = false
		mu.Unlock()
	}
}

type streamRequest struct {
	url, lastEventID string
}

// streamRequests records the page's requests of its own event stream, from now on; the
// returned func lists them.
func (tb *tab) streamRequests() func() []streamRequest {
	tb.t.Helper()
	var (
		mu   sync.Mutex
		reqs []streamRequest
	)
	sent := chromedp.Events(tb.ctx, network.RequestWillBeSent)
	tb.do("enable the network domain", chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		_, err := chromedp.Call(ctx, network.Enable, network.EnableParams{})
		return err
	}))
	tb.wg.Go(func() {
		for ev, err := range sent {
			if err != nil {
				return
			}
			if strings.Contains(ev.Request.URL, "/events?") {
				mu.Lock()
				reqs = append(reqs, streamRequest{url: ev.Request.URL, lastEventID: header(ev.Request.Headers, "Last-Event-ID")})
				mu.Unlock()
			}
		}
	})
	return func() []streamRequest {
		mu.Lock()
		defer mu.Unlock()
		return append([]streamRequest(nil), reqs...)
	}
}
