package views

import (
	"strings"
	"testing"
)

func testNewSessionView() NewSessionView {
	return NewSessionView{Chrome: testChrome("New session"), Action: "/profiles/default/s", CompleteURL: "/profiles/default/dirs",
		Cwd: "/home/u/src/app", Models: []string{"fake", "other"}, Model: "fake",
		Recent: []DirChoice{{Path: "/home/u/src/app", Label: "~/src/app", Note: "the server's directory"}, {Path: "/srv/x", Label: "/srv/x"}}}
}

// TestNewSessionPage: the directory field (prefilled, completed through the datalist as it
// is typed), the model, the start button, and the directories used lately, each a button
// that starts a session there; a refusal shows at the field.
func TestNewSessionPage(t *testing.T) {
	v := testNewSessionView()
	doc := tree(t, NewSessionPage(v))
	f := one(t, doc, "form#new-session-form")
	if attr(f, "method") != "post" || attr(f, "action") != "/profiles/default/s" {
		t.Errorf("form = %s", outerHTML(f))
	}
	in := one(t, f, "input#cwd")
	if attr(in, "name") != "cwd" || attr(in, "value") != v.Cwd || attr(in, "list") != "cwd-options" || attr(in, "hx-get") != v.CompleteURL ||
		attr(in, "hx-target") != "#cwd-options" || attr(in, "aria-invalid") != "" {
		t.Errorf("directory field = %s", outerHTML(in))
	}
	one(t, doc, "label[for=cwd]")
	one(t, doc, "datalist#cwd-options")
	one(t, f, "select#new-model option[selected][value=fake]")
	one(t, f, "button#start-session[type=submit]")
	picks := all(f, "ul.dir-choices button[name=pick]")
	if len(picks) != 2 || attr(picks[1], "value") != "/srv/x" || attr(picks[1], "aria-label") != "Start a session in /srv/x" {
		t.Errorf("recent directories = %d", len(picks))
	}
	v.Error = `cwd "rel" is not an absolute path`
	doc = tree(t, NewSessionPage(v))
	in = one(t, doc, "input#cwd")
	if attr(in, "aria-invalid") != "true" || !strings.Contains(attr(in, "aria-describedby"), "cwd-error") {
		t.Errorf("a refused directory's field = %s", outerHTML(in))
	}
	if got := textContent(one(t, doc, "p#cwd-error[role=alert]")); got != v.Error {
		t.Errorf("the refusal reads %q", got)
	}
	opts := all(tree(t, DirOptions([]string{"/a/", "/b\x1b/", "/c/"})), "option")
	if len(opts) != 2 || attr(opts[1], "value") != "/c/" {
		t.Errorf("options = %d, want the two exact ones", len(opts))
	}
}
