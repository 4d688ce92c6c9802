package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"myco.dev/internal/fakemodel"
)

// TestBrowserFailureKinds (issue 27, finding 5): a failed turn is told by its kind. A 401
// says in plain words that the gateway refused the credential, names the gateway's `auth`
// and the file the key is read from (never the key), folds the provider's words under
// Details and offers no Retry, also after a reload; a broken stream says the answer broke
// off and offers Retry (after a reload too), which answers.
func TestBrowserFailureKinds(t *testing.T) {
	t.Parallel()
	const key = "sk-e2e-secret-27"
	keyFile := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(keyFile, []byte(key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f := newFixtureWith(t, func(url string) string {
		return "model = \"m\"\n[gateways.work]\nprotocol = \"anthropic-messages\"\nbase_url = \"" + url + "\"\n" +
			"auth = { source = \"file\", path = \"" + keyFile + "\" }\n[models.m]\ngateway = \"work\"\ncontext_window = 100000\n"
	},
		fakemodel.Turn{Status: 401, ErrorBody: `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`},
		fakemodel.Turn{Text: "Half an answer, and then", ChunkSize: 4, DelayMs: 10, Drop: true},
		fakemodel.Turn{Text: "The whole answer after the retry."},
	)
	b := newBrowser(t)
	tb := newTab(t, b, "main")
	page := f.newSession()
	tb.navigate(page)
	tb.waitLive()

	lastNote := `[...document.querySelectorAll("#messages .msg.end .note.error")].pop()?.textContent ?? ""`
	t.Run("a refused credential: its words, and no Retry", func(t *testing.T) {
		tb := tb.in(t)
		tb.send("Hello")
		tb.wait("the failure's note", `(`+lastNote+`).includes("refused the credential") && !!document.querySelector("#status .idle")`)
		for _, look := range []string{"live", "after a reload"} {
			if look == "after a reload" {
				tb.navigate(page)
				tb.waitLive()
			}
			note := eval[string](tb, lastNote)
			for _, want := range []string{"The gateway work refused the credential (401 Unauthorized)", "Check `auth` of gateway work in config.toml", "the file " + keyFile} {
				if !strings.Contains(note, want) {
					t.Errorf("%s, the note = %q, want it to say %q", look, note, want)
				}
			}
			if n := eval[int](tb, `document.querySelectorAll("#messages form.retry button").length`); n != 0 {
				t.Errorf("%s, %d Retry buttons, want none: sending a refused credential again does not help", look, n)
			}
			detail := eval[string](tb, `[...document.querySelectorAll("#messages .msg.end details.detail pre")].pop()?.textContent ?? ""`)
			if !strings.Contains(detail, "invalid x-api-key") || eval[bool](tb, `[...document.querySelectorAll("#messages .msg.end details.detail")].pop()?.open`) {
				t.Errorf("%s, the detail = %q, want the provider's words, folded", look, detail)
			}
			if strings.Contains(eval[string](tb, `document.body.innerHTML`), key) {
				t.Errorf("%s, the page shows the credential", look)
			}
		}
	})
	t.Run("a broken stream: its words, and Retry", func(t *testing.T) {
		tb := tb.in(t)
		tb.send("Explain it")
		tb.wait("the failure's note", `(`+lastNote+`).includes("The model's answer broke off") && !!document.querySelector("#status .idle")`)
		tb.navigate(page)
		tb.waitLive()
		if n := eval[int](tb, `document.querySelectorAll("#messages form.retry button").length`); n != 1 {
			t.Fatalf("%d Retry buttons, want one: on the broken turn's end", n)
		}
		tb.click("#messages form.retry button")
		tb.wait("the retried answer", `document.querySelector("#messages")?.textContent.includes("The whole answer after the retry.") && !!document.querySelector("#status .idle")`)
	})
}
