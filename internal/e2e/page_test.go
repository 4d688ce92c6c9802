package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// What a test does in a page, as a user would (navigate, click, type, press keys), and
// how it looks (evaluate, wait, record).

// do runs actions within stepTimeout; a failure ends the test with what the page showed.
func (tb *tab) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, stepTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		tb.fail("%s: %v", what, err)
	}
}

// navigate loads url and waits for its load event.
func (tb *tab) navigate(url string) {
	tb.t.Helper()
	tb.do("navigate to "+url, chromedp.Navigate(url))
	tb.loaded()
}

// loaded readies a page that a navigation loaded, whatever started it (a URL, a click, a
// key): the events workers run (see resumeWorkers) and the page recorder is in it.
func (tb *tab) loaded() {
	tb.b.resumeWorkers()
	tb.installRecorder()
}

// navigateDocument loads a workspace document (served sandboxed, without scripts or live
// updates) and waits for its load event, without the page recorder a session page gets:
// there is nothing for it to record, and evaluating it in the sandboxed document is where
// a loaded machine's Chromium crashed (twice, a segmentation fault of the browser).
func (tb *tab) navigateDocument(url string) {
	tb.t.Helper()
	tb.do("navigate to "+url, chromedp.Navigate(url))
}

// clickAndLoadResponse clicks sel and returns the response of the page it navigates to.
func (tb *tab) clickAndLoadResponse(sel string) *network.Response {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, stepTimeout)
	defer cancel()
	resp, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.CSS(sel), chromedp.NodeVisible))
	if err != nil {
		tb.fail("click %s and wait for the page: %v", sel, err)
	}
	tb.loaded()
	return resp
}

// pressAndLoad presses key and waits for the page it navigates to.
func (tb *tab) pressAndLoad(key string) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, stepTimeout)
	defer cancel()
	if _, err := chromedp.RunResponse(ctx, chromedp.KeyEvent(key)); err != nil {
		tb.fail("press %q and wait for the page: %v", key, err)
	}
	tb.loaded()
}

// header returns a response header, whatever its case.
func header(h network.Headers, name string) string {
	for k, v := range h {
		if strings.EqualFold(k, name) {
			s, _ := v.(string)
			return s
		}
	}
	return ""
}

func itoa(n int) string { return strconv.Itoa(n) }

// click clicks the element sel selects (the mouse, at its centre).
func (tb *tab) click(sel string) {
	tb.t.Helper()
	tb.do("click "+sel, chromedp.Click(chromedp.CSS(sel), chromedp.NodeVisible))
}

// clickAndSee clicks sel and waits until the control has said text at some moment since:
// a label such as "Copied" shows for a moment only, which a poll under load can miss.
func (tb *tab) clickAndSee(sel, text string) {
	tb.t.Helper()
	q := quoteJS(sel)
	eval[bool](tb, `(() => { const el = document.querySelector(`+q+`); window.__said = [];
  new MutationObserver(() => __said.push(el.textContent)).observe(el, {childList: true, characterData: true, subtree: true});
  return true; })()`)
	tb.click(sel)
	tb.waitExplained(waitTimeout, sel+" saying "+text, `window.__said.includes(`+quoteJS(text)+`)`,
		`JSON.stringify({said: window.__said, now: document.querySelector(`+q+`)?.textContent, scrollY, focus: document.activeElement?.id})`)
}

// holdFetch makes the page's fetches whose method is method and whose URL holds part
// wait ms before their answer reaches the page, as on a slow link.
func (tb *tab) holdFetch(method, part string, ms int) {
	tb.t.Helper()
	eval[bool](tb, `(() => { const f = window.fetch;
  window.fetch = async (url, o) => { const r = await f(url, o);
    if ((o?.method || "GET").toUpperCase() === `+quoteJS(method)+` && String(url).includes(`+quoteJS(part)+`)) await new Promise((ok) => setTimeout(ok, `+itoa(ms)+`));
    return r; };
  return true; })()`)
}

