package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"

	"myco.dev/internal/needs"
	"myco.dev/static"
)

// Timeouts of the waits. Every wait is bounded; none relies on a sleep being long enough.
const (
	stepTimeout = 20 * time.Second // one action: a navigation, a click, a query
	waitTimeout = 20 * time.Second // a condition on the page
)

// prerequisites returns the Chromium to drive. Without it, or without the htmx assets the
// binary embeds, the test is skipped on a developer machine and fails when CI is set.
func prerequisites(t *testing.T) string {
	t.Helper()
	needs.Long(t, "the browser tests")
	var missing []string
	chrome := ""
	for _, p := range []string{os.Getenv("CHROME_PATH"), "/usr/bin/chromium", "/usr/bin/chromium-headless-shell"} {
		if p == "" {
			continue
		}
		if _, err := exec.LookPath(p); err == nil {
			chrome = p
			break
		}
	}
	if chrome == "" {
		missing = append(missing, "Chromium (/usr/bin/chromium, or CHROME_PATH): apt-get install -y chromium")
	}
	if m := static.New("/static/").Missing(static.HTMX, static.SSE); len(m) > 0 {
		missing = append(missing, "the htmx assets in static/htmx ("+strings.Join(m, ", ")+"): run make assets")
	}
	if len(missing) > 0 {
		needs.Missing(t, "browser tests need %s", strings.Join(missing, " and "))
	}
	return chrome
}

// browser is a headless Chromium of one test.
type browser struct {
	t   *testing.T
	ctx context.Context // new tabs are opened from it

	mu      sync.Mutex // guards the fields below
	workers map[target.ID]*tab
	resumed []context.CancelFunc // the sessions resumeWorkers opened
}

// newBrowser starts a headless Chromium for the test, closed when it ends.
func newBrowser(t *testing.T) *browser {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(prerequisites(t)),
		chromedp.NoSandbox, // CI runs as root
		chromedp.DisableGPU,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("no-proxy-server", true),
		chromedp.WindowSize(1280, 900),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	// The first run starts the browser and binds its life to the context it is given, so
	// it gets ctx itself; chromedp bounds the start.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start Chromium: %v", err)
	}
	return &browser{t: t, ctx: ctx}
}

// resumeWorkers lets every events worker of the browser run. The tabs' DevTools sessions
// auto-attach to the workers their pages start, and a worker can be left waiting for a
// debugger (waitForDebuggerOnStart) after its page navigates: a reloaded page then gets no
// events at all, which no real browser does. So after each navigation every events worker
// is told to run, through a session of its own (a no-op for one that runs).
func (b *browser) resumeWorkers() {
	infos, err := chromedp.Targets(b.ctx)
	if err != nil {
		return
	}
	for _, i := range infos {
		if i.Type != "shared_worker" || !strings.Contains(i.URL, "/events-worker.") {
			continue
		}
		ctx, cancel := chromedp.NewContext(b.ctx, chromedp.WithTargetID(i.TargetID))
		attached := make(chan error, 1)
		go func() { attached <- chromedp.Do(ctx) }()
		select {
		case err := <-attached:
			if err != nil {
				cancel()
				continue
			}
		case <-time.After(stepTimeout): // a worker that ends as we attach
			cancel()
			continue
		}
		run, stop := context.WithTimeout(ctx, stepTimeout)
		chromedp.Call(run, runtime.RunIfWaitingForDebugger, cdp.Empty{})
		stop()
		b.mu.Lock()
		b.resumed = append(b.resumed, cancel) // kept: the session lives until the browser does
		b.mu.Unlock()
	}
}

// tab is one browser tab, or the browser's events worker (see [browser.worker]). Its
// console and JavaScript dialogs are recorded from the start; when the test ends, any
// script error, content-policy violation or dialog fails it.
type tab struct {
	t    *testing.T
	name string
	b    *browser
	ctx  context.Context
	*watch
}

// watch is what a tab's pages logged, shared by the tab's views in subtests.
type watch struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex // guards the fields below
	console []chromedp.ConsoleMessage
	dialogs []string
	allowed []*regexp.Regexp
	closed  bool
}

// newTab opens a tab (in a window of its own, so that it is visible).
func newTab(t *testing.T, b *browser, name string) *tab {
	t.Helper()
	tb := b.attach(t, name)
	// The tab acts as the focused one, as a person's is: with other tabs open, :focus (the
	// skip link shows by it) and the focus events of the page may otherwise not happen.
	tb.do("focus emulation", chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		_, err := chromedp.Call(ctx, emulation.SetFocusEmulationEnabled, emulation.SetFocusEmulationEnabledParams{Enabled: true})
		return err
	}))
	return tb
}

