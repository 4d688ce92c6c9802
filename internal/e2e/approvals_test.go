package e2e

import (
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"myco.dev/internal/fakemodel"
)

// TestBrowserApprovals (issue 31): in ask mode, the session page shows each call that waits
// as a card, and the person answers it with real key presses and clicks: y allows a command
// once (the file it writes is on disk, and the fake model's next request has its result);
// a reload keeps a waiting card; Allow always on an edit shows and adds the rule; Deny with a
// reason sends the reason to the model and runs nothing. The cards' controls have
// accessible names (axe), and the card is captured light and dark, wide and narrow.
func TestBrowserApprovals(t *testing.T) {
	t.Parallel()
	f := newFixtureConfig(t, "[approvals]\nmode = \"ask\"\n")
	dir := f.srv.cmd.Dir
	f.model.Script(
		fakemodel.Turn{Text: "Writing the greeting.", ToolCalls: []fakemodel.ToolCall{bash("call_greet", "echo hello > greeting.txt && cat greeting.txt")}},
		fakemodel.Turn{Text: "Now a note.", ToolCalls: []fakemodel.ToolCall{{ID: "call_note", Name: "str_replace_based_edit_tool",
			Args: `{"command":"create","path":"` + filepath.Join(dir, "notes.txt") + `","file_text":"first line\nsecond line\n"}`}}},
		fakemodel.Turn{Text: "Cleaning up.", ToolCalls: []fakemodel.ToolCall{bash("call_rm", "rm -rf "+filepath.Join(dir, "keep")+" && git push --force origin main")}},
		fakemodel.Turn{Text: "All done."},
	)
	os.MkdirAll(filepath.Join(dir, "keep"), 0o755)
	key, err := os.ReadFile(filepath.Join(f.home, "approval.key"))
	if err != nil {
		t.Fatal(err)
	}
	page := f.newSession()
	b := newBrowser(t)
	tb := newTab(t, b, "approvals")

	// Without the capability the card says how to get it, and offers no answer.
	tb.navigate(page)
	tb.waitLive()
	tb.send("Greet, note and clean up")
	tb.wait("the first card", `document.querySelector("#approval-call_greet")`)
	waiting := `document.querySelector("#tool-call_greet .tool-status")?.textContent === "waits for your approval"`
	tb.wait("the call's card saying it waits (live)", waiting)
	if eval[bool](tb, `!!document.querySelector("#approval-call_greet .approval-answers")`) {
		t.Error("a browser without the capability is offered the answers")
	}
	if !eval[bool](tb, `document.querySelector("#approval-call_greet").textContent.includes("myco approve-link")`) {
		t.Error("the card does not say how to get the capability")
	}
	// The link myco approve-link prints puts the capability in a cookie and goes to the sessions.
	tb.navigate(f.srv.URL + "approve?key=" + strings.TrimSpace(string(key)))
	tb.navigate(page)
	tb.waitLive()
	tb.wait("the card with its answers", `document.querySelector("#approval-call_greet .approval-answers")`)
	tb.wait("the call's card saying it waits (loaded)", waiting)
	if got := eval[string](tb, `document.querySelector("#approval-call_greet .approval-command").textContent`); !strings.Contains(got, "echo hello > greeting.txt") {
		t.Errorf("the command shown = %q", got)
	}
	if got := eval[string](tb, `document.title`); !strings.HasPrefix(got, "(needs you)") {
		t.Errorf("the title = %q, want it to say a call waits", got)
	}
	tb.axeIn(t, axeSource(t), `document.getElementById("approvals")`, "the approval card")
	screens(t, tb, "approval-command", cardInView)

	t.Run("y allows once", func(t *testing.T) {
		tb := tb.in(t)
		tb.do("press y", chromedp.Click(chromedp.CSS("#messages"), chromedp.NodeVisible), chromedp.KeyEvent("y"))
		tb.wait("the edit's card", `document.querySelector("#approval-call_note") && !document.querySelector("#approval-call_greet")`)
		tb.wait("the allowed call's card done", `document.querySelector("#tool-call_greet.ok")`)
		if b, err := os.ReadFile(filepath.Join(dir, "greeting.txt")); err != nil || string(b) != "hello\n" {
			t.Errorf("greeting.txt = %q, %v", b, err)
		}
		if res := f.model.Requests(); len(res) < 2 || !strings.Contains(string(res[1].Body), "hello") {
			t.Error("the model's next request has not the command's output")
		}
	})

	t.Run("a reload keeps the waiting card", func(t *testing.T) {
		tb := tb.in(t)
		tb.navigate(page)
		tb.waitLive()
		tb.wait("the edit's card after the reload", `document.querySelector("#approval-call_note .diff")`)
		if got := eval[string](tb, `document.querySelector("#approval-call_note .diff").textContent`); !strings.Contains(got, "second line") {
			t.Errorf("the diff = %q", got)
		}
		screens(t, tb, "approval-edit", cardInView)
	})

	t.Run("allow always shows and adds the rule", func(t *testing.T) {
		tb := tb.in(t)
		label := eval[string](tb, `document.querySelector('#approval-call_note button[value="always"]').textContent`)
		if !strings.Contains(label, "edit(notes.txt)") {
			t.Errorf("Allow always says %q, want the rule edit(notes.txt)", label)
		}
		tb.click(`#approval-call_note button[value="always"]`)
		tb.wait("the deny card", `document.querySelector("#approval-call_rm") && !document.querySelector("#approval-call_note")`)
		if b, err := os.ReadFile(filepath.Join(dir, "notes.txt")); err != nil || !strings.Contains(string(b), "second line") {
			t.Errorf("notes.txt = %q, %v", b, err)
		}
	})

	t.Run("deny with a reason", func(t *testing.T) {
		tb := tb.in(t)
		tb.do("press n, type a reason, Enter", chromedp.Click(chromedp.CSS("#messages"), chromedp.NodeVisible), chromedp.KeyEvent("n"))
		tb.wait("the reason focused", `document.activeElement?.name === "reason"`)
		tb.do("type the reason", chromedp.SendKeys(`#approval-call_rm input[name="reason"]`, "keep that directory"+kb.Enter))
		tb.wait("the answer", `document.querySelector("#messages .msg.assistant .md")?.textContent.includes("All done") || [...document.querySelectorAll("#messages .msg.assistant .md")].some((m) => m.textContent.includes("All done"))`)
		if _, err := os.Stat(filepath.Join(dir, "keep")); err != nil {
			t.Error("the denied command ran")
		}
		reqs := f.model.Requests()
		if last := string(reqs[len(reqs)-1].Body); !strings.Contains(last, "keep that directory") || !strings.Contains(last, "denied by the person") {
			t.Errorf("the model's last request does not carry the reason: %s", last)
		}
		if got := eval[string](tb, `document.title`); strings.HasPrefix(got, "(needs you)") {
			t.Errorf("the title still says a call waits: %q", got)
		}
	})
}

