package views

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/a-h/templ"
	"golang.org/x/net/html"
)

// The component tests render literal view structs and query the parsed tree: what a
// reader, assistive technology and htmx find in it.

// ids returns every element id of doc, in document order.
func ids(doc *html.Node) []string {
	var out []string
	for _, n := range all(doc, "[id]") {
		out = append(out, attr(n, "id"))
	}
	return out
}

// noDuplicateIDs fails if two elements share an id: htmx would swap the first only.
func noDuplicateIDs(t *testing.T, doc *html.Node) {
	t.Helper()
	seen := map[string]bool{}
	for _, id := range ids(doc) {
		if seen[id] {
			t.Errorf("id %q is used twice", id)
		}
		seen[id] = true
	}
}

// TestSessionPage: the page has every element the stream targets, once, with the ids the
// handlers aim at; the messages in order; the sidebar marks the current session; the
// status, the composer and the head show what the view says.
func TestSessionPage(t *testing.T) {
	v := testSessionView()
	doc := tree(t, SessionPage(v))
	noDuplicateIDs(t, doc)
	for _, id := range []string{IDTranscript, IDEarlier, IDMessages, IDLive, IDLiveText, IDLiveThinking, IDLiveNotes, IDStatus,
		IDSessionHead, IDTitle, IDComposerSlot, IDToast, SidebarID("s1"), MessageID("t2", 3), MessageID("t2", 4), EndID("t2", 0),
		ToolID("c1"), ToolOutputID("c1"), ToolID("c4"), ToolOutputID("c4")} {
		one(t, doc, "#"+id)
	}
	if got := textContent(one(t, doc, "title")); got != "Fix the build · myco" {
		t.Errorf("<title> = %q", got)
	}
	if got := textContent(one(t, doc, "h1#"+IDTitle)); got != "Fix the build" {
		t.Errorf("heading = %q", got)
	}
	tr := one(t, doc, "main#main.session #"+IDTranscript) // one main landmark, at the top level
	if got := attr(tr, "data-events"); got != v.EventsURL {
		t.Errorf("data-events = %q, want %q", got, v.EventsURL)
	}
	// The messages, in order, inside #messages; the live region after them.
	var order []string
	for _, a := range all(doc, "#"+IDMessages+" article") {
		order = append(order, attr(a, "id"))
	}
	if want := []string{"m-t2-3", "m-t2-4", "end-t2-0"}; !slices.Equal(order, want) {
		t.Errorf("messages = %v, want %v", order, want)
	}
	one(t, doc, "#"+IDLive+"[aria-live=polite] #"+IDLiveText+".streaming")
	// Load earlier replaces its own slot.
	b := one(t, doc, "#"+IDEarlier+" button")
	if textContent(b) != "Load 3 earlier messages" || attr(b, "hx-get") != v.EarlyURL || attr(b, "hx-target") != "#"+IDEarlier || attr(b, "hx-swap") != "outerHTML" {
		t.Errorf("load earlier = %s", outerHTML(b))
	}
	// The sidebar: the current session, busy, marked for assistive technology too.
	side := one(t, doc, "aside[aria-label=Sessions] li#side-s1.current.busy a[aria-current=page]")
	if got := textContent(side); got != "● Fix the build" {
		t.Errorf("sidebar item = %q", got)
	}
	one(t, doc, "li#side-s1 .dot.busy[title=working]")
	none(t, doc, "li#side-s3 [aria-current]")
	if got := textContent(one(t, doc, "li#side-s3 a .muted")); got != "Untitled" {
		t.Errorf("untitled sidebar item = %q", got)
	}
	// The head: parent, threads with the current one marked, archive, children.
	if got := attr(one(t, doc, "#session-head p.muted a"), "href"); got != "/profiles/default/s/s0/" {
		t.Errorf("parent link = %q", got)
	}
	if got := textContent(one(t, doc, "details.threads > summary")); got != "Threads (2)" {
		t.Errorf("threads summary = %q", got)
	}
	if got := attr(one(t, doc, "ol#threads a[aria-current=page]"), "href"); got != "/profiles/default/s/s1/t/t2" {
		t.Errorf("current thread links %q", got)
	}
	one(t, doc, "ol#threads details.summary .md em")
	if f := one(t, doc, "form#rename-form[hidden]"); attr(f, "hx-post") != "/profiles/default/s/s1/title" || attr(f, "hx-target") != "#"+IDTitle {
		t.Errorf("rename form = %s", outerHTML(f))
	}
	one(t, doc, "button#rename")
	if a := one(t, doc, "a.export[download]"); attr(a, "href") != "/profiles/default/s/s1/export.md" {
		t.Errorf("export = %s", outerHTML(a))
	}
	if f := one(t, doc, "#session-head .session-actions form"); attr(f, "action") != "/profiles/default/s/s1/archive" || textContent(f) != "Archive" {
		t.Errorf("archive form = %s", outerHTML(f))
	}
	if got := textContent(one(t, doc, "details#tree > summary")); got != "Child sessions: 2, 1 working · 1,234 tokens · $0.42 · 3.0 s · 2 open tool calls" {
		t.Errorf("tree summary = %q", got)
	}
	one(t, doc, "ul.tree li.d1 a[href=/profiles/default/s/s2/]")
	// The dock: a busy status with Stop, the composer posting into its slot.
	one(t, doc, ".dock #"+IDStatus+" .status-bar.busy button#stop")
	f := one(t, doc, "#"+IDComposerSlot+" form#composer")
	if attr(f, "hx-post") != v.Composer.Action || attr(f, "hx-target") != "#"+IDComposerSlot || attr(f, "hx-swap") != "innerHTML" {
		t.Errorf("composer = %s", outerHTML(f))
	}
	if got := textContent(one(t, f, "p#composer-error[role=alert]")); got != "The session is busy." {
		t.Errorf("composer error = %q", got)
	}
	if got := attr(one(t, f, "select#model option[selected]"), "value"); got != "fake" {
		t.Errorf("selected model = %q", got)
	}
	none(t, doc, "p.banner[role=note]")

	t.Run("read-only", func(t *testing.T) {
		v := testSessionView()
		v.ReadOnly, v.EventsURL, v.Archived = true, "", true
		doc := tree(t, SessionPage(v))
		if got := attr(one(t, doc, "p.banner[role=note] a"), "href"); got != v.URL {
			t.Errorf("the banner links %q, want the active thread %q", got, v.URL)
		}
		none(t, doc, "#"+IDStatus)
		none(t, doc, "#composer")
		none(t, doc, "main[data-events]")
		if f := one(t, doc, "#session-head .session-actions form"); attr(f, "action") != "/profiles/default/s/s1/restore" || textContent(f) != "Restore" {
			t.Errorf("restore form = %s", outerHTML(f))
		}
	})
	t.Run("new", func(t *testing.T) {
		v := SessionView{Chrome: testChrome("New session"), ID: "s9", URL: "/profiles/default/s/s9/",
			Composer: ComposerView{Action: "/profiles/default/s/s9/submit", Models: []string{"fake"}, Model: "fake"},
			Live:     LiveView{Empty: true}}
		doc := tree(t, SessionPage(v))
		if got := textContent(one(t, doc, "h1#"+IDTitle+" span.muted")); got != "New session" {
			t.Errorf("untitled heading = %q", got)
		}
		one(t, doc, "#"+IDLiveNotes+" p.empty")
		none(t, doc, "#"+IDEarlier+" button")
		none(t, doc, "select#model")
		if got := textContent(one(t, doc, "#composer span.model")); got != "fake" {
			t.Errorf("the one model = %q", got)
		}
		one(t, doc, ".status-bar span.idle")
	})
}

