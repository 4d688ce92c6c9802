package views

import (
	"strings"
	"testing"
)

func testNewSessionView() NewSessionView {
	return NewSessionView{Chrome: testChrome("New session"), Action: "/profiles/default/s", CompleteURL: "/profiles/default/dirs",
		Cwd: "/home/u/src/app", Models: []ModelChoice{{"fake", "fake · 100k context"}, {"other", "other · 1k context"}}, Model: "fake",
		Recent: []DirChoice{{Path: "/home/u/src/app", Label: "~/src/app", Note: "the server's directory"}, {Path: "/srv/x", Label: "/srv/x"}}}
}

// TestNewSessionPage: the composer of a session to be: the directory field (prefilled,
// completed through the datalist as it is typed, which first holds the directories used
// lately), the model with its context window, the message and Send; each directory used
// lately is a button that fills the field in; a refusal shows at the field.
func TestNewSessionPage(t *testing.T) {
	v := testNewSessionView()
	doc := tree(t, NewSessionPage(v))
	f := one(t, doc, "form#new-session-form")
	if attr(f, "method") != "post" || attr(f, "action") != "/profiles/default/s" || attr(f, "enctype") != "multipart/form-data" {
		t.Errorf("form = %s", outerHTML(f))
	}
	in := one(t, f, "input#cwd")
	if attr(in, "name") != "cwd" || attr(in, "value") != v.Cwd || attr(in, "list") != "cwd-options" || attr(in, "hx-get") != v.CompleteURL ||
		attr(in, "hx-target") != "#cwd-options" || attr(in, "aria-invalid") != "" {
		t.Errorf("directory field = %s", outerHTML(in))
	}
	one(t, doc, "label[for=cwd]")
	if got := len(all(doc, "datalist#cwd-options option")); got != 2 {
		t.Errorf("the datalist offers %d directories at first, want the 2 used lately", got)
	}
	if got := textContent(one(t, f, "select#new-model option[selected][value=fake]")); got != "fake · 100k context" {
		t.Errorf("the model reads %q", got)
	}
	one(t, f, "label[for=new-model]")
	one(t, f, "textarea#prompt[name=text][required]") // an empty message is not sent
	one(t, f, "input#files[type=file][name=files]")
	if got := textContent(one(t, f, "button#start-session[type=submit]")); got != "Send" {
		t.Errorf("the send button reads %q", got)
	}
	picks := all(f, ".dir-choices button[data-dir]")
	if len(picks) != 2 || attr(picks[1], "data-dir") != "/srv/x" || attr(picks[1], "type") != "button" || attr(picks[1], "aria-label") != "Work in /srv/x" {
		t.Errorf("recent directories = %d", len(picks))
	}
	v.Text, v.Error = "fix it", "The message is empty."
	doc = tree(t, NewSessionPage(v))
	if got := textContent(one(t, doc, "textarea#prompt")); got != "fix it" {
		t.Errorf("a refused message is not kept: %q", got)
	}
	one(t, doc, "p#composer-error[role=alert]")
	v.Error = ""
	v.CwdError = `cwd "rel" is not an absolute path`
	doc = tree(t, NewSessionPage(v))
	in = one(t, doc, "input#cwd")
	if attr(in, "aria-invalid") != "true" || !strings.Contains(attr(in, "aria-describedby"), "cwd-error") {
		t.Errorf("a refused directory's field = %s", outerHTML(in))
	}
	if got := textContent(one(t, doc, "p#cwd-error[role=alert]")); got != v.CwdError {
		t.Errorf("the refusal reads %q", got)
	}
	opts := all(tree(t, DirOptions([]string{"/a/", "/b\x1b/", "/c/"})), "option")
	if len(opts) != 2 || attr(opts[1], "value") != "/c/" {
		t.Errorf("options = %d, want the two exact ones", len(opts))
	}
}