// cardInView brings the first approval card to the middle of the window.
const cardInView = `(() => { const c = document.querySelector(".approval-card"); c?.scrollIntoView({block: "center"}); return !!c; })()`

// TestBrowserChildApproval (issue 31): a call of a hidden child session that waits for
// approval shows on its root's page, live, with a link to the child, and notifies from the
// root's hidden tab once the browser allows it (no switch needed), and is answered there
// (the command runs in the child: its file is on disk); the list says the root needs you,
// with a link to the child, until the answer.
func TestBrowserChildApproval(t *testing.T) {
	t.Parallel()
	f := newFixtureConfig(t, "[approvals]\nmode = \"ask\"\n")
	dir := f.srv.cmd.Dir
	f.model.Script(
		fakemodel.Turn{Text: "The child writes.", ToolCalls: []fakemodel.ToolCall{bash("call_child", "echo from-child > child.txt")}},
		fakemodel.Turn{Text: "The child is done."},
	)
	key, err := os.ReadFile(filepath.Join(f.home, "approval.key"))
	if err != nil {
		t.Fatal(err)
	}
	page := f.newSession()
	root := path.Base(strings.TrimSuffix(page, "/"))
	b := newBrowser(t)
	tb := newTab(t, b, "child-approval")
	notes := notifications(t, f, b, tb)
	tb.navigate(f.srv.URL + "approve?key=" + strings.TrimSpace(string(key)))
	tb.navigate(page)
	tb.waitLive()
	// The browser lets myco notify, no switch is on, and the person looks elsewhere.
	tb.wait("the states followed", `document.getElementById("notify").getAttribute("aria-pressed") === "false" && document.documentElement.dataset.notifications === "live"`)
	eval[bool](tb, `window.__hidden = true`)

	var created struct {
		ID string `json:"session_id"`
	}
	f.postJSON("api/sessions", `{"request_id":"c1","parent_session":"`+root+`","title":"The helper"}`, &created)
	if created.ID == "" {
		t.Fatal("the child was not created")
	}
	f.postJSON("api/sessions/"+created.ID+"/actions", `{"request_id":"s1","action":"submit","text":"write child.txt"}`, nil)
	card := "#approval-" + created.ID + "-call_child"
	tb.wait("the child's card on the root's page", `document.querySelector("`+card+` .approval-answers")`)
	if got := eval[string](tb, `document.querySelector("`+card+` a.child-link")?.getAttribute("href") ?? ""`); !strings.HasSuffix(got, "/s/"+created.ID+"/") {
		t.Errorf("the card's link to the child = %q", got)
	}
	screens(t, tb, "approval-child", cardInView)
	tb.wait("the root's tab title saying it needs you", `document.title.startsWith("(needs you)")`)
	tb.wait("the root's notification", `window.__notes.length > 0`)
	if got := notes(); len(got) != 1 || got[0].Body != "A session it started waits for your approval." || got[0].Tag != "myco:"+strings.TrimPrefix(page, f.srv.origin()) {
		t.Errorf("notifications = %+v, want one of the root saying a session it started waits", got)
	}
	eval[bool](tb, `window.__hidden = false`)

	tb.navigate(f.srv.URL)
	row := `document.querySelector("#row-` + root + `")`
	tb.wait("the root's row needing you", row+`?.querySelector(".state.needs_you") && `+row+`.querySelector("a.waiting")`)
	if got := eval[string](tb, row+`.querySelector("a.waiting").getAttribute("href")`); !strings.HasSuffix(got, "/s/"+created.ID+"/") {
		t.Errorf("the row's link to the waiting child = %q", got)
	}
	screens(t, tb, "list-child-asks", "")

	tb.navigate(page)
	tb.waitLive()
	tb.click(card + ` button[value="once"]`)
	tb.wait("the card gone", `!document.querySelector("`+card+`")`)
	tb.wait("the root's tab title without it", `!document.title.startsWith("(needs you)")`)
	f.waitFile(filepath.Join(dir, "child.txt"), "from-child\n")
	tb.navigate(f.srv.URL)
	tb.wait("the root's row without the child's request", row+` && !`+row+`.querySelector("a.waiting")`)
}