func TestMessage(t *testing.T) {
	t.Run("user", func(t *testing.T) {
		m := testSessionView().Messages[0]
		doc := tree(t, Message(m))
		a := one(t, doc, "article#m-t2-3.msg.user")
		if got := attr(one(t, a, "header time"), "datetime"); got != "2026-01-02T15:04:00Z" {
			t.Errorf("time = %q", got)
		}
		one(t, a, ".md p strong")
		if got := attr(one(t, a, "a.thumb img[loading=lazy]"), "alt"); got != "attached image" {
			t.Errorf("image alt = %q", got)
		}
	})
	t.Run("assistant", func(t *testing.T) {
		m := testSessionView().Messages[1]
		m.Time = "15:04"
		doc := tree(t, Message(m))
		a := one(t, doc, "article#m-t2-4.msg.assistant")
		none(t, a, "header") // no time on the model's messages
		th := one(t, a, "details.thinking")
		if _, open := attrOf(th, "open"); open {
			t.Errorf("thinking is open; it starts collapsed")
		}
		if got := strings.TrimSpace(textContent(one(t, th, ".thinking-text"))); got != "Reading the tests. The tests <fail>." {
			t.Errorf("thinking = %q", got)
		}
		if got := textContent(one(t, th, ".thinking-text strong")); got != "Reading the tests." {
			t.Errorf("a reasoning summary's heading = %q, want it bold, not **raw**", got)
		}
		none(t, th, "fail")
		if got := len(all(a, "details.tool")); got != 4 {
			t.Errorf("%d tool cards, want 4", got)
		}
	})
	t.Run("note", func(t *testing.T) {
		m := MessageView{DOMID: EndID("t1", 2), Role: "end", Time: "15:05:00", Blocks: []Block{{Note: "Stopped <now>.", NoteKind: "cancelled"}}}
		doc := tree(t, Message(m))
		if got := textContent(one(t, doc, "article#end-t1-2.msg.end p.note.cancelled[role=status]")); got != "Stopped <now>." {
			t.Errorf("note = %q", got)
		}
		none(t, doc, "header")
	})
}