// wheel turns the mouse wheel by dy pixels (negative: up) over the middle of the window,
// as a reader scrolls.
func (tb *tab) wheel(dy float64) {
	tb.t.Helper()
	tb.do("turn the wheel", chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, input.DispatchMouseEvent, input.DispatchMouseEventParams{
			// DeltaX must be sent, and a zero is left out of the JSON: one pixel sideways,
			// on pages that do not scroll sideways.
			Type: input.DispatchMouseEventTypeMouseWheel, X: 400, Y: 300, DeltaX: 1, DeltaY: dy})
		return err
	}))
}

// clickAndLoad clicks sel and waits for the page it navigates to.
func (tb *tab) clickAndLoad(sel string) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, stepTimeout)
	defer cancel()
	if _, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.CSS(sel), chromedp.NodeVisible)); err != nil {
		tb.fail("click %s and wait for the page: %v", sel, err)
	}
	tb.loaded()
}

// send types text into the composer and presses Enter, as a user does.
func (tb *tab) send(text string) {
	tb.t.Helper()
	tb.waitExplained(waitTimeout, "the composer is ready", `(() => { const p = document.getElementById('prompt'); return !!p && !p.disabled && p.value === ''; })()`,
		`(() => { const p = document.getElementById('prompt'); return JSON.stringify({value: p?.value, disabled: p?.disabled, prompts: document.querySelectorAll('#prompt').length, focus: document.activeElement?.id}); })()`)
	tb.do("type "+text, chromedp.Click(chromedp.ID("prompt"), chromedp.NodeVisible), typeInto(chromedp.ID("prompt"), text))
	tb.do("press Enter", pressEnter())
}

// startSession types text into the New session page's message and presses Enter, as a
// user starts a session, and waits for the session's page.
func (tb *tab) startSession(text string) {
	tb.t.Helper()
	tb.wait("the new session's composer", `document.getElementById("new-session-form") && document.getElementById("prompt")`)
	tb.do("type "+text, chromedp.Click(chromedp.ID("prompt"), chromedp.NodeVisible), typeInto(chromedp.ID("prompt"), text))
	ctx, cancel := context.WithTimeout(tb.ctx, stepTimeout)
	defer cancel()
	if _, err := chromedp.RunResponse(ctx, pressEnter()); err != nil {
		tb.fail("press Enter and wait for the session's page: %v", err)
	}
	tb.loaded()
	tb.wait("the session's page", `document.getElementById("transcript") && document.getElementById("prompt")`)
}

// typeInto focuses the element sel finds and types text into it, key by key. It stands in
// for chromedp.SendKeys, which (v0.23.1) reads the node's attributes without the node's
// lock: a data race with the DOM events of a page that changes the element's attributes,
// which htmx does.
func typeInto[S chromedp.Selectable](sel S, text string) chromedp.Action[chromedp.Void] {
	return chromedp.Steps(chromedp.Focus(sel, chromedp.NodeVisible), chromedp.KeyEvent(text))
}

// pressEnter presses Enter as a keyboard does: one key-down that carries its text (the page
// makes its keypress from that same event, so a handler that prevents the key-down prevents
// the newline), then the key-up. chromedp.KeyEvent sends the text as a separate char event,
// which lands wherever the focus is by then: in the fresh composer, when the answer to the
// submit came first, as a stray newline.
func pressEnter() chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		down := input.DispatchKeyEventParams{Type: input.DispatchKeyEventTypeKeyDown, Key: "Enter", Code: "Enter",
			WindowsVirtualKeyCode: 13, NativeVirtualKeyCode: 13, Text: "\r", UnmodifiedText: "\r"}
		up := down
		up.Type, up.Text, up.UnmodifiedText = input.DispatchKeyEventTypeKeyUp, "", ""
		for _, ev := range []input.DispatchKeyEventParams{down, up} {
			if _, err := cdp.Call(ctx, t, input.DispatchKeyEvent, ev); err != nil {
				return err
			}
		}
		return nil
	})
}

// eval evaluates a JavaScript expression in the page.
func eval[T any](tb *tab, expr string) T {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, stepTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		tb.fail("evaluate %s: %v", expr, err)
	}
	return v
}

