package e2e

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"myco.dev/internal/fakemodel"
	"myco.dev/internal/sessiongen"
)

// TestBrowserSessionScreens (issue 32) saves, and checks with axe-core, the screens of a day
// of sixty sessions in four projects: the list grouped by project, the by-date view, the
// quick switcher with title and content matches, and a session's sidebar with its
// project first and the open session in view; light and dark, 1440 and 390 px wide, in
// $MYCO_SCREENSHOTS (else a temporary directory). Nothing may scroll sideways.
func TestBrowserSessionScreens(t *testing.T) {
	t.Parallel()
	dir := os.Getenv("MYCO_SCREENSHOTS")
	if dir == "" {
		dir = t.TempDir()
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	prerequisites(t)
	src := axeSource(t)
	f := &fixture{t: t, model: fakemodel.New(t), home: t.TempDir(), gates: t.TempDir()}
	profile := filepath.Join(f.home, "profiles", "default")
	work := t.TempDir()
	alpha := filepath.Join(work, "alpha")
	dirs := []string{filepath.Join(alpha, "cmd", "server"), filepath.Join(work, "beta"), alpha, filepath.Join(work, "notes"), filepath.Join(work, "gamma-service-with-a-long-name")}
	for _, d := range append(dirs, filepath.Join(alpha, ".git"), filepath.Join(profile, "workspace"), filepath.Join(profile, "session")) {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	cfg := "model = \"fake\"\n[models.fake]\nprotocol = \"anthropic-messages\"\nbase_url = \"" + f.model.URL + "\"\ncontext_window = 100000\n" +
		"prices = { input = 3, output = 15 }\n"
	if err := os.WriteFile(filepath.Join(profile, "config.toml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	ids, err := sessiongen.Write(filepath.Join(profile, "session"), sessiongen.Options{Sessions: 60, Messages: 24, Dirs: dirs,
		Every: 4 * time.Hour, Seed: 32, Mixed: true})
	if err != nil {
		t.Fatal(err)
	}
	f.srv = startServer(t, f.home, "127.0.0.1:0")
	open := f.srv.URL + "s/" + ids[40] + "/" // an alpha session, far down the list

	b := newBrowser(t)
	tb := newTab(t, b, "lists")
	tb.navigate(f.srv.URL)
	// The index is built from the session files in the background; the switcher's content
	// matches need it.
	tb.waitFor(time.Minute, "the index built", `fetch("api/search?q=lexer").then((r) => r.json()).then((j) => !j.incomplete && j.hits.length > 0)`)

	switcher := `(() => { const i = document.getElementById("search"); return !!i; })()`
	screens := []struct {
		name, url, ready string
		act              func()
	}{
		{"list-by-project", f.srv.URL, `document.querySelectorAll("#session-list > li.group-head").length === 4 && document.querySelector("#session-list .state.needs_you") && document.querySelector("#session-list .group-more")`, nil},
		{"list-by-date", f.srv.URL + "?view=date", `[...document.querySelectorAll("#session-list > li.group-head h2")].map((h) => h.textContent).join() === "Today,Yesterday,This week,Older"`, nil},
		{"quick-switcher", f.srv.URL, switcher, func() {
			tb.do("type in the switcher", chromedp.Focus(chromedp.ID("search"), chromedp.NodeVisible), chromedp.KeyEvent("lexer"))
			tb.wait("the switcher's matches", `document.querySelector("#switch-results.open") && document.querySelectorAll("#switch-results [role=option]").length > 3 && document.querySelector("#switch-results mark")`)
			tb.do("choose with the keyboard", chromedp.KeyEvent(kb.ArrowDown), chromedp.KeyEvent(kb.ArrowDown))
			tb.wait("an option chosen", `document.querySelector("#switch-results [aria-selected=true]") && document.getElementById("search").getAttribute("aria-activedescendant")`)
		}},
		{"sidebar", open, `document.querySelector(".sidebar li.current") && document.querySelector(".sidebar li.side-head")`, nil},
	}
	sizes := []struct {
		name          string
		width, height int64
	}{{"wide", 1440, 900}, {"narrow", 390, 844}}
	for _, scheme := range []string{"light", "dark"} {
		tb.do("prefers-color-scheme: "+scheme, chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
			_, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
				Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}})
			return err
		}))
		for _, size := range sizes {
			tb.do("viewport "+size.name, chromedp.EmulateViewport(size.width, size.height))
			for _, s := range screens {
				tb.navigate(s.url)
				tb.wait(s.name, s.ready)
				if s.act != nil {
					s.act()
				}
				if s.name == "sidebar" && size.name == "wide" {
					// The open session is in the sidebar's view, its project first.
					if !eval[bool](tb, `(() => { const s = document.querySelector(".sidebar"), c = s.querySelector("li.current").getBoundingClientRect(), r = s.getBoundingClientRect(); return c.top >= r.top && c.bottom <= r.bottom; })()`) {
						t.Errorf("%s %s: the open session is out of the sidebar's view", scheme, size.name)
					}
					if first := eval[string](tb, `document.querySelector(".sidebar li.side-head")?.textContent`); first != "This project" {
						t.Errorf("the sidebar starts with %q, want This project", first)
					}
				}
				if size.name == "narrow" {
					if w := eval[int](tb, `document.documentElement.scrollWidth`); w > int(size.width) {
						t.Logf("wide: %s", eval[string](tb, `[...document.querySelectorAll("a")].filter((a) => a.getBoundingClientRect().right > innerWidth).slice(0, 5).map((a) => a.outerHTML.slice(0, 160)).join("\n")`))
						t.Errorf("%s at %d px: the page is %d px wide and scrolls sideways; widest: %s", s.name, size.width, w, eval[string](tb, widest))
					}
				}
				tb.axe(t, src, s.name+" "+scheme+" "+size.name)
				png, err := chromedp.Run(tb.ctx, chromedp.CaptureScreenshot())
				if err != nil {
					t.Fatalf("screenshot %s: %v", s.name, err)
				}
				name := filepath.Join(dir, s.name+"-"+scheme+"-"+size.name+".png")
				if err := os.WriteFile(name, png, 0o644); err != nil {
					t.Fatal(err)
				}
				t.Logf("saved %s", name)
			}
		}
	}
}