// TestToolCard: a card per state, with the status as class and as words, its ids from the
// call id, the output kept as it is in a <pre>, and "show all" when cut. The markup is
// pinned by testdata/TestToolCard/*.golden (go test ./views -update rewrites them).
func TestToolCard(t *testing.T) {
	for _, tt := range []struct {
		status, label string
	}{
		{"running", "running…"},
		{"ok", "ok"},
		{"error", "error"},
		{"unknown", "outcome unknown"},
	} {
		t.Run(tt.status, func(t *testing.T) {
			tool := testTool("call.1/x", tt.status)
			out := render(t, ToolCard(tool))
			golden(t, tt.status, out)
			doc := parse(t, out)
			card := one(t, doc, "details#tool-call_1_x.tool."+tt.status)
			if got := textContent(one(t, card, "summary .tool-status."+tt.status)); got != tt.label {
				t.Errorf("status = %q, want %q", got, tt.label)
			}
			if got := textContent(one(t, card, "summary .tool-name")); got != "bash" {
				t.Errorf("name = %q", got)
			}
			if got := textContent(one(t, card, "summary .host")); got != "builder" {
				t.Errorf("host = %q", got)
			}
			if got := rawContent(one(t, card, "#"+ToolOutputID("call.1/x")+" pre.tool-output")); got != tool.Output {
				t.Errorf("output = %q, want %q", got, tool.Output)
			}
			if got := rawContent(one(t, card, "pre.tool-input")); got != tool.Input {
				t.Errorf("input = %q", got)
			}
			none(t, card, "details.show-all")
		})
	}
	t.Run("local", func(t *testing.T) {
		tool := testTool("c1", "running")
		tool.Host, tool.Duration, tool.Output = "local", "", ""
		card := tree(t, ToolCard(tool))
		none(t, card, ".host")
		none(t, card, ".duration")
		none(t, card, "pre.tool-output")
		one(t, card, "#tool-c1-out")
	})
	t.Run("cut", func(t *testing.T) {
		tool := testTool("c1", "ok")
		tool.Cut = true
		tool.Links = []Link{{Title: "child session s2", URL: "/profiles/default/s/s2/"}}
		card := tree(t, ToolCard(tool))
		more := one(t, card, "#tool-c1-out details.show-all")
		if attr(more, "hx-get") != tool.FullURL || attr(more, "hx-trigger") != "toggle once" || attr(more, "hx-target") != "#tool-c1-out" {
			t.Errorf("show all = %s", outerHTML(more))
		}
		if got := attr(one(t, card, "button.copy-output"), "data-copy-url"); got != tool.FullURL+"?format=text" {
			t.Errorf("Copy output copies %q, want the whole output as text", got)
		}
		if got := attr(one(t, more, ".full a"), "href"); got != tool.FullURL {
			t.Errorf("the no-script link = %q", got)
		}
		if got := textContent(one(t, card, "p.note.notice a[href=/profiles/default/s/s2/]")); got != "child session s2" {
			t.Errorf("child link = %q", got)
		}
	})
	t.Run("diff", func(t *testing.T) {
		tool := testTool("c2", "ok")
		tool.Diff = Diff("/src/a.go", "a\nb\n", "a\nc\nd\n")
		out := render(t, ToolCard(tool))
		golden(t, "diff", out)
		card := parse(t, out)
		if got := textContent(one(t, card, "summary .diffstat")); got != "+2 −1" {
			t.Errorf("diffstat = %q", got)
		}
		none(t, card, "pre.tool-input") // the diff shows the input
		var lines []string
		for _, s := range all(card, ".diff pre span") {
			lines = append(lines, attr(s, "class")+":"+rawContent(s))
		}
		if want := []string{"ctx: a\n", "del:-b\n", "add:+c\n", "add:+d\n"}; !slices.Equal(lines, want) {
			t.Errorf("diff lines = %q, want %q", lines, want)
		}
	})
	t.Run("diff of a CRLF file", func(t *testing.T) {
		tool := testTool("c2", "ok")
		tool.Diff = Diff("a.txt", "a\r\nb\r\n", "a\r\nc\r\n")
		if got := rawContent(one(t, tree(t, ToolCard(tool)), ".diff pre")); got != " a\n-b\n+c\n" {
			t.Errorf("diff = %q: a CRLF is a line break, not \\x0d", got)
		}
	})
}

