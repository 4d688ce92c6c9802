package e2e

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"myco.dev/internal/fakemodel"
)

// The controls a person touches in their first hour, each checked by what the person gets:
// the model the next request names, the clipboard's text, the scroll offset.

// twoModels is a catalog with a second model, big, whose wire id tells its requests apart.
const twoModels = "[models.big]\nprotocol = \"anthropic-messages\"\nbase_url = \"{{model_url}}\"\napi_id = \"big-model\"\ncontext_window = 200000\n"

// TestBrowserModelSelect chooses another model in the composer's select with the keyboard,
// as a person does: the next turn's request names it, and a reload shows it chosen.
func TestBrowserModelSelect(t *testing.T) {
	t.Parallel()
	f := newFixtureConfig(t, twoModels, fakemodel.Turn{Text: "On the first model."}, fakemodel.Turn{Text: "On the big one."})
	page := f.newSession()
	b := newBrowser(t)
	tb := newTab(t, b, "main")
	tb.navigate(page)
	tb.waitLive()
	tb.send("Which model?")
	tb.wait("the first answer", `document.querySelector("#messages")?.textContent.includes("On the first model.") && document.querySelector("#status .idle")`)
	if got := requestModel(t, f.model); got != "m" {
		t.Fatalf("the first request names model %q, want m", got)
	}

	// A focused select takes the option whose name starts with the letter typed.
	tb.do("choose big in the select", chromedp.Focus(chromedp.ID("model"), chromedp.NodeVisible), chromedp.KeyEvent("b"))
	tb.wait("big chosen", `document.getElementById("model").value === "big"`)
	waitServer(t, page, `<option value="big" selected>`)
	if eval[bool](tb, `!!document.querySelector("#toast .error, #toast [role=alert]")`) {
		t.Fatalf("choosing a model showed an error: %s", eval[string](tb, `document.getElementById("toast").textContent`))
	}
	tb.send("And now?")
	tb.wait("the second answer", `document.querySelector("#messages")?.textContent.includes("On the big one.") && document.querySelector("#status .idle")`)
	if got := requestModel(t, f.model); got != "big-model" {
		t.Errorf("after choosing big, the next request names model %q, want big-model", got)
	}
	tb.navigate(page)
	if got := eval[string](tb, `document.getElementById("model").value`); got != "big" {
		t.Errorf("after a reload the select shows %q, want big", got)
	}
}

// requestModel is the model id of the fake model's last request.
func requestModel(t *testing.T, m *fakemodel.Server) string {
	t.Helper()
	reqs := m.Requests()
	if len(reqs) == 0 {
		t.Fatal("the fake model got no request")
	}
	s, _ := reqs[len(reqs)-1].JSON()["model"].(string)
	return strings.TrimSpace(s)
}
