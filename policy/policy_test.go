package policy

import (
	"errors"
	"testing"
)

func mustRule(t *testing.T, a Action, text, source string) Rule {
	t.Helper()
	r, err := ParseRule(a, text, source)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestParseRule(t *testing.T) {
	for text, want := range map[string]Rule{
		"bash":             {Tool: "bash"},
		"Bash(go test *)":  {Tool: "bash", Command: "go test *"},
		"edit(src/**)":     {Tool: "edit", Path: "src/**"},
		"mcp(github)":      {Tool: "mcp", Server: "github"},
		"mcp(github/*)":    {Tool: "mcp", Server: "github"},
		"mcp(github/list)": {Tool: "mcp", Server: "github", MCPTool: "list"},
		"view_image":       {Tool: "view_image"},
	} {
		r, err := ParseRule(Allow, text, FromConfig)
		if err != nil {
			t.Errorf("ParseRule(%q): %v", text, err)
			continue
		}
		want.Action, want.Source = Allow, FromConfig
		if r != want {
			t.Errorf("ParseRule(%q) = %+v, want %+v", text, r, want)
		}
		if back, _ := ParseRule(Allow, r.String(), FromConfig); back != r {
			t.Errorf("%q does not read back: %+v", r.String(), back)
		}
	}
	for _, bad := range []string{"", "bash(", "bash()", "view_image(x)", "edit([)"} {
		if _, err := ParseRule(Allow, bad, FromConfig); err == nil {
			t.Errorf("ParseRule(%q) succeeded", bad)
		}
	}
	if _, err := ParseRule(Allow, "bash(make)", FromRepository); !errors.Is(err, ErrRepositoryAllow) {
		t.Errorf("a repository's allow rule: %v, want ErrRepositoryAllow", err)
	}
	if _, err := ParseRule(Deny, "bash(rm *)", FromRepository); err != nil {
		t.Errorf("a repository's deny rule: %v", err)
	}
}

func TestDecideModes(t *testing.T) {
	dir := "/home/u/proj"
	w := []string{dir, "/tmp/myco-x"}
	prot := []string{dir + "/.git/hooks", dir + "/.git/config"}
	bash := Call{Tool: BashTool, Command: "make", Dir: dir, Writable: w, Protected: prot}
	escalate := bash
	escalate.Escalate = true
	editIn := Call{Tool: EditorTool, Paths: []string{dir + "/main.go"}, Write: true, Dir: dir, Writable: w, Protected: prot}
	editOut := editIn
	editOut.Paths = []string{"/home/u/.bashrc"}
	editHook := editIn
	editHook.Paths = []string{dir + "/.git/hooks/pre-commit"}
	view := editOut
	view.Write = false
	secret := Call{Tool: EditorTool, Paths: []string{"/home/u/.myco/approval.key"}, Dir: dir, Writable: w, Hidden: []string{"/home/u/.myco"}}
	mcp := Call{Tool: "github__list", Server: "github", MCPTool: "list"}
	other := Call{Tool: "view_image"}
	type want struct {
		a       Action
		sandbox bool
	}
	for _, tc := range []struct {
		mode Mode
		call Call
		want want
	}{
		{Full, bash, want{Allow, false}},
		{Full, escalate, want{Allow, false}},
		{Full, editOut, want{Allow, false}},
		{Full, mcp, want{Allow, false}},
		{Workspace, bash, want{Allow, true}},
		{Workspace, escalate, want{Ask, false}},
		{Workspace, editIn, want{Allow, false}},
		{Workspace, editOut, want{Ask, false}},
		{Workspace, editHook, want{Ask, false}},
		{Workspace, view, want{Allow, false}},
		{Workspace, secret, want{Ask, false}},
		{ReadOnly, secret, want{Ask, false}},
		{Full, secret, want{Allow, false}},
		{Workspace, mcp, want{Ask, false}},
		{Workspace, other, want{Allow, false}},
		{AskMode, bash, want{Ask, false}},
		{AskMode, editIn, want{Ask, false}},
		{AskMode, view, want{Allow, false}},
		{ReadOnly, bash, want{Allow, true}},
		{ReadOnly, escalate, want{Deny, false}},
		{ReadOnly, editIn, want{Deny, false}},
		{ReadOnly, mcp, want{Deny, false}},
		{ReadOnly, view, want{Allow, false}},
	} {
		d := Decide(tc.mode, nil, tc.call)
		if d.Action != tc.want.a || d.Sandbox != tc.want.sandbox {
			t.Errorf("%s, %+v: %s sandbox=%v (%s), want %s sandbox=%v", tc.mode, tc.call, d.Action, d.Sandbox, d.Reason, tc.want.a, tc.want.sandbox)
		}
		if d.Reason == "" {
			t.Errorf("%s, %+v: no reason", tc.mode, tc.call)
		}
	}
	if d := Decide(ReadOnly, nil, bash); !d.ReadOnly {
		t.Errorf("read-only's sandbox is not read-only")
	}
}

func TestDecideRules(t *testing.T) {
	rules := []Rule{
		mustRule(t, Allow, "bash(go test *)", FromConfig),
		mustRule(t, Allow, "bash(git status)", FromConfig),
		mustRule(t, Allow, "bash(ls *)", FromConfig),
		mustRule(t, Deny, "bash(rm -rf *)", FromConfig),
		mustRule(t, Ask, "bash(git push *)", FromRepository),
		mustRule(t, Deny, "bash(curl *)", FromRepository),
		{Action: Allow, Tool: "bash", Command: "make *", Source: FromRepository}, // never used
		mustRule(t, Allow, "edit(docs/**)", FromSession),
		mustRule(t, Deny, "edit(**/*.pem)", FromConfig),
		mustRule(t, Allow, "mcp(github/list)", FromConfig),
		mustRule(t, Deny, "mcp(shell)", FromConfig),
	}
	dir := "/p"
	for _, tc := range []struct {
		mode Mode
		call Call
		want Action
		rule string
	}{
		{AskMode, Call{Tool: BashTool, Command: "go test ./..."}, Allow, "bash(go test *)"},
		{AskMode, Call{Tool: BashTool, Command: "go test ./... && git status"}, Allow, "bash(go test *)"},
		{AskMode, Call{Tool: BashTool, Command: "/usr/bin/git status"}, Allow, "bash(git status)"},
		{AskMode, Call{Tool: BashTool, Command: "git/ status"}, Ask, ""},             // a directory, not git (found by the fuzzer)
		{AskMode, Call{Tool: BashTool, Command: "go test ./... | tee out"}, Ask, ""}, // tee not allowed
		{AskMode, Call{Tool: BashTool, Command: "go test ./... > out.txt"}, Ask, ""}, // writes a file
		{AskMode, Call{Tool: BashTool, Command: "timeout 60 go test ./x"}, Allow, "bash(go test *)"},
		{AskMode, Call{Tool: BashTool, Command: "env CGO_ENABLED=0 go test"}, Allow, "bash(go test *)"},
		{AskMode, Call{Tool: BashTool, Command: "sudo go test"}, Ask, ""},                  // sudo is no harmless wrapper
		{AskMode, Call{Tool: BashTool, Command: "(cd x; ls -l)"}, Ask, ""},                 // cd is not allowed
		{AskMode, Call{Tool: BashTool, Command: "ls $(rm -rf /)"}, Deny, "bash(rm -rf *)"}, // substitution
		{AskMode, Call{Tool: BashTool, Command: "ls `cat x`"}, Ask, ""},
		{Full, Call{Tool: BashTool, Command: "sudo rm -rf /"}, Deny, "bash(rm -rf *)"},
		{Full, Call{Tool: BashTool, Command: "sh -c 'rm -rf build'"}, Deny, "bash(rm -rf *)"},
		{Full, Call{Tool: BashTool, Command: "find . | xargs rm -rf"}, Deny, "bash(rm -rf *)"},
		{Full, Call{Tool: BashTool, Command: "echo 'rm -rf x'"}, Allow, ""}, // a string, not a command
		{Full, Call{Tool: BashTool, Command: "git push origin main"}, Ask, "bash(git push *)"},
		{Full, Call{Tool: BashTool, Command: `curl "unterminated`}, Deny, "bash(curl *)"}, // unparsed: deny by word
		{AskMode, Call{Tool: BashTool, Command: `ls "unterminated`}, Ask, ""},             // unparsed: never allowed
		{AskMode, Call{Tool: BashTool, Command: "make all"}, Ask, ""},                     // the repository's allow is ignored
		{Workspace, Call{Tool: BashTool, Command: "go test", Escalate: true}, Allow, "bash(go test *)"},
		{AskMode, Call{Tool: EditorTool, Write: true, Paths: []string{"/p/docs/a/b.md"}, Dir: dir}, Allow, "edit(docs/**)"},
		{AskMode, Call{Tool: EditorTool, Write: true, Paths: []string{"/p/docs/key.pem"}, Dir: dir}, Deny, "edit(**/*.pem)"},
		{AskMode, Call{Tool: EditorTool, Write: true, Paths: []string{"/p/src/a.go"}, Dir: dir}, Ask, ""},
		{ReadOnly, Call{Tool: EditorTool, Write: true, Paths: []string{"/p/docs/a.md"}, Dir: dir}, Deny, ""}, // read-only is not widened
		{Workspace, Call{Tool: "github__list", Server: "github", MCPTool: "list"}, Allow, "mcp(github/list)"},
		{Workspace, Call{Tool: "github__push", Server: "github", MCPTool: "push"}, Ask, ""},
		{Full, Call{Tool: "shell__run", Server: "shell", MCPTool: "run"}, Deny, "mcp(shell)"},
	} {
		d := Decide(tc.mode, rules, tc.call)
		got := ""
		if d.Rule != nil {
			got = d.Rule.String()
		}
		if d.Action != tc.want || got != tc.rule {
			t.Errorf("%s %+v: %s by %q (%s), want %s by %q", tc.mode, tc.call, d.Action, got, d.Reason, tc.want, tc.rule)
		}
	}
	// An allowed command of workspace mode still runs in the sandbox.
	if d := Decide(Workspace, rules, Call{Tool: BashTool, Command: "go test"}); d.Action != Allow || !d.Sandbox {
		t.Errorf("workspace, allowed by rule: %+v, want sandboxed", d)
	}
}

func TestGlobMatch(t *testing.T) {
	for _, tc := range []struct {
		pat, name string
		want      bool
	}{
		{"/p/**", "/p/a/b/c", true},
		{"/p/**", "/p", true},
		{"/p/**/*.go", "/p/main.go", true},
		{"/p/**/*.go", "/p/a/b/main.go", true},
		{"/p/**/*.go", "/p/a/b/main.c", false},
		{"/p/*", "/p/a/b", false},
		{"/p/src/*.go", "/p/src/x.go", true},
	} {
		if got := globMatch(tc.pat, tc.name); got != tc.want {
			t.Errorf("globMatch(%q, %q) = %v", tc.pat, tc.name, got)
		}
	}
}
