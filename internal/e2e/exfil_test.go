package e2e

import (
	"context"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"myco.dev/internal/fakemodel"
)

// TestBrowserExfiltration renders every vector of the exfiltration corpus
// (views/testdata/markdown/exfil/*.md), pointed at a loopback listener that counts every
// connection and request, the two ways untrusted Markdown reaches a page: as the model's
// answers (streamed into a session, then on a fresh load of it) and as workspace documents
// opened in the viewer. Once each page has settled (loaded, scrolled through, images done),
// the listener must have seen nothing, the browser must have asked it for nothing, no link
// may run script (javascript:, vbscript:, data:), no handler attribute may be left, and no
// dialog may open; the console check of every tab fails on any content-policy violation.
func TestBrowserExfiltration(t *testing.T) {
	t.Parallel()
	l := startListener(t)
	vectors := exfilCorpus(t, l.host)

	// One prompt; the model answers with each vector in turn, a harmless tool call between
	// them, so every vector is its own message.
	var turns []fakemodel.Turn
	for i, v := range vectors {
		turn := fakemodel.Turn{Text: v.text, ChunkSize: 64}
		if i < len(vectors)-1 {
			turn.ToolCalls = []fakemodel.ToolCall{bash("call_"+itoa(i), "true")}
		}
		turns = append(turns, turn)
	}
	f := newFixture(t, turns...)
	page := f.newSession()
	// The corpus's local images: the ones that exist load from the workspace route; the
	// others are 404s of that route (a missing file), or, in a transcript, of the route of
	// the session's directory, which is no leak.
	png := writePNG(t, filepath.Join(t.TempDir(), "pic.png"))
	data, err := os.ReadFile(png)
	if err != nil {
		t.Fatal(err)
	}
	f.workspaceFile("pic.png", string(data))
	f.workspaceFile("exfil/pic.png", string(data))
	docs := make([]string, len(vectors))
	for i, v := range vectors {
		docs[i] = f.workspaceFile("exfil/"+v.name, v.text)
	}

	b := newBrowser(t)
	tb := newTab(t, b, "exfil")
	tb.allow(`status of 404 \(Not Found\) ` + regexp.QuoteMeta(f.srv.URL+"workspace/"))
	tb.allow(`ERR_BLOCKED_BY_RESPONSE.NotSameOrigin ` + regexp.QuoteMeta(f.srv.URL+"workspace/"))
	// In a transcript, a relative image is a file of the session's directory, which has
	// none of the corpus's: 404s of that route, which are no leak either.
	tb.allow(`status of 404 \(Not Found\) ` + regexp.QuoteMeta(page+"files/"))
	requested := tb.requestsTo(l.host)
	tb.navigate(page)
	tb.waitLive()
	tb.send("Show me the corpus")
	tb.wait("every vector answered", `document.querySelectorAll("#messages .msg.assistant").length === `+itoa(len(vectors))+` && document.querySelector("#status .idle")`)
	tb.settle("the streamed answers", false)
	tb.checkInert(t, "the streamed answers", modelContent)

	tb.navigate(page)
	tb.settle("a fresh load of the session", false)
	tb.checkInert(t, "a fresh load of the session", modelContent)

	for i, d := range docs {
		tb.navigateDocument(d)
		// A file with a NUL byte is binary to the viewer, which offers it as a download.
		tb.wait("the document "+vectors[i].name, `document.querySelector("main.document-body, main.workspace-page")`)
		tb.settle("the document "+vectors[i].name, true)
		tb.checkInert(t, "the document "+vectors[i].name, "main")
	}
	tb.navigate("about:blank") // ends anything still pending

	if n := requested(); len(n) > 0 {
		t.Errorf("the browser asked the listener for %d URLs: %q", len(n), n)
	}
	if c, r := l.conns.Load(), l.reqs.Load(); c != 0 || r != 0 {
		t.Errorf("the listener saw %d connections and %d requests (%q), want none", c, r, l.paths())
	}

	// The control: both counters see a request the browser does make.
	tb.navigate("http://" + l.host + "/control")
	if n, seen := requested(), l.paths(); !slices.Contains(n, "http://"+l.host+"/control") || !slices.Contains(seen, "GET /control") {
		t.Errorf("the control request: the browser asked for %q and the listener saw %q, want it in both", n, seen)
	}
}

type vector struct{ name, text string }