// TestBrowserApprovalCutAndRestart (issue 31): a waiting call's card follows its session
// through a cut event stream and a server restart. While the tab is cut off, the person
// allows the first call through the API (with the capability) and the second call asks:
// once the stream is back (subscribed again from the last event the page had), the first
// card is gone and the second shows. The server then stops with the second call waiting
// and starts again: the card is still there, and Allow runs the command (its file is on
// disk) and gives the model its output.
func TestBrowserApprovalCutAndRestart(t *testing.T) {
	t.Parallel()
	f := newFixtureConfig(t, "[approvals]\nmode = \"ask\"\n")
	dir := f.srv.cmd.Dir
	f.model.Script(
		fakemodel.Turn{Text: "First.", ToolCalls: []fakemodel.ToolCall{bash("call_one", "echo one > one.txt")}},
		fakemodel.Turn{Text: "Second.", ToolCalls: []fakemodel.ToolCall{bash("call_two", "echo two-$((40+2)) > two.txt && cat two.txt")}},
		fakemodel.Turn{Text: "Carried on after the restart."},
	)
	raw, err := os.ReadFile(filepath.Join(f.home, "approval.key"))
	if err != nil {
		t.Fatal(err)
	}
	key := strings.TrimSpace(string(raw))
	page := f.newSession()
	id := path.Base(strings.TrimSuffix(page, "/"))
	b := newBrowser(t)
	tb := newTab(t, b, "approval-cut")
	tb.navigate(f.srv.URL + "approve?key=" + key)
	tb.navigate(page)
	tb.waitLive()
	tb.send("Write two files")
	tb.wait("the first card", `document.querySelector("#approval-call_one .approval-answers")`)

	w := b.worker(t)
	restore := cutWorkerStream(w)
	tb.waitFor(5*time.Second, "the connection-lost banner", `!document.getElementById("conn-banner").hidden`)
	f.postJSONAs("api/sessions/"+id+"/actions", `{"request_id":"a1","action":"approve","approval":"call_one"}`, key)
	f.waitFile(filepath.Join(dir, "one.txt"), "one\n")
	waitServer(t, page, "approval-call_two")
	if eval[bool](tb, `!!document.querySelector("#approval-call_two")`) {
		t.Fatal("the tab got the second card while cut off; the cut did not cut")
	}
	restore()
	tb.wait("the second card after the stream is back", `document.querySelector("#approval-call_two .approval-answers") && !document.querySelector("#approval-call_one")`)

	// The server is stopped on purpose: what the page asks of it meanwhile is refused.
	tb.allow(`status of 503 \(Service Unavailable\)|ERR_CONNECTION_REFUSED|Failed to fetch|net::ERR`)
	f.srv.stop()
	f.srv = startServer(t, f.home, f.srv.Addr)
	tb.waitFor(30*time.Second, "the card after the restart", `document.getElementById("conn-banner").hidden && document.querySelector("#approval-call_two .approval-answers")`)
	tb.click(`#approval-call_two button[value="once"]`)
	f.waitFile(filepath.Join(dir, "two.txt"), "two-42\n")
	tb.wait("the answer after the restart", `[...document.querySelectorAll("#messages .msg.assistant .md")].some((m) => m.textContent.includes("Carried on after the restart")) && !document.querySelector("#approval-call_two")`)
	reqs := f.model.Requests()
	if last := string(reqs[len(reqs)-1].Body); !strings.Contains(last, "two-42") {
		t.Errorf("the model's last request does not carry the command's output: %s", last)
	}
}