// await evaluates a JavaScript expression whose value is a promise, and waits for it.
func await[T any](tb *tab, expr string) T {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, stepTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		tb.fail("evaluate %s: %v", expr, err)
	}
	return v
}

// wait waits until the JavaScript expression cond is true, within waitTimeout.
//
// It evaluates cond from here every 25 ms rather than with chromedp.Poll, whose task runs
// in the page and ends with it: a wait may span a navigation.
func (tb *tab) wait(what, cond string) {
	tb.t.Helper()
	tb.waitFor(waitTimeout, what, cond)
}

func (tb *tab) waitFor(timeout time.Duration, what, cond string) {
	tb.t.Helper()
	tb.waitExplained(timeout, what, cond, "")
}

// waitExplained is waitFor whose failure also shows the value of the JavaScript
// expression explain, evaluated then.
func (tb *tab) waitExplained(timeout time.Duration, what, cond, explain string) {
	tb.t.Helper()
	if ok, last := tb.poll(timeout, cond); !ok {
		if explain != "" {
			what += " (" + eval[string](tb, explain) + ")"
		}
		tb.fail("waited %v for %s (%s); last error %v", timeout, what, cond, last)
	}
}

// poll reports whether cond became true within timeout, and the last evaluation error.
func (tb *tab) poll(timeout time.Duration, cond string) (bool, error) {
	ctx, cancel := context.WithTimeout(tb.ctx, timeout)
	defer cancel()
	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool]("!!("+cond+")"))
		if err == nil && ok {
			return true, nil
		}
		if err != nil && !errors.Is(err, context.DeadlineExceeded) {
			last = err // a navigation may be under way
		}
		select {
		case <-ctx.Done():
			return false, last
		case <-tick.C:
		}
	}
}

