package views

// Literal view structs that show every part of the pages, for the component, escaping and
// accessibility tests. Each call returns a fresh value, so a test may change it.

func testChrome(title string) Chrome {
	return Chrome{Title: title, Profile: "default", Base: "/profiles/default", CSS: []string{"/static/app.css"},
		JS: []string{"/static/app.js"}, Nav: "sessions", Profiles: []string{"default", "work"}}
}

func testTool(call, status string) ToolView {
	return ToolView{CallID: call, Name: "bash", Host: "builder", Summary: "go test ./...", Input: "{\n  \"command\": \"go test ./...\"\n}",
		Status: status, Duration: "1.2 s", Output: "ok  \tmyco.dev/views\nFAIL\n", FullURL: "/profiles/default/s/s1/tool/t1/" + call}
}

func testSessionView() SessionView {
	bash := testTool("c1", "ok")
	edit := testTool("c2", "ok")
	edit.Name, edit.Summary, edit.Input = "str_replace_based_edit_tool", "str_replace /src/main.go", ""
	edit.Diff = Diff("/src/main.go", "a\nb\n", "a\nc\nd\n")
	cut := testTool("c3", "error")
	cut.Cut = true
	cut.Images = []ImageView{{URL: "/profiles/default/s/s1/image/t1/3/0/0", Alt: "bash image"}}
	cut.Links = []Link{{Title: "child session s2", URL: "/profiles/default/s/s2/"}}
	running := testTool("c4", "running")
	running.Output, running.Duration = "", ""
	return SessionView{
		Chrome: testChrome("Fix the build"), ID: "s1", URL: "/profiles/default/s/s1/", Title: "Fix the build",
		Parent: &Link{Title: "the parent session", URL: "/profiles/default/s/s0/"},
		Thread: "t2",
		Threads: []ThreadLink{
			{ID: "t2", URL: "/profiles/default/s/s1/t/t2", Label: "t2 · Jan 2 15:04 (active)", Current: true, Active: true},
			{ID: "t1", URL: "/profiles/default/s/s1/t/t1", Label: "t1 · Jan 1 10:00", Summary: Markdown("The *summary*.", MarkdownOptions{})},
		},
		Earlier: 3, EarlyURL: "/profiles/default/s/s1/earlier?thread=t2&before=3",
		Messages: []MessageView{
			{DOMID: MessageID("t2", 3), Role: "user", Time: "Jan 2 15:04", ISO: "2026-01-02T15:04:00Z",
				Blocks: []Block{{Markdown: Markdown("Please **fix** it.", MarkdownOptions{})}, {Image: &ImageView{URL: "/profiles/default/s/s1/image/t2/3/1/0", Alt: "attached image"}}}},
			{DOMID: MessageID("t2", 4), Role: "assistant", Blocks: []Block{
				{Thinking: Markdown("**Reading the tests.** The tests `<fail>`.", MarkdownOptions{})},
				{Markdown: Markdown("Running the tests.", MarkdownOptions{})},
				{Tool: &bash}, {Tool: &edit}, {Tool: &cut}, {Tool: &running},
			}},
			{DOMID: EndID("t2", 0), Role: "end", Time: "15:05:00", ISO: "2026-01-02T15:05:00Z",
				Blocks: []Block{{Note: "The turn failed: gateway said 500.", NoteKind: "error"}}},
		},
		Status: StatusView{ID: "s1", StopURL: "/profiles/default/s/s1/stop", Busy: true, Job: "turn", Model: "fake",
			Used: 12345, Window: 100000, Hosts: []HostView{{Name: "builder", State: "attached"}, {Name: "gpu", State: "down", Error: "ssh: connection refused"}}},
		Composer: ComposerView{Action: "/profiles/default/s/s1/submit", ModelURL: "/profiles/default/s/s1/model", Models: []string{"fake", "other"}, Model: "fake",
			Error: "The session is busy."},
		Sidebar: []SessionRow{
			{ID: "s1", URL: "/profiles/default/s/s1/", Title: "Fix the build", Busy: true, Current: true},
			{ID: "s3", URL: "/profiles/default/s/s3/"},
		},
		Tree: &TreeView{Sessions: 3, Busy: 1, OpenCalls: 2, Tokens: "1,234", Cost: "$0.42", Work: "3.0 s",
			Rows: []TreeRow{{Title: "Child", URL: "/profiles/default/s/s2/", Model: "fake", State: "working", Depth: 1, Indent: "d1"}}},
		EventsURL: "/profiles/default/s/s1/events?after=b-7",
	}
}