// TestStatus: the status bar says what runs, offers Stop only while busy, and shows a
// stopped session, the hosts and the context meter.
func TestStatus(t *testing.T) {
	base := testSessionView().Status
	for _, tt := range []struct {
		name  string
		edit  func(*StatusView)
		state string // the selector of the state's words
		words string
		stop  bool
	}{
		{"turn", func(*StatusView) {}, ".status-bar.busy span.working", "working…", true},
		{"compact", func(s *StatusView) { s.Job = "compact" }, ".status-bar.busy span.working", "compacting…", true},
		{"elsewhere", func(s *StatusView) { s.Busy, s.Elsewhere = false, "myco -p (pid 42)" }, "span.elsewhere", "busy elsewhere: myco -p (pid 42)", false},
		{"idle", func(s *StatusView) { s.Busy = false }, "span.idle", "ready", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := base
			tt.edit(&s)
			doc := tree(t, Status(s))
			if got := textContent(one(t, doc, tt.state)); got != tt.words {
				t.Errorf("%s = %q, want %q", tt.state, got, tt.words)
			}
			if stop := all(doc, "form button#stop"); (len(stop) == 1) != tt.stop {
				t.Errorf("stop buttons: %d, want one: %v", len(stop), tt.stop)
			}
			if tt.stop {
				f := one(t, doc, "form.inline")
				if attr(f, "action") != s.StopURL || attr(f, "hx-post") != s.StopURL {
					t.Errorf("stop form = %s", outerHTML(f))
				}
			} else {
				none(t, doc, ".status-bar.busy")
			}
		})
	}
	s := base
	s.Stopped = "write session: no space left on device"
	doc := tree(t, Status(s))
	if got := textContent(one(t, doc, "span.stopped[role=alert]")); got != "stopped: write session: no space left on device" {
		t.Errorf("stopped = %q", got)
	}
	if got := textContent(one(t, doc, "span.host-state.down[title=ssh: connection refused]")); got != "gpu: down" {
		t.Errorf("host = %q", got)
	}
	m := one(t, doc, "label.meter meter")
	if attr(m, "max") != "100000" || attr(m, "value") != "12345" || attr(m, "low") != "50000" || attr(m, "high") != "80000" {
		t.Errorf("meter = %s", outerHTML(m))
	}
	if got := textContent(one(t, doc, "label.meter")); got != "12k of 100k tokens (12%)" {
		t.Errorf("meter text = %q", got)
	}
	s.Window = 0
	none(t, tree(t, Status(s)), "meter")
}

func TestSidebarItem(t *testing.T) {
	for _, tt := range []struct {
		name    string
		row     SessionRow
		sel     string
		text    string
		current bool
	}{
		{"current busy", SessionRow{ID: "s1", URL: "/s/s1/", Title: "Fix <it>", Busy: true, Current: true}, "li#side-s1.current.busy", "● Fix <it>", true},
		{"other", SessionRow{ID: "s2", URL: "/s/s2/", Title: "Other"}, "li#side-s2", "Other", false},
		{"untitled", SessionRow{ID: "s3", URL: "/s/s3/"}, "li#side-s3", "Untitled", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			doc := tree(t, SidebarItem(tt.row))
			li := one(t, doc, tt.sel)
			a := one(t, li, "a[href="+tt.row.URL+"]")
			if got := textContent(a); got != tt.text {
				t.Errorf("text = %q, want %q", got, tt.text)
			}
			if got := attr(a, "aria-current"); (got == "page") != tt.current {
				t.Errorf("aria-current = %q, current %v", got, tt.current)
			}
			if !tt.current && hasClass(li, "current") {
				t.Errorf("class current on another session")
			}
		})
	}
}

