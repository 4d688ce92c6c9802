package views

import (
	"reflect"
	"strings"
	"testing"

	"github.com/a-h/templ"

	"myco.dev/internal/termtext"
)

// evilName is a file name that pretends to be a text file (U+202E turns "txt.exe" round),
// sets a terminal's title (ESC ] 0 … BEL) and holds a byte that is not UTF-8.
const (
	evilName  = "rtl\u202etxt.exe\x1b]0;pwned\x07\xff"
	evilShown = `rtl\u202etxt.exe\x1b]0;pwned\x07\xff`
)

// rawControls are characters that must never reach a page raw.
var rawControls = []string{"\u202e", "\u202c", "\u2066", "\u2069", "\x1b", "\x07", "\x00", "\x7f", "\u009b", "\xff", "\r"}

// assertNoRaw fails if html holds a character that shown escapes.
func assertNoRaw(t *testing.T, what, html string) {
	t.Helper()
	if termtext.Safe(html) != html {
		for _, c := range rawControls {
			if i := strings.Index(html, c); i >= 0 {
				t.Errorf("%s holds a raw %q at %d: …%q…", what, c, i, html[max(0, i-60):min(len(html), i+60)])
				return
			}
		}
		t.Errorf("%s holds a raw control character", what)
	}
}

func TestShown(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"plain\ttext\nlines", "plain\ttext\nlines"},
		{"שלום עולם, مرحبا بالعالم", "שלום עולם, مرحبا بالعالم"}, // right-to-left letters are text
		{"a\u200fb", "a\u200fb"}, // a right-to-left mark is no embedding, override or isolate
		{evilName, evilShown},
		{"\u2066isolate\u2069 \u202aembed\u202c", `\u2066isolate\u2069 \u202aembed\u202c`},
		{"windows\r\nlines\r\n", "windows\nlines\n"},
		{"progress 10%\rprogress 20%", `progress 10%\x0dprogress 20%`},
		{"c1 \u009b31m", `c1 \x9b31m`},
		{"nul\x00 del\x7f", `nul\x00 del\x7f`},
	} {
		if got := shown(tt.in); got != tt.want {
			t.Errorf("shown(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestUntrustedTextShown: a session title and file names with a bidirectional override,
// ESC, BEL and an invalid byte reach every place a page shows them as visible escapes,
// never raw: the page title, the heading, the sidebar, the sessions list, the workspace
// listing, its crumbs, a tool card, a note, an error, streamed text.
func TestUntrustedTextShown(t *testing.T) {
	session := testSessionView()
	session.Title, session.Chrome.Title, session.Sidebar[0].Title = evilName, evilName, evilName
	list := testSessionsView()
	list.Rows[0].Title = evilName
	dir := testWorkspaceViews()["dir"]
	dir.Chrome.Title, dir.Dir[1].Name, dir.Crumbs[1].Title = evilName, evilName, evilName
	file := testWorkspaceViews()["text"]
	file.Chrome.Title, file.Crumbs[2].Title, file.Text = evilName, evilName, "a \x1b[2J clear\r\nb\tc\n"
	img := testWorkspaceViews()["image"]
	img.Path = "notes/" + evilName
	doc := testDocumentView()
	doc.Title, doc.Crumbs[2].Title = evilName, evilName
	tool := testTool("c1", "error")
	tool.Name, tool.Summary, tool.Input, tool.Output = evilName, evilName, "{\"path\": \""+evilName+"\"}", "out \x1b[31mred\x1b[0m\n\tnext\r\n"
	errPage := testErrorView()
	errPage.Message = "no file " + evilName
	status := testSessionView().Status
	status.Stopped, status.Hosts[1].Error = "write "+evilName+": no space", "ssh: "+evilName

	for _, tt := range []struct {
		name string
		c    templ.Component
		sel  string // the element whose text holds the escaped name (the first, if several match)
		want string // its text
	}{
		{"page title", SessionPage(session), "title", evilShown + " · myco"},
		{"heading", SessionPage(session), "h1#title", evilShown},
		{"sidebar", SessionPage(session), "li#side-s1 a", "● " + evilShown}, // busy
		{"title update", Title(evilName), "body", evilShown},
		{"sidebar update", SidebarItem(session.Sidebar[0]), "li#side-s1 a", "● " + evilShown},
		{"sessions list", SessionsPage(list), "li#row-s1 a.title", evilShown},
		{"listing", WorkspacePage(dir), "table.listing tbody tr td a[href=/profiles/default/workspace/notes/plan.txt]", evilShown},
		{"listing title", WorkspacePage(dir), "title", evilShown + " · myco"},
		{"crumbs", WorkspacePage(dir), "nav.crumbs span[aria-current=page]", evilShown},
		{"file crumb", WorkspacePage(file), "nav.crumbs span[aria-current=page]", evilShown},
		{"document title", DocumentPage(doc), "title", evilShown + " · myco"},
		{"document crumb", DocumentPage(doc), "nav.crumbs span[aria-current=page]", evilShown},
		{"tool name", ToolCard(tool), ".tool-name", evilShown},
		{"tool summary", ToolCard(tool), ".tool-summary", evilShown},
		{"tool input", ToolCard(tool), "pre.tool-input", `{"path": "` + evilShown + `"}`},
		{"note", Note("error", evilName), "p.note.error", evilShown},
		{"error page", ErrorPage(errPage), "main p", "no file " + evilShown},
		{"error fragment", ErrorFragment(evilName), "p.banner.error", evilShown},
		{"stopped", Status(status), ".stopped", "stopped: write " + evilShown + ": no space"},
		{"delta", Text(evilName), "body", evilShown},
		{"tool progress", ToolOutput(evilName), "pre.tool-output", evilShown},
		{"diff", ToolCard(ToolView{CallID: "c9", Name: "edit", Status: "ok", Diff: Diff(evilName, "", evilName)}), ".diff-path", evilShown},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out := render(t, tt.c)
			assertNoRaw(t, tt.name, out)
			found := all(parse(t, out), tt.sel)
			if len(found) == 0 {
				t.Fatalf("no %s in:\n%s", tt.sel, out)
			}
			if got := textContent(found[0]); got != tt.want {
				t.Errorf("%s: text = %q, want %q", tt.sel, got, tt.want)
			}
		})
	}

	// Attributes: the image's alt text, a host error's tooltip.
	if got := attr(one(t, tree(t, WorkspacePage(img)), "img.file-image"), "alt"); got != "notes/"+evilShown {
		t.Errorf("image alt = %q, want %q", got, "notes/"+evilShown)
	}
	if got := attr(one(t, tree(t, Status(status)), "span.host-state.down"), "title"); got != "ssh: "+evilShown {
		t.Errorf("host error title = %q", got)
	}
	// Text in <pre> keeps its newlines and tabs (a CRLF is a newline, as the HTML parser
	// reads it); the escape sequences show.
	if got, want := rawContent(one(t, tree(t, ToolCard(tool)), "pre.tool-output")), "out \\x1b[31mred\\x1b[0m\n\tnext\n"; got != want {
		t.Errorf("tool output = %q, want %q", got, want)
	}
	if got, want := rawContent(one(t, tree(t, WorkspacePage(file)), "pre.file-text")), "a \\x1b[2J clear\nb\tc\n"; got != want {
		t.Errorf("file text = %q, want %q", got, want)
	}
}

// TestEveryStringShown fills every string of the pages' view structs with control and
// bidirectional characters and an invalid byte, renders every page and fragment, and finds
// none of them raw: a field added to a view and written without shown fails here. Left
// out are the strings that are no text: URLs and ids (the handlers build them escaped),
// CSS classes, and the two that a form sends back as they are (the composer's kept text,
// the models' keys, which come from the config).
func TestEveryStringShown(t *testing.T) {
	const poison = "x\u202e\x1b]0;t\x07\xff\r\u2066\u009b"
	session, list, doc, errPage := testSessionView(), testSessionsView(), testDocumentView(), testErrorView()
	fill(reflect.ValueOf(&session).Elem(), poison)
	fill(reflect.ValueOf(&list).Elem(), poison)
	fill(reflect.ValueOf(&doc).Elem(), poison)
	fill(reflect.ValueOf(&errPage).Elem(), poison)
	readOnly := session
	readOnly.ReadOnly, readOnly.Title = true, ""
	single := testSessionView()
	single.Composer.Models = []string{"fake"}
	fill(reflect.ValueOf(&single).Elem(), poison)
	comps := map[string]templ.Component{
		"session":        SessionPage(session),
		"read-only":      SessionPage(readOnly),
		"one model":      SessionPage(single),
		"sessions":       SessionsPage(list),
		"session list":   SessionList(SessionsView{Query: poison}),
		"document":       DocumentPage(doc),
		"error":          ErrorPage(errPage),
		"error fragment": ErrorFragment(poison),
		"note":           Note("notice", poison),
		"text":           Text(poison),
		"tool output":    ToolOutput(poison),
		"title":          Title(poison),
		"earlier":        Earlier(2, "/profiles/default/s/s1/earlier?before=2", session.Messages),
		"partial":        Partial(IDLiveNotes, SwapAppend, Note("error", poison)),
		"markdown":       Markdown(poison+"\n\n```\n"+poison+"\n```\n\n`"+poison+"` [a](https://example.com/ \""+poison+"\")", MarkdownOptions{}),
	}
	for kind, v := range testWorkspaceViews() {
		fill(reflect.ValueOf(&v).Elem(), poison)
		comps["workspace "+kind] = WorkspacePage(v)
	}
	for name, c := range comps {
		out := render(t, c)
		assertNoRaw(t, name, out)
		// (Markdown reads the CR as a line break.)
		if !strings.Contains(out, `x\u202e\x1b]0;t\x07\xff`) || !strings.Contains(out, `\u2066\x9b`) {
			t.Errorf("%s does not show the poisoned text escaped:\n%s", name, out)
		}
	}
}

// notText are the string fields that hold no text (URLs, ids, classes, keys) or text the
// handlers format from numbers and times.
var notText = map[string]bool{
	"Time": true, "Activity": true, "Size": true, "Modified": true, "Tokens": true, "Work": true,
	"Base": true, "CSS": true, "JS": true, "EventsWorker": true, "Nav": true, "Profiles": true, "MissingAssets": true,
	"ID": true, "DOMID": true, "CallID": true, "Role": true, "NoteKind": true, "Status": true, "Indent": true,
	"Kind": true, "Filter": true, "ISO": true, "ISOTime": true, "Job": true, "Action": true,
	"ComposerView.Text": true, "ComposerView.Models": true, "ComposerView.Model": true, "SessionsView.Models": true, "SessionsView.Model": true,
}

// fill sets every string reachable from v (a settable struct, slice or pointer) to s,
// except the fields notText names or whose names end in URL.
func fill(v reflect.Value, s string) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			fill(v.Elem(), s)
		}
	case reflect.Slice:
		for i := range v.Len() {
			fill(v.Index(i), s)
		}
	case reflect.String:
		v.SetString(s)
	case reflect.Struct:
		for i := range v.NumField() {
			f := v.Type().Field(i)
			if notText[f.Name] || notText[v.Type().Name()+"."+f.Name] || strings.HasSuffix(f.Name, "URL") || !f.IsExported() {
				continue
			}
			if f.Type == reflect.TypeFor[templ.Component]() {
				if v.Field(i).IsNil() {
					continue // a block's other kinds
				}
				v.Field(i).Set(reflect.ValueOf(Markdown(s, MarkdownOptions{})))
				continue
			}
			fill(v.Field(i), s)
		}
	}
}