// exfilCorpus reads the corpus with its remote host replaced by host.
func exfilCorpus(t *testing.T, host string) []vector {
	t.Helper()
	dir := filepath.Join("..", "..", "views", "testdata", "markdown", "exfil")
	names, err := filepath.Glob(filepath.Join(dir, "*.md"))
	if err != nil || len(names) == 0 {
		t.Fatalf("no exfiltration corpus in %s: %v", dir, err)
	}
	var out []vector
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		text := strings.NewReplacer("exfil.example", host, "exfil&#46;example", host).Replace(string(b))
		out = append(out, vector{name: filepath.Base(n), text: text})
	}
	return out
}

// listener counts what reaches a loopback address that nothing should reach.
type listener struct {
	host  string // 127.0.0.1:PORT
	conns atomic.Int64
	reqs  atomic.Int64

	mu   sync.Mutex // guards the field below
	seen []string
}

func startListener(t *testing.T) *listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := &listener{host: ln.Addr().String()}
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			l.reqs.Add(1)
			l.mu.Lock()
			l.seen = append(l.seen, r.Method+" "+r.URL.String())
			l.mu.Unlock()
			w.Write([]byte("counted\n"))
		}),
		ConnState: func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				l.conns.Add(1)
			}
		},
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return l
}

func (l *listener) paths() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.seen...)
}

// requestsTo records the URLs of host the tab's pages request, from now on; the returned
// func lists them. A request refused by the content policy never gets here (the console
// check catches it); one the browser sends does, even if the listener were slow to see it.
func (tb *tab) requestsTo(host string) func() []string {
	tb.t.Helper()
	var (
		mu   sync.Mutex
		urls []string
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
			if u, err := url.Parse(ev.Request.URL); err == nil && u.Host == host {
				mu.Lock()
				urls = append(urls, ev.Request.URL)
				mu.Unlock()
			}
		}
	})
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), urls...)
	}
}

// settle waits until the page and every image in it are done, after making every lazy
// image load now (the most any page could fetch) and scrolling to the end. In a sandboxed
// document (scripts disabled) Chromium loads lazy images at once anyway, and touching
// img.loading there logs "Blocked script execution", so it is left alone.
func (tb *tab) settle(what string, sandboxed bool) {
	tb.t.Helper()
	if !sandboxed {
		eval[bool](tb, `(document.querySelectorAll("img[loading=lazy]").forEach((i) => { i.loading = "eager"; }), window.scrollTo(0, document.documentElement.scrollHeight), true)`)
	}
	tb.wait(what+" settled", `document.readyState === "complete" && [...document.images].every((i) => i.complete)`)
}

// modelContent selects what a transcript shows of model and tool output: the rendered
// answers, thinking, tool summaries and outputs, and what the user sent. The page's own
// controls around them (Copy, Edit, Retry, "show all") are forms and hx- attributes by
// design, and left out.
const modelContent = "#messages .md, #messages .plain, #messages .thinking-text, #messages .tool-summary, #messages pre, #messages .attached"

// checkInert fails t if the elements sel selects hold anything that runs script or reaches
// out: a script, frame, object, embed, base, meta, link, form, style or media element, a
// handler, style, srcset, ping, formaction or hx- attribute, a link to a javascript:,
// vbscript: or data: URL, or an image from anywhere but this server or a data: image.
func (tb *tab) checkInert(t *testing.T, what, sel string) {
	t.Helper()
	found := eval[[]string](tb, `(() => {
  const roots = [...document.querySelectorAll(`+quoteJS(sel)+`)];
  if (!roots.length) return ["no " + `+quoteJS(sel)+`];
  const out = [];
  for (const root of roots) {
  for (const el of root.querySelectorAll("script, iframe, frame, object, embed, base, meta, link, form, style, svg, math, video, audio, source, picture")) out.push("<" + el.tagName.toLowerCase() + ">");
  for (const el of root.querySelectorAll("*")) {
    for (const a of el.attributes) {
      if (/^on/i.test(a.name) || a.name === "style" || a.name === "srcset" || a.name === "formaction" || a.name === "ping" || a.name.startsWith("hx-")) out.push(el.tagName.toLowerCase() + "[" + a.name + "]");
    }
    if (el.matches("a[href], area[href]") && /^(javascript|vbscript|data):$/i.test(el.protocol)) out.push("a link to " + el.href.slice(0, 60));
    if (el.matches("img") && !el.src.startsWith(location.origin + "/") && !/^data:image\//i.test(el.src)) out.push("an image from " + el.src.slice(0, 60));
  }
  }
  return out;
})()`)
	if len(found) > 0 {
		t.Errorf("%s: %d live elements or attributes: %q", what, len(found), found)
	}
}