// worker attaches to the browser's SharedWorker that holds the event connection of every
// session page (static/events-worker.js), once a page has started it. The worker lives as
// long as a page uses it, so a later call may find another one.
func (b *browser) worker(t *testing.T) *tab {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		infos, err := chromedp.Targets(b.ctx)
		if err != nil {
			t.Fatalf("list the browser's targets: %v", err)
		}
		for _, i := range infos {
			if i.Type != "shared_worker" || !strings.Contains(i.URL, "/events-worker.") {
				continue
			}
			b.mu.Lock()
			w := b.workers[i.TargetID]
			b.mu.Unlock()
			if w == nil {
				w = b.attach(t, "events-worker", chromedp.WithTargetID(i.TargetID))
				chromedp.Call(w.ctx, runtime.RunIfWaitingForDebugger, cdp.Empty{}) // see resumeWorkers
				b.mu.Lock()
				if b.workers == nil {
					b.workers = map[target.ID]*tab{}
				}
				b.workers[i.TargetID] = w
				b.mu.Unlock()
			}
			return w.in(t)
		}
		if time.Now().After(deadline) {
			t.Fatalf("no events worker in the browser after %v", waitTimeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (b *browser) attach(t *testing.T, name string, opts ...chromedp.ContextOption) *tab {
	t.Helper()
	ctx, cancel := chromedp.NewContext(b.ctx, opts...)
	tb := &tab{t: t, name: name, b: b, ctx: ctx, watch: &watch{cancel: cancel}}
	if err := chromedp.Do(ctx); err != nil { // opens (or attaches to) the target, for as long as ctx lives
		t.Fatalf("open tab %s: %v", name, err)
	}
	console := chromedp.Console(ctx)
	dialogs := chromedp.Events(ctx, page.JavascriptDialogOpening)
	tb.wg.Go(func() {
		for m, err := range console {
			if err != nil {
				return
			}
			tb.mu.Lock()
			tb.console = append(tb.console, m)
			tb.mu.Unlock()
		}
	})
	tb.wg.Go(func() {
		for ev, err := range dialogs {
			if err != nil {
				return
			}
			tb.mu.Lock()
			tb.dialogs = append(tb.dialogs, fmt.Sprintf("%s %q on %s", ev.Type, ev.Message, ev.URL))
			tb.mu.Unlock()
			// Dismiss it, or the page would hang on it.
			chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: false})
		}
	})
	t.Cleanup(tb.close)
	return tb
}

// in returns the tab for use in subtest t: its failures end t.
func (tb *tab) in(t *testing.T) *tab {
	c := *tb
	c.t = t
	return &c
}

// allow lets console messages whose text and URL ("TEXT URL") match re through the check:
// errors the test causes on purpose, such as refused connections while the server is down.
func (tb *tab) allow(re string) {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	tb.allowed = append(tb.allowed, regexp.MustCompile(re))
}

// close closes the tab and checks what its pages logged.
func (tb *tab) close() {
	tb.mu.Lock()
	if tb.closed {
		tb.mu.Unlock()
		return
	}
	tb.closed = true
	tb.mu.Unlock()
	tb.cancel()
	tb.wg.Wait()
	for _, p := range tb.problems() {
		tb.t.Errorf("tab %s: %s", tb.name, p)
	}
}

// problems lists the console messages that are script errors or content-policy
// violations, and the dialogs, seen so far.
func (tb *tab) problems() []string {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	var out []string
	for _, m := range tb.console {
		if !badConsole(m) || matchesAny(tb.allowed, m.Text+" "+m.URL) || strings.HasSuffix(m.URL, "/favicon.ico") {
			continue
		}
		out = append(out, fmt.Sprintf("console %s (%s, source %q, %s:%d)", m, m.Time.Format("15:04:05.000"), m.Source, m.URL, m.Line+1))
	}
	for _, d := range tb.dialogs {
		out = append(out, "a JavaScript dialog opened: "+d)
	}
	return out
}

// badConsole reports whether a console message is a script error or a content-policy
// violation (which Chromium logs as an error, or as a warning for a report-only policy).
func badConsole(m chromedp.ConsoleMessage) bool {
	switch {
	case m.Type == chromedp.ConsoleError, m.IsException():
		return true
	case strings.Contains(m.Text, "Content Security Policy"), strings.Contains(m.Text, "Content-Security-Policy"):
		return true
	}
	return false
}

func matchesAny(res []*regexp.Regexp, s string) bool {
	for _, re := range res {
		if re.MatchString(s) {
			return true
		}
	}
	return false
}