func TestNote(t *testing.T) {
	doc := tree(t, Note("error", "The turn failed: <500>"))
	if got := textContent(one(t, doc, "p.note.error[role=status]")); got != "The turn failed: <500>" {
		t.Errorf("note = %q", got)
	}
}

// TestPartial: a partial names its target as a selector of the id it is given and swaps
// with the given style; the content is escaped text.
func TestPartial(t *testing.T) {
	for _, tt := range []struct {
		c              templ.Component
		target, swap   string
		child, content string
	}{
		{Partial(IDLiveText, SwapAppend, Text("a <b>")), "#live-text", "beforeend", "", "a <b>"},
		{Partial(SidebarID("s1"), SwapOuter, SidebarItem(SessionRow{ID: "s1", URL: "/s/s1/", Title: "T"})), "#side-s1", "outerHTML", "li#side-s1", "T"},
		{Partial(ToolOutputID("c1"), SwapInner, ToolOutput("out\n")), "#tool-c1-out", "innerHTML", "pre.tool-output", "out"},
		{Partial(MessageID("t1", 0), SwapDelete, templ.NopComponent), "#m-t1-0", "delete", "", ""},
		{ErrorFragment("No <such> session."), "#toast", "innerHTML", "p.banner.error[role=alert]", "No <such> session."},
	} {
		doc := tree(t, tt.c)
		p := one(t, doc, "hx-partial")
		if attr(p, "hx-target") != tt.target || attr(p, "hx-swap") != tt.swap {
			t.Errorf("partial = %s, want target %s swap %s", outerHTML(p), tt.target, tt.swap)
		}
		if tt.child != "" {
			one(t, p, tt.child)
		}
		if got := textContent(p); got != tt.content {
			t.Errorf("partial %s content = %q, want %q", tt.target, got, tt.content)
		}
		none(t, p, "b")
	}
}

// TestSessionsPage: rows with their ids and actions aimed at themselves, the filters with
// the current one marked, the search swapping the list, and the empty states.
func TestSessionsPage(t *testing.T) {
	v := testSessionsView()
	doc := tree(t, SessionsPage(v))
	noDuplicateIDs(t, doc)
	r1 := one(t, doc, "ul#"+IDSessionList+" li#row-s1.session-row.busy")
	if got := textContent(one(t, r1, "a.title")); got != "Fix the build" {
		t.Errorf("title = %q", got)
	}
	if got := attr(one(t, r1, "time"), "datetime"); got != "2026-01-02T15:04:00Z" {
		t.Errorf("time = %q", got)
	}
	for _, tt := range []struct{ id, action, label string }{
		{"s1", "archive", "Archive"},
		{"s2", "restore", "Restore"},
	} {
		f := one(t, doc, "li#"+RowID(tt.id)+" form")
		u := "/profiles/default/s/" + tt.id + "/" + tt.action
		if attr(f, "action") != u || attr(f, "hx-post") != u || attr(f, "hx-target") != "#"+RowID(tt.id) || attr(f, "hx-swap") != "outerHTML" || textContent(f) != tt.label {
			t.Errorf("row %s form = %s", tt.id, outerHTML(f))
		}
	}
	r2 := one(t, doc, "li#row-s2.archived")
	if textContent(one(t, r2, "a.title .muted")) != "Untitled session" || textContent(one(t, r2, ".badge")) != "archived" {
		t.Errorf("archived untitled row = %s", outerHTML(r2))
	}
	if got := textContent(one(t, doc, ".segmented[role=group] a[aria-current=page]")); got != "Active" {
		t.Errorf("current filter = %q", got)
	}
	s := one(t, doc, "form.filters input[type=search]")
	if attr(s, "hx-target") != "#"+IDSessionList || attr(s, "hx-select") != "#"+IDSessionList || attr(s, "hx-get") != "/profiles/default/" {
		t.Errorf("search = %s", outerHTML(s))
	}
	if got := textContent(one(t, doc, "main p.banner[role=status]")); got != v.Message {
		t.Errorf("message = %q", got)
	}
	// New session asks for the directory on its own page; in a filtered list, that one.
	if f := one(t, doc, "form.new-session"); attr(f, "method") != "get" || attr(f, "action") != "/profiles/default/new" || len(all(f, "input[name=cwd]")) != 0 {
		t.Errorf("new session form = %s", outerHTML(f))
	}
	fv := v
	fv.Cwd, fv.Dirs = "/src/a", []DirChoice{{Path: "/src/a", Label: "/src/a", Current: true}, {Path: "/src/b", Label: "/src/b"}}
	fdoc := tree(t, SessionsPage(fv))
	if in := one(t, fdoc, "form.new-session input[type=hidden][name=cwd]"); attr(in, "value") != "/src/a" {
		t.Errorf("new session in a filtered list = %s", outerHTML(in))
	}
	one(t, fdoc, "label[for=dir-filter]")
	if o := one(t, fdoc, "select#dir-filter option[selected]"); attr(o, "value") != "/src/a" {
		t.Errorf("the directory filter selects %s", outerHTML(o))
	}
	if got := attr(one(t, fdoc, ".segmented a[aria-current=page]"), "href"); got != "/profiles/default/?filter=active&cwd=%2Fsrc%2Fa" {
		t.Errorf("filter link in a filtered list = %q", got)
	}

	for _, tt := range []struct{ filter, query, want string }{
		{"active", "", "No sessions yet: start one with New session."},
		{"archived", "", "No archived sessions."},
		{"all", "<b>x</b>", "No session matches “<b>x</b>”."},
	} {
		v := SessionsView{Filter: tt.filter, Query: tt.query}
		if got := textContent(one(t, tree(t, SessionList(v)), "ul#"+IDSessionList+" li.empty")); got != tt.want {
			t.Errorf("empty %s %q = %q, want %q", tt.filter, tt.query, got, tt.want)
		}
	}
	// The filter links keep the search.
	v.Query = "a b"
	if got := attr(one(t, tree(t, SessionsPage(v)), ".segmented a[aria-current=page]"), "href"); got != "/profiles/default/?filter=active&q=a+b" {
		t.Errorf("filter link = %q", got)
	}
}