// fail ends the test with the message, the page's URL and body, and a screenshot.
func (tb *tab) fail(format string, args ...any) {
	tb.t.Helper()
	msg := fmt.Sprintf(format, args...)
	ctx, cancel := context.WithTimeout(tb.ctx, 5*time.Second)
	defer cancel()
	if loc, err := chromedp.Run(ctx, chromedp.Location()); err == nil {
		msg += "\npage: " + loc
	}
	if body, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body ? document.body.outerHTML : ""`)); err == nil {
		if len(body) > 6000 {
			body = body[:3000] + "\n…\n" + body[len(body)-3000:]
		}
		msg += "\nbody: " + body
	}
	if png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot()); err == nil {
		if dir, err := failureDir(); err == nil {
			name := filepath.Join(dir, strings.NewReplacer("/", "_", " ", "_").Replace(tb.t.Name())+"-"+tb.name+".png")
			if os.WriteFile(name, png, 0o644) == nil {
				msg += "\nscreenshot: " + name
			}
		}
	}
	if p := tb.problems(); len(p) > 0 {
		msg += "\nconsole: " + strings.Join(p, "\n")
	}
	tb.t.Fatalf("tab %s: %s", tb.name, msg)
}

// failureDir is where screenshots of failures go: MYCO_SCREENSHOTS when set, else a
// directory under the system's temporary directory that outlives the test.
func failureDir() (string, error) {
	if d := os.Getenv("MYCO_SCREENSHOTS"); d != "" {
		return d, os.MkdirAll(d, 0o755)
	}
	d := filepath.Join(os.TempDir(), "myco-e2e-failures")
	return d, os.MkdirAll(d, 0o755)
}

// recorder is installed in every page the tests load: a mutation observer that remembers
// what passed by between two looks of the test (streamed text, the busy status, tool card
// states, re-renders of the whole transcript), so a test checks what happened without
// racing to see it.
const recorder = `(() => {
  if (window.__e2e) return true;
  const r = window.__e2e = {liveText: "", sawBusy: false, readyAfterBusy: false, tools: {}, resets: 0};
  const look = () => {
    const bar = document.querySelector("#status .status-bar");
    if (bar && bar.classList.contains("busy")) { r.sawBusy = true; r.readyAfterBusy = false; }
    else if (bar && r.sawBusy && bar.querySelector(".idle")) r.readyAfterBusy = true;
    for (const d of document.querySelectorAll("details.tool")) {
      const s = ["running", "ok", "error", "unknown"].find((c) => d.classList.contains(c)) || "?";
      const seen = r.tools[d.id] || (r.tools[d.id] = []);
      if (seen[seen.length - 1] !== s) seen.push(s);
    }
  };
  new MutationObserver((records) => {
    for (const m of records) {
      const el = m.target.nodeType === 1 ? m.target : m.target.parentElement;
      const live = document.getElementById("live-text");
      if (el && live && live.contains(el) && live.textContent.length > r.liveText.length) r.liveText = live.textContent;
      if (el && el.id === "transcript" && [...m.removedNodes].some((n) => n.id === "messages")) r.resets++;
    }
    look();
  }).observe(document.documentElement, {subtree: true, childList: true, characterData: true, attributes: true});
  look();
  return true;
})()`

// installRecorder installs [recorder] in the current page.
func (tb *tab) installRecorder() {
	tb.t.Helper()
	// A navigation may still be replacing the document (a form's answer loads as this
	// returns): the recorder goes into the new one once it is there.
	tb.wait("the new page's document", `!!document.documentElement && document.readyState !== "loading"`)
	eval[bool](tb, recorder)
}

// record returns what the recorder saw in the current page.
func (tb *tab) record() pageRecord {
	tb.t.Helper()
	raw := eval[[]byte](tb, `window.__e2e || {}`)
	var r pageRecord
	if err := json.Unmarshal(raw, &r); err != nil {
		tb.fail("decode the recorder: %v", err)
	}
	return r
}

type pageRecord struct {
	LiveText       string              `json:"liveText"`       // the most #live-text held while it streamed
	SawBusy        bool                `json:"sawBusy"`        // the status bar was busy
	ReadyAfterBusy bool                `json:"readyAfterBusy"` // then ready
	Tools          map[string][]string `json:"tools"`          // each card's states, in order
	Resets         int                 `json:"resets"`         // re-renders of the whole transcript
}

// waitLive waits until the page is subscribed to its session's events: through the
// browser's events worker, or, where a page streams on its own (no SharedWorker), through
// htmx's SSE extension.
func (tb *tab) waitLive() {
	tb.t.Helper()
	tb.wait("the session page", `document.getElementById("transcript")?.dataset.events && document.getElementById("prompt")`)
	if eval[bool](tb, `!!window.SharedWorker`) {
		w := tb.b.worker(tb.t)
		w.wait("the page subscribed", `!!stream && [...pages.values()].some((p) => p.url === `+quoteJS(eval[string](tb, `location.pathname + "events"`))+`)`)
		return
	}
	tb.wait("the page's own event stream", `(() => { const t = document.getElementById("transcript"); return t && t._htmx && t._htmx.sse && t._htmx.sse.status === 200 && t._htmx.sse.reader; })()`)
}

// compareFresh opens page in a new tab and compares its transcript, status and head with
// those of tb, which was kept up to date by its event stream.
func compareFresh(t *testing.T, b *browser, tb *tab, page string) {
	t.Helper()
	fresh := newTab(t, b, "fresh")
	fresh.navigate(page)
	fresh.waitLive()
	for _, sel := range []string{"#transcript", "#status", "#session-head"} {
		live, want := eval[string](tb, normalized(sel)), eval[string](fresh, normalized(sel))
		if live != want {
			t.Errorf("%s kept live differs from a fresh load:\nlive:  %s\nfresh: %s", sel, live, want)
		}
	}
}

// normalized is the inner HTML of the element sel selects, with the white space between
// tags dropped.
func normalized(sel string) string {
	return `(() => { const el = document.querySelector(` + quoteJS(sel) + `); return el ? el.innerHTML.replace(/>\s+</g, "><").trim() : "(none)"; })()`
}

func quoteJS(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// waitServer waits until the server's fresh render of page contains text.
func waitServer(t *testing.T, page, text string) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		resp, err := http.Get(page)
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if strings.Contains(string(body), text) {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server's render of %s has no %q after %v (last error %v)", page, text, waitTimeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