// TestMarkdownShown: rendered Markdown carries no raw control or bidirectional character
// in its text, its code (highlighted or not, inline or block), its tables, link titles
// and alt text, also when a character reference spells one; right-to-left text is left
// alone.
func TestMarkdownShown(t *testing.T) {
	for _, tt := range []struct{ name, src, want string }{
		{"paragraph", "a \x1b]0;x\x07 b \u202eevil\u202c \xff", `<p>a \x1b]0;x\x07 b \u202eevil\u202c \xff</p>`},
		{"references", "&#x202e; &#27; &#x7;", `<p>\u202e \x1b \x07</p>`},
		{"fenced code", "```\ncode \x1b[31m \u202e\n```", `<code>code \x1b[31m \u202e` + "\n</code>"},
		{"highlighted code", "```go\nx := \"\x1b\u2066\"\n```", `&#34;\x1b\u2066&#34;`},
		{"indented code", "    tab\there \x1b\n", "<code>tab\there \\x1b\n</code>"},
		{"inline code", "`a\x07b`", `<code>a\x07b</code>`},
		{"table", "| a\u202e | b |\n|---|---|\n| \x07 | x |\n", `<th>a\u202e</th>`},
		{"link title", "[l\u202eink](https://example.com/ \"ti\u202etle\")", `title="ti\u202etle"`},
		{"link text", "[l\u202eink](https://example.com/)", `>l\u202eink</a>`},
		{"image alt", "![a\u202elt](/w/x.png)", `alt="a\u202elt"`},
		{"right to left", "שלום עולם — مرحبا", "<p>שלום עולם — مرحبا</p>"},
		{"too long to format", strings.Repeat("[a](", 1<<12) + "\x1b", `\x1b</pre>`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out := Markdown(tt.src, MarkdownOptions{WorkspaceDir: "/w", WorkspaceURL: "/profiles/default/workspace/"}).String()
			assertNoRaw(t, "Markdown", out)
			if !strings.Contains(out, tt.want) {
				t.Errorf("Markdown(%q) = %q, want it to hold %q", tt.src, out, tt.want)
			}
		})
	}
}