// TestWorkspacePage: a listing, a page of text, an image and a download, under crumbs
// whose last step is the current page.
func TestWorkspacePage(t *testing.T) {
	vs := testWorkspaceViews()
	t.Run("dir", func(t *testing.T) {
		doc := tree(t, WorkspacePage(vs["dir"]))
		rows := all(doc, "table.listing tbody tr")
		if len(rows) != 2 || !hasClass(rows[0], "dir") || hasClass(rows[1], "dir") {
			t.Fatalf("rows = %d: %s", len(rows), outerHTML(one(t, doc, "table.listing")))
		}
		if got := attr(one(t, rows[1], "a"), "href"); got != "/profiles/default/workspace/notes/plan.txt" {
			t.Errorf("file link = %q", got)
		}
		var cells []string
		for _, td := range all(rows[1], "td") {
			cells = append(cells, textContent(td))
		}
		if want := []string{"plan.txt", "12 B", "2026-01-02 15:04"}; !slices.Equal(cells, want) {
			t.Errorf("file row = %q, want %q", cells, want)
		}
		if !strings.Contains(textContent(one(t, doc, "main p.muted")), "The listing is cut") {
			t.Errorf("a cut listing does not say so")
		}
		if got := textContent(one(t, doc, "nav.crumbs[aria-label=Path] span[aria-current=page]")); got != "notes" {
			t.Errorf("current crumb = %q", got)
		}
		one(t, doc, "header.top nav a[aria-current=true][href=/profiles/default/]")
	})
	t.Run("empty", func(t *testing.T) {
		doc := tree(t, WorkspacePage(vs["empty"]))
		if got := textContent(one(t, doc, "table.listing tbody td.muted[colspan=3]")); got != "Empty." {
			t.Errorf("empty listing = %q", got)
		}
		none(t, doc, "nav.crumbs a")
	})
	t.Run("text", func(t *testing.T) {
		v := vs["text"]
		doc := tree(t, WorkspacePage(v))
		pre := one(t, doc, "pre.file-text")
		if got := rawContent(pre); got != v.Text {
			t.Errorf("text = %q, want %q", got, v.Text)
		}
		none(t, pre, "b")
		head := one(t, doc, ".file-head")
		if !strings.Contains(textContent(head), "page 2 of 3") {
			t.Errorf("file head = %q", textContent(head))
		}
		for _, u := range []string{v.PrevURL, v.NextURL, v.RawURL} {
			one(t, head, "a[href="+u+"]")
		}
		if got := len(all(doc, "nav.crumbs a")); got != 2 {
			t.Errorf("%d crumb links, want 2", got)
		}
	})
	t.Run("image", func(t *testing.T) {
		v := vs["image"]
		img := one(t, tree(t, WorkspacePage(v)), "img.file-image")
		if attr(img, "src") != v.RawURL || attr(img, "alt") != v.Path {
			t.Errorf("image = %s", outerHTML(img))
		}
	})
	t.Run("download", func(t *testing.T) {
		v := vs["download"]
		a := one(t, tree(t, WorkspacePage(v)), "a[download]")
		if attr(a, "href") != v.RawURL || textContent(a) != "Download it" {
			t.Errorf("download = %s", outerHTML(a))
		}
	})
}