func testSessionsView() SessionsView {
	return SessionsView{
		Chrome: testChrome("Sessions"), Filter: "active", Query: "", Models: []string{"fake", "other"}, Model: "fake",
		Message: "The session was archived.",
		Rows: []SessionRow{
			{ID: "s1", URL: "/profiles/default/s/s1/", Title: "Fix the build", Model: "fake", Activity: "just now", ISOTime: "2026-01-02T15:04:00Z", Busy: true},
			{ID: "s2", URL: "/profiles/default/s/s2/", Model: "other", Activity: "3 h ago", ISOTime: "2026-01-02T12:00:00Z", Archived: true},
		},
	}
}

func testWorkspaceViews() map[string]WorkspaceView {
	crumbs := []Link{{Title: "workspace", URL: "/profiles/default/workspace/"}, {Title: "notes", URL: "/profiles/default/workspace/notes/"}, {Title: "plan.txt"}}
	c := testChrome("plan.txt")
	c.Nav = "workspace"
	return map[string]WorkspaceView{
		"dir": {Chrome: testChrome("notes/"), Path: "notes", Crumbs: []Link{crumbs[0], {Title: "notes"}}, Kind: "dir", More: true, Dir: []WorkspaceItem{
			{Name: "drafts/", URL: "/profiles/default/workspace/notes/drafts/", Modified: "2026-01-02 15:04", IsDir: true},
			{Name: "plan.txt", URL: "/profiles/default/workspace/notes/plan.txt", Size: "12 B", Modified: "2026-01-02 15:04"},
		}},
		"empty": {Chrome: testChrome("Workspace"), Crumbs: []Link{{Title: "workspace"}}, Kind: "dir"},
		"text": {Chrome: c, Path: "notes/plan.txt", Crumbs: crumbs, Kind: "text", Text: "line 1\n\tindented <b>2</b>\n", Page: 2, Pages: 3,
			PrevURL: "/profiles/default/workspace/notes/plan.txt?page=1", NextURL: "/profiles/default/workspace/notes/plan.txt?page=3",
			RawURL: "/profiles/default/workspace/notes/plan.txt?raw=1", Size: "12.0 KiB"},
		"image":    {Chrome: c, Path: "notes/pic.png", Crumbs: crumbs, Kind: "image", RawURL: "/profiles/default/workspace/notes/pic.png?raw=1", Size: "1.0 KiB"},
		"download": {Chrome: c, Path: "notes/a.zip", Crumbs: crumbs, Kind: "download", RawURL: "/profiles/default/workspace/notes/a.zip?raw=1", Size: "3.0 MiB"},
	}
}

func testDocumentView() DocumentView {
	return DocumentView{Title: "plan.md", CSS: []string{"/static/app.css"}, Path: "notes/plan.md",
		Crumbs: []Link{{Title: "workspace", URL: "/profiles/default/workspace/"}, {Title: "notes", URL: "/profiles/default/workspace/notes/"}, {Title: "plan.md"}},
		Body:   Markdown("# The plan\n\nStep *one*.", MarkdownOptions{}), RawURL: "/profiles/default/workspace/notes/plan.md?raw=1", BackURL: "/profiles/default/workspace/"}
}

func testErrorView() ErrorView {
	return ErrorView{Chrome: testChrome("Error"), Code: 404, Message: "There is nothing at this address."}
}
