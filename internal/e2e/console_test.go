package e2e

import (
	"strings"
	"testing"
	"time"
)

// TestBrowserConsoleCheck makes a page break its content policy and throw, to show that
// the console check every tab runs sees both: a clean console in the other tests means
// something.
func TestBrowserConsoleCheck(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	page := f.newSession()
	b := newBrowser(t)
	tb := newTab(t, b, "bad")
	tb.navigate(page)
	tb.waitLive()
	if p := tb.problems(); len(p) > 0 {
		t.Fatalf("a plain session page logged problems: %q", p)
	}
	// An inline script and a remote image, both refused by the policy, and an uncaught
	// exception.
	eval[bool](tb, `(() => {
  const s = document.createElement("script");
  s.textContent = "document.title = 'ran'";
  document.body.append(s);
  const i = document.createElement("img");
  i.src = "http://127.0.0.1:9/pixel.png";
  document.body.append(i);
  setTimeout(() => { throw new Error("deliberate"); });
  return true;
})()`)
	for _, want := range []string{"inline script", "img-src", "deliberate"} {
		if !tb.waitProblem(want) {
			t.Errorf("the console check did not see %q; it saw %q", want, tb.problems())
		}
	}
	if title := eval[string](tb, `document.title`); title == "ran" {
		t.Error("an inline script ran under the page's policy")
	}
	tb.allow(".") // what this test caused on purpose
}

// waitProblem reports whether a problem mentioning s is logged within waitTimeout.
func (tb *tab) waitProblem(s string) bool {
	deadline := time.Now().Add(waitTimeout)
	for {
		for _, p := range tb.problems() {
			if strings.Contains(p, s) {
				return true
			}
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}