// TestDocumentPage: a workspace document is the rendered body and its path, with no script
// of the application: it is served sandboxed.
func TestDocumentPage(t *testing.T) {
	v := testDocumentView()
	doc := tree(t, DocumentPage(v))
	none(t, doc, "script")
	none(t, doc, "[hx-get]")
	if got := textContent(one(t, doc, "main.md.document-body h1")); got != "The plan" {
		t.Errorf("heading = %q", got)
	}
	if got := textContent(one(t, doc, "title")); got != "plan.md · myco" {
		t.Errorf("title = %q", got)
	}
	if got := attr(one(t, doc, "a.brand"), "href"); got != v.BackURL {
		t.Errorf("brand = %q", got)
	}
	one(t, doc, "header.top > a[href="+v.RawURL+"]")
	if got := textContent(one(t, doc, "nav.crumbs span[aria-current=page]")); got != "plan.md" {
		t.Errorf("current crumb = %q", got)
	}
}

func TestErrorPage(t *testing.T) {
	for _, tt := range []struct {
		code int
		h1   string
	}{
		{404, "Not Found"},
		{409, "Conflict"},
		{599, "Error 599"},
	} {
		v := testErrorView()
		v.Code, v.Message = tt.code, "No <file> here."
		doc := tree(t, ErrorPage(v))
		if got := textContent(one(t, doc, "main.error-page h1")); got != tt.h1 {
			t.Errorf("code %d: heading = %q, want %q", tt.code, got, tt.h1)
		}
		if got := textContent(all(doc, "main.error-page p")[0]); got != "No <file> here." {
			t.Errorf("message = %q", got)
		}
		none(t, doc, "main file")
		one(t, doc, "main.error-page a[href=/profiles/default/]")
	}
}

// TestLayout: the frame every page shares: the profile switcher when there are several
// profiles, the navigation, the search, the alert areas, the assets.
func TestLayout(t *testing.T) {
	v := testErrorView()
	v.MissingAssets, v.Nav = []string{"htmx.min.js"}, ""
	doc := tree(t, ErrorPage(v))
	if got := textContent(one(t, doc, "details.profiles li a[aria-current=true]")); got != "default" {
		t.Errorf("current profile = %q", got)
	}
	one(t, doc, "details.profiles li a[href=/profiles/work/]")
	one(t, doc, "form.search[role=search] input#search[aria-label=Search sessions]")
	one(t, doc, "#"+IDToast+"[aria-live=assertive]")
	one(t, doc, "#conn-banner[role=status][hidden]")
	one(t, doc, "head link[rel=stylesheet][href=/static/app.css]")
	one(t, doc, "head script[src=/static/app.js][defer]")
	if got := textContent(one(t, doc, "p.banner.warn[role=alert] code")); got != "make assets" {
		t.Errorf("missing assets banner = %q", got)
	}
	none(t, doc, "header.top nav a[aria-current]") // an error page is in no section
	v.Nav = "workspace"
	if got := textContent(one(t, tree(t, ErrorPage(v)), "header.top nav a[aria-current=true]")); got != "Workspace" {
		t.Errorf("current section = %q", got)
	}

	v.Profiles = nil
	doc = tree(t, ErrorPage(v))
	none(t, doc, "details.profiles")
	if got := textContent(one(t, doc, "span.profile")); got != "default" {
		t.Errorf("profile = %q", got)
	}
}

