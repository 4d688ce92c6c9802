package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"myco.dev/internal/fakemodel"
)

// notificationRecorder stands in for the browser's Notification, which headless Chromium
// does not show: each notification made is kept in window.__notes, and the permission is
// the browser's own (granted through DevTools). The tab also says it is hidden when the
// test sets window.__hidden: a headless browser shows every tab.
const notificationRecorder = `(() => {
	const Real = window.Notification;
	const notes = [];
	window.__notes = notes;
	window.__hidden = false;
	class Recorder {
		constructor(title, options) {
			this.title = title;
			this.body = (options && options.body) || "";
			this.tag = (options && options.tag) || "";
			notes.push(this);
		}
		close() { this.closed = true; }
		static get permission() { return Real.permission; }
		static requestPermission() { return Real.requestPermission(); }
	}
	window.Notification = Recorder;
	Object.defineProperty(document, "hidden", { get: () => window.__hidden, configurable: true });
})();`

// TestBrowserNotifications (issue 32): a session's Notify me and the sessions page's (for
// every session) ask the browser's permission on the click, say they are on and stay on
// across pages; while the tab is hidden, a session opted in notifies when its turn is done
// (its answer's first line) and when it comes to need you (why: its turn failed), a session
// not opted in does not, and with every session on it does; clicking the notification opens
// the session's page. The sessions page with its switch on is captured light and dark,
// wide and narrow.
func TestBrowserNotifications(t *testing.T) {
	t.Parallel()
	broken := fakemodel.Turn{Text: "Half an answer, and then", ChunkSize: 4, DelayMs: 5, Drop: true}
	f := newFixture(t,
		fakemodel.Turn{Text: "All tests pass.\n\nThe details follow."}, // the build's: done
		broken, // the docs': needs you, told to nobody
		broken, // the build's: needs you
		broken, // the docs', with every session on
	)
	build, docs := f.apiSession("Fix the build"), f.apiSession("Write the docs")
	b := newBrowser(t)
	tb := newTab(t, b, "notify")
	notes := notifications(t, f, b, tb)

	tb.navigate(f.srv.origin() + build.page)
	tb.waitLive()
	if got := eval[string](tb, `document.getElementById("notify").getAttribute("aria-label")`); got != "Notify me when this session needs you" {
		t.Errorf("the session's switch is named %q", got)
	}
	tb.click("#notify")
	tb.wait("the switch on, the states followed", `document.getElementById("notify").getAttribute("aria-pressed") === "true" && document.documentElement.dataset.notifications === "live"`)
	eval[bool](tb, `window.__hidden = true`)

	f.submit(build.id, "Run the tests")
	tb.wait("the notification of the answer", `window.__notes.length === 1`)
	if n := notes()[0]; n.Title != "Fix the build" || n.Body != "All tests pass." || n.Tag != "myco:"+build.page {
		t.Errorf("the answer's notification = %+v, want the session's title and the answer's first line", n)
	}
	f.submit(docs.id, "Write them")
	f.waitState(docs.id, "needs_you")
	f.submit(build.id, "Again")
	tb.wait("the notification of the failure", `window.__notes.length === 2`)
	n := notes()[1]
	if n.Title != "Fix the build" || !strings.HasPrefix(n.Body, "Its turn failed: ") || !strings.Contains(n.Body, "broke off") {
		t.Errorf("the failure's notification = %+v, want the session's title and why it needs you", n)
	}
	for _, n := range notes() {
		if n.Title == "Write the docs" {
			t.Errorf("a session not opted in notified: %+v", n)
		}
	}

	// Every session, from the sessions page; the session's own switch stays on.
	tb.navigate(f.srv.URL)
	if got := eval[string](tb, `document.getElementById("notify-all").getAttribute("aria-label")`); got != "Notify me when any session needs you" {
		t.Errorf("the sessions page's switch is named %q", got)
	}
	if eval[string](tb, `document.getElementById("notify-all").getAttribute("aria-pressed")`) != "false" {
		t.Error("every session is on before it was switched on")
	}
	tb.click("#notify-all")
	tb.wait("every session on, the states followed", `document.getElementById("notify-all").getAttribute("aria-pressed") === "true" && document.documentElement.dataset.notifications === "live"`)
	screens(t, tb, "notifications-on", "")
	eval[bool](tb, `window.__hidden = true`)
	f.submit(docs.id, "Once more")
	tb.wait("the other session's notification", `window.__notes.length === 1`)
	if n := notes()[0]; n.Title != "Write the docs" || !strings.HasPrefix(n.Body, "Its turn failed: ") {
		t.Errorf("the notification with every session on = %+v", n)
	}
	eval[bool](tb, `window.__notes[0].onclick(), true`)
	tb.wait("the session's page", `location.pathname === `+quoteJS(docs.page))
	tb.loaded()
	tb.wait("its switch says it is not on by itself", `document.getElementById("notify")?.getAttribute("aria-pressed") === "false"`)
	tb.navigate(f.srv.origin() + build.page)
	tb.wait("the build's switch still on", `document.getElementById("notify")?.getAttribute("aria-pressed") === "true"`)
}