func TestDiff(t *testing.T) {
	long := strings.Repeat("x", 10000)
	many := func(n int, prefix string) string {
		var b strings.Builder
		for i := range n {
			b.WriteString(prefix + strings.Repeat("y", i%7) + "\n")
		}
		return b.String()
	}
	lines := func(ops string, texts ...string) []DiffLine {
		out := make([]DiffLine, len(texts))
		for i, t := range texts {
			out[i] = DiffLine{ops[i], t}
		}
		return out
	}
	for _, tt := range []struct {
		name, old, new string
		want           DiffView
	}{
		{"empty", "", "", DiffView{OnlyAdditions: true}},
		{"additions", "", "a\nb\n", DiffView{Added: 2, OnlyAdditions: true, Lines: lines("++", "a", "b")}},
		{"removals", "a\nb\n", "", DiffView{Gone: 2, Lines: lines("--", "a", "b")}},
		{"context", "a\nb\nc\n", "a\nB\nc\n", DiffView{Added: 1, Gone: 1, Lines: lines(" -+ ", "a", "b", "B", "c")}},
		{"unchanged", "a\nb\n", "a\nb", DiffView{Lines: lines("  ", "a", "b")}},
		{"insert in the middle", "a\nc\n", "a\nb\nc\n", DiffView{Added: 1, Lines: lines(" + ", "a", "b", "c")}},
		{"blank lines", "a\n\nb\n", "a\nb\n", DiffView{Gone: 1, Lines: lines(" - ", "a", "", "b")}},
		{"long lines", long + "\n", long + "z\n", DiffView{Added: 1, Gone: 1, Lines: lines("-+", long, long+"z")}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.want.Path = "/p.go"
			if got := Diff("/p.go", tt.old, tt.new); !reflect.DeepEqual(*got, tt.want) {
				t.Errorf("Diff(%.40q, %.40q) =\n%+v\nwant\n%+v", tt.old, tt.new, *got, tt.want)
			}
		})
	}
	t.Run("cut", func(t *testing.T) {
		d := Diff("p", "", many(500, "l"))
		if !d.Cut || len(d.Lines) != diffMaxLines || d.Added != 500 || d.Gone != 0 {
			t.Errorf("Diff of 500 new lines: cut %v, %d lines, +%d -%d; want cut, %d lines, +500", d.Cut, len(d.Lines), d.Added, d.Gone, diffMaxLines)
		}
	})
	t.Run("too much work", func(t *testing.T) {
		// 3000 × 3000 comparisons is over diffMaxWork: all removals, then all additions.
		d := Diff("p", many(3000, "old"), many(3000, "new"))
		if d.Added != 3000 || d.Gone != 3000 || !d.Cut || len(d.Lines) != diffMaxLines {
			t.Fatalf("+%d -%d cut %v lines %d", d.Added, d.Gone, d.Cut, len(d.Lines))
		}
		for _, l := range d.Lines {
			if l.Op != '-' {
				t.Fatalf("a line %q before the removals end", l)
			}
		}
	})
}

// TestIDs: the ids the handlers aim at are the ids the components render.
func TestIDs(t *testing.T) {
	for _, tt := range []struct{ got, want string }{
		{ToolID("toolu_01AbC-9"), "tool-toolu_01AbC-9"},
		{ToolID("call.1/x \"y\""), "tool-call_1_x__y_"},
		{ToolOutputID("c1"), "tool-c1-out"},
		{MessageID("t2", 14), "m-t2-14"},
		{EndID("t2", 0), "end-t2-0"},
		{SidebarID("s1"), "side-s1"},
		{RowID("s1"), "row-s1"},
	} {
		if tt.got != tt.want {
			t.Errorf("id = %q, want %q", tt.got, tt.want)
		}
	}
	row := SessionRow{ID: "s1", URL: "/s/s1/", Title: "T"}
	one(t, tree(t, SessionItem("/profiles/default", row)), "#"+RowID("s1"))
	one(t, tree(t, SidebarItem(row)), "#"+SidebarID("s1"))
	one(t, tree(t, ToolCard(ToolView{CallID: "a.b", Status: "ok"})), "#tool-a_b #tool-a_b-out")
}

// TestLiveRegion: a page opened mid-answer shows what streamed so far: the settled
// Markdown rendered, the open end as text, the thinking; the stream's partials aim at the
// same ids.
func TestLiveRegion(t *testing.T) {
	md := NewLiveMarkdown(MarkdownOptions{})
	md.Add("## Plan\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\nNow the `cod")
	doc := tree(t, Live(LiveView{Settled: md.Settled(), Open: md.Open(), Thinking: "thinking…"}))
	one(t, doc, "#"+IDLiveText+" #"+IDLiveMarkdown+" h2")
	one(t, doc, "#"+IDLiveMarkdown+" table tbody tr")
	if got := textContent(one(t, doc, "#"+IDLiveTail)); got != "Now the `cod" {
		t.Errorf("tail = %q, want the open end as text", got)
	}
	if got := textContent(one(t, doc, "#"+IDLiveThinking)); got != "thinking…" {
		t.Errorf("thinking = %q", got)
	}
	none(t, doc, "#"+IDLiveNotes+" p.empty")
}