// recorded is a notification the recorder kept.
// notifications grants f's origin the permission to notify in b and puts the
// notification recorder in every page tb loads from now on; it returns what reads the
// notifications recorded in tb's page.
func notifications(t *testing.T, f *fixture, b *browser, tb *tab) (notes func() []recorded) {
	t.Helper()
	grant, cancel := context.WithTimeout(b.ctx, stepTimeout)
	_, err := chromedp.CallBrowser(grant, cdpbrowser.SetPermission, cdpbrowser.SetPermissionParams{
		Permission: &cdpbrowser.PermissionDescriptor{Name: "notifications"}, Setting: cdpbrowser.PermissionSettingGranted, Origin: f.srv.origin()})
	cancel()
	if err != nil {
		t.Fatalf("grant the permission to notify: %v", err)
	}
	tb.do("the notification recorder", chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		_, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: notificationRecorder})
		return err
	}))
	return func() []recorded {
		return eval[[]recorded](tb, `window.__notes.map((n) => ({title: n.title, body: n.body, tag: n.tag}))`)
	}
}

type recorded struct {
	Title, Body, Tag string
}

// apiSession is a session the API made: its id and its page's path.
type apiSession struct{ id, page string }

// apiSession creates a session titled title through the API.
func (f *fixture) apiSession(title string) apiSession {
	f.t.Helper()
	var out struct {
		ID string `json:"session_id"`
	}
	f.api("POST", "sessions", map[string]any{"request_id": title, "title": title}, &out)
	return apiSession{id: out.ID, page: "/profiles/default/s/" + out.ID + "/"}
}

// submit sends text to session id through the API.
func (f *fixture) submit(id, text string) {
	f.t.Helper()
	f.api("POST", "sessions/"+id+"/actions", map[string]any{"request_id": text, "action": "submit", "text": text}, nil)
}

// waitState waits until session id is in state, its turn over.
func (f *fixture) waitState(id, state string) {
	f.t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		var snap struct {
			State string `json:"state"`
			Busy  bool   `json:"busy"`
		}
		f.api("GET", "sessions/"+id, nil, &snap)
		if snap.State == state && !snap.Busy {
			return
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("session %s is %s after %v, want %s", id, snap.State, waitTimeout, state)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// api sends a request to the profile's API and decodes its answer into out (nil: none).
func (f *fixture) api(method, path string, body, out any) {
	f.t.Helper()
	var rd *bytes.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	} else {
		rd = bytes.NewReader(nil)
	}
	req, _ := http.NewRequestWithContext(f.t.Context(), method, f.srv.URL+"api/"+path, rd)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		f.t.Fatalf("%s %s = %s", method, path, resp.Status)
	}
	if out != nil {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			f.t.Fatalf("%s %s: %v", method, path, err)
		}
	}
}
