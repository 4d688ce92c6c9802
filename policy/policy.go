package policy

import (
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// Mode is how much a session's tool calls may do without asking.
type Mode string

// The modes, from the most careful to today's behaviour.
const (
	// ReadOnly: nothing is written. The editor's writes are refused; bash runs in the
	// sandbox with no write access outside a private temporary directory.
	ReadOnly Mode = "read-only"
	// AskMode: every bash call and every write asks first, unless a rule allows it.
	AskMode Mode = "ask"
	// Workspace: bash runs in the sandbox, where writes inside the session's directory and
	// its temporary directory go ahead; what the sandbox refuses, the model may ask for.
	Workspace Mode = "workspace"
	// Full: every call runs at once with all of the person's power.
	Full Mode = "full"
)

// Modes lists the modes in order.
var Modes = []Mode{ReadOnly, AskMode, Workspace, Full}

// ParseMode returns the mode named s.
func ParseMode(s string) (Mode, error) {
	m := Mode(s)
	if slices.Contains(Modes, m) {
		return m, nil
	}
	return "", fmt.Errorf("unknown mode %q: the modes are read-only, ask, workspace and full", s)
}

// Describe says in a sentence what m lets a call do.
func (m Mode) Describe() string {
	switch m {
	case ReadOnly:
		return "read-only: nothing is written; commands run in the sandbox, writing only to a private temporary directory"
	case AskMode:
		return "ask: every command and every write asks you first unless a rule allows it"
	case Workspace:
		return "workspace: commands run in the sandbox, writing only in the session's directory; anything else asks you"
	case Full:
		return "full: every command and edit runs at once with all of your account's power, unsandboxed"
	}
	return string(m)
}

// Action is what a rule or a decision says of a call.
type Action string

// The actions.
const (
	Allow Action = "allow"
	Ask   Action = "ask"
	Deny  Action = "deny"
)

// Where a rule comes from.
const (
	FromConfig     = "config"     // the person's config.toml
	FromSession    = "session"    // "allow always for this session" from an approval
	FromFlag       = "flag"       // -p's --allow
	FromRepository = "repository" // a repository's own files: may only deny or ask
)

// ErrRepositoryAllow is the error of a rule from a repository's files that allows.
var ErrRepositoryAllow = errors.New("policy: a repository's rules may only deny or ask")

// Rule says what to do with the calls it matches. Exactly one kind of pattern is set.
// Its text form, which [ParseRule] reads and String writes, is one of
//
//	bash                  every bash call
//	bash(git status)      a command line each of whose commands is `git status`
//	bash(go test *)       … starts with `go test` (a last * matches any further words)
//	edit(src/**)          an editor call on paths matching the glob (relative to the
//	                      session's directory; ** matches any number of directories)
//	mcp(server)           every tool of an MCP server; mcp(server/tool) one tool
//	TOOL                  every call of a tool by its name (view_image, session_meta, …)
type Rule struct {
	Action  Action `json:"action" toml:"action"`
	Tool    string `json:"tool,omitempty" toml:"tool"`       // bash, edit, mcp, or another tool's name
	Command string `json:"command,omitempty" toml:"command"` // bash: the command pattern
	Path    string `json:"path,omitempty" toml:"path"`       // edit: the path glob
	Server  string `json:"server,omitempty" toml:"server"`   // mcp: the server
	MCPTool string `json:"mcp_tool,omitempty" toml:"mcp_tool"`
	Source  string `json:"source,omitempty" toml:"-"` // one of the From constants
}

// ParseRule reads a rule's text form (see [Rule]) with action a, from source.
func ParseRule(a Action, text, source string) (Rule, error) {
	r := Rule{Action: a, Source: source}
	text = strings.TrimSpace(text)
	name, arg, hasArg := strings.Cut(text, "(")
	if hasArg {
		if !strings.HasSuffix(arg, ")") {
			return Rule{}, fmt.Errorf("rule %q: no closing parenthesis", text)
		}
		arg = strings.TrimSpace(strings.TrimSuffix(arg, ")"))
		if arg == "" {
			return Rule{}, fmt.Errorf("rule %q: empty pattern", text)
		}
	}
	name = strings.ToLower(strings.TrimSpace(name))
	if name == "" {
		return Rule{}, fmt.Errorf("rule %q: no tool", text)
	}
	r.Tool = name
	switch name {
	case "bash":
		r.Command = arg
	case "edit", EditorTool:
		r.Tool = "edit"
		r.Path = arg
	case "mcp":
		if hasArg {
			r.Server, r.MCPTool, _ = strings.Cut(arg, "/")
			if r.MCPTool == "*" {
				r.MCPTool = ""
			}
		}
	default:
		if hasArg {
			return Rule{}, fmt.Errorf("rule %q: only bash, edit and mcp rules take a pattern", text)
		}
	}
	return r, r.Validate()
}

// Validate reports a rule that cannot be used.
func (r Rule) Validate() error {
	switch r.Action {
	case Allow, Ask, Deny:
	default:
		return fmt.Errorf("rule %s: unknown action %q: allow, ask or deny", r, r.Action)
	}
	if r.Source == FromRepository && r.Action == Allow {
		return fmt.Errorf("rule %s: %w", r, ErrRepositoryAllow)
	}
	if r.Tool == "" {
		return fmt.Errorf("rule of action %s: no tool", r.Action)
	}
	if r.Path != "" {
		if _, err := path.Match(strings.ReplaceAll(r.Path, "**", "*"), ""); err != nil {
			return fmt.Errorf("rule %s: bad glob: %w", r, err)
		}
	}
	return nil
}

// String returns the rule's text form, without its action.
func (r Rule) String() string {
	switch {
	case r.Tool == "bash" && r.Command != "":
		return "bash(" + r.Command + ")"
	case r.Tool == "edit" && r.Path != "":
		return "edit(" + r.Path + ")"
	case r.Tool == "mcp" && r.Server != "" && r.MCPTool != "":
		return "mcp(" + r.Server + "/" + r.MCPTool + ")"
	case r.Tool == "mcp" && r.Server != "":
		return "mcp(" + r.Server + ")"
	}
	return r.Tool
}

// The tool names the decisions know.
const (
	BashTool   = "bash"
	EditorTool = "str_replace_based_edit_tool"
)

// Call is what a decision looks at of one tool call.
type Call struct {
	Tool string // the tool's name as the model called it
	// Bash: the command line and the action (exec, start, write, …), and whether the model
	// asked to run outside the sandbox.
	Command  string
	Action   string
	Escalate bool
	// Editor: the paths (absolute) and whether the call writes.
	Paths []string
	Write bool
	// MCP: the server and its tool.
	Server, MCPTool string
	// Dir is the session's directory, against which relative path globs are read.
	Dir string
	// Writable are the directories the sandbox lets a command write (the session's
	// directory, its temporary directory, configured paths); an editor write inside them
	// goes ahead in workspace mode. Protected are paths under them it may never write
	// (.git/hooks, .git/config). Hidden are paths the sandbox keeps a command from reading
	// (myco's home): the editor's reads there ask, as the sandbox would refuse them.
	Writable, Protected, Hidden []string
}

// Decision is the answer of [Decide].
type Decision struct {
	Action Action
	Rule   *Rule  // the rule that matched, nil when the mode decided
	Reason string // why, in a sentence for the person and the model
	// Sandbox: an allowed bash call runs in the sandbox; ReadOnly: with no writes outside
	// its temporary directory.
	Sandbox  bool
	ReadOnly bool
}

// Decide says whether call may run in mode under rules. Deny rules win over ask rules,
// ask rules over allow rules, and rules over the mode's default; an allow rule from a
// repository is never used. In full mode only deny and ask rules apply.
func Decide(mode Mode, rules []Rule, call Call) Decision {
	d := byMode(mode, call)
	for _, a := range []Action{Deny, Ask} {
		for i := range rules {
			if r := rules[i]; r.Action == a && r.Matches(call) {
				return Decision{Action: a, Rule: &r, Reason: string(a) + " by rule " + r.String()}
			}
		}
	}
	if d.Action == Deny && mode == ReadOnly {
		return d // read-only is not widened by a rule: change the mode
	}
	var allow *Rule
	for i := range rules {
		if r := rules[i]; r.Action == Allow && r.Source != FromRepository && r.Matches(call) {
			allow = &r
			break
		}
	}
	if allow == nil {
		// No one rule covers the line: maybe several do, one command each.
		allow, _ = allowedLine(rules, call)
	}
	switch {
	case allow == nil:
		return d
	case call.Tool == BashTool && !call.Escalate && d.Sandbox:
		// The sandbox still fences an allowed command of a sandboxed mode.
		return Decision{Action: Allow, Rule: allow, Reason: "allowed by rule " + allow.String() + " (in the sandbox)", Sandbox: true, ReadOnly: d.ReadOnly}
	}
	return Decision{Action: Allow, Rule: allow, Reason: "allowed by rule " + allow.String()}
}

// byMode is the decision of mode for a call no rule matches.
func byMode(mode Mode, call Call) Decision {
	switch {
	case mode == Full:
		return Decision{Action: Allow, Reason: "full mode"}
	case call.Tool == BashTool:
		switch call.Action {
		case "", "exec", "start":
		default:
			// write, read, kill, list act on a process already started (and fenced).
			return Decision{Action: Allow, Reason: "acts on a process already started", Sandbox: mode != AskMode}
		}
		switch {
		case call.Escalate && mode == ReadOnly:
			return Decision{Action: Deny, Reason: "read-only mode runs no command outside the sandbox; change the mode to allow it"}
		case call.Escalate:
			return Decision{Action: Ask, Reason: "asks to run outside the sandbox"}
		case mode == AskMode:
			return Decision{Action: Ask, Reason: "ask mode asks before every command"}
		}
		return Decision{Action: Allow, Reason: string(mode) + " mode runs commands in the sandbox", Sandbox: true, ReadOnly: mode == ReadOnly}
	case call.Tool == EditorTool:
		hidden := false
		for _, p := range call.Paths {
			if Inside(p, call.Hidden) && !Inside(p, call.Writable) {
				hidden = true
			}
		}
		switch {
		case !call.Write && hidden:
			return Decision{Action: Ask, Reason: "reads myco's own files, which the sandbox keeps from commands"}
		case !call.Write:
			return Decision{Action: Allow, Reason: "reads only"}
		case mode == ReadOnly:
			return Decision{Action: Deny, Reason: "read-only mode writes nothing; change the mode to allow edits"}
		case mode == AskMode:
			return Decision{Action: Ask, Reason: "ask mode asks before every write"}
		}
		for _, p := range call.Paths {
			if !Inside(p, call.Writable) || Inside(p, call.Protected) {
				return Decision{Action: Ask, Reason: "writes " + p + ", outside the directories the sandbox lets it write"}
			}
		}
		return Decision{Action: Allow, Reason: "writes inside the session's directory"}
	case call.Server != "":
		if mode == ReadOnly {
			return Decision{Action: Deny, Reason: "read-only mode calls no MCP tool unless a rule allows it"}
		}
		return Decision{Action: Ask, Reason: "MCP tools ask unless a rule allows them"}
	}
	return Decision{Action: Allow, Reason: "the tool changes nothing outside myco"}
}

// Inside reports whether p is one of dirs or beneath one of them. Paths are cleaned; a
// relative p is never inside.
func Inside(p string, dirs []string) bool {
	if !filepath.IsAbs(p) {
		return false
	}
	p = filepath.Clean(p)
	for _, d := range dirs {
		d = filepath.Clean(d)
		if p == d || strings.HasPrefix(p, d+string(filepath.Separator)) || d == "/" {
			return true
		}
	}
	return false
}

// Matches reports whether r matches call.
func (r Rule) Matches(call Call) bool {
	switch r.Tool {
	case "*":
		return true
	case "bash":
		if call.Tool != BashTool {
			return false
		}
		if r.Command == "" {
			return true
		}
		if call.Action != "" && call.Action != "exec" && call.Action != "start" {
			return false
		}
		return r.matchesLine(call.Command)
	case "edit":
		if call.Tool != EditorTool {
			return false
		}
		if r.Path == "" {
			return true
		}
		if len(call.Paths) == 0 {
			return false
		}
		for _, p := range call.Paths {
			if !globMatch(r.glob(call.Dir), filepath.Clean(p)) {
				return false
			}
		}
		return true
	case "mcp":
		return call.Server != "" && (r.Server == "" || r.Server == "*" || r.Server == call.Server) &&
			(r.MCPTool == "" || r.MCPTool == call.MCPTool)
	}
	return r.Tool == call.Tool
}

// matchesLine: an allow rule matches when every command of the line matches (and its
// wrappers are harmless or match too, and it writes no file through a redirection); a
// deny or ask rule when any command does, at any wrapper level. A line that does not
// parse is matched by no allow rule and by a deny or ask rule whose first word appears in
// it as a word.
func (r Rule) matchesLine(line string) bool {
	pat := strings.Fields(r.Command)
	cmds, err := ParseCommandLine(line)
	if err != nil {
		if r.Action == Allow {
			return false
		}
		return slices.Contains(strings.FieldsFunc(line, func(c rune) bool { return strings.ContainsRune(" \t\n;|&()<>`$\"'", c) }), pat[0])
	}
	if len(cmds) == 0 {
		return false
	}
	if r.Action != Allow {
		for _, c := range cmds {
			if matchWords(pat, c.Args) {
				return true
			}
			for i := range c.Wrappers {
				// A wrapper with what it wraps: "sudo rm -rf /" for bash(sudo *).
				all := append(append([]string(nil), c.Wrappers[i]...), c.Args...)
				if matchWords(pat, c.Wrappers[i]) || matchWords(pat, all) {
					return true
				}
			}
		}
		return false
	}
	for _, c := range cmds {
		if !r.allowsCommand(pat, c) {
			return false
		}
	}
	return true
}

// allowsCommand reports whether an allow rule of pattern pat covers c: its words match,
// its wrappers are harmless, and it writes no file through a redirection.
func (r Rule) allowsCommand(pat []string, c Command) bool {
	if len(c.Redirects) > 0 || !matchWords(pat, c.Args) {
		return false
	}
	for _, w := range c.Wrappers {
		if !harmless[program(w[0])] {
			return false // sudo and the like: only a rule for the wrapper allows them
		}
	}
	return true
}

// allowedLine reports whether every command of call's line is covered by one of the
// allow rules with a command pattern, and returns the first rule used.
func allowedLine(rules []Rule, call Call) (*Rule, bool) {
	if call.Tool != BashTool || (call.Action != "" && call.Action != "exec" && call.Action != "start") {
		return nil, false
	}
	cmds, err := ParseCommandLine(call.Command)
	if err != nil || len(cmds) == 0 {
		return nil, false
	}
	var first *Rule
	for _, c := range cmds {
		found := false
		for i := range rules {
			r := rules[i]
			if r.Action == Allow && r.Source != FromRepository && r.Tool == "bash" && r.Command != "" && r.allowsCommand(strings.Fields(r.Command), c) {
				if first == nil {
					first = &r
				}
				found = true
				break
			}
		}
		if !found {
			return nil, false
		}
	}
	return first, true
}

// harmless wrappers change how a command runs, not what it may do.
var harmless = map[string]bool{"env": true, "timeout": true, "nice": true, "nohup": true, "time": true, "command": true, "xargs": true, "stdbuf": true, "exec": true, "builtin": true, "chronic": true,
	"sh": true, "bash": true, "dash": true, "zsh": true, "ksh": true}

// matchWords matches a command's words against a pattern's: each pattern word is a glob
// for one word, and a last "*" matches any number of further words, none included.
func matchWords(pat, words []string) bool {
	if len(pat) == 0 || len(words) == 0 {
		return false
	}
	for i, p := range pat {
		if i == len(pat)-1 && p == "*" {
			return true
		}
		if i >= len(words) {
			return false
		}
		w := words[i]
		if i == 0 {
			w = program(w) // /usr/bin/git matches git
		}
		if ok, _ := path.Match(p, w); !ok && p != w {
			return false
		}
	}
	return len(words) == len(pat)
}

// program returns what a command's first word runs: the last element of a path
// (/usr/bin/git runs git), or "" for a word ending in "/", which names a directory
// ("git/" is not git).
func program(word string) string {
	if strings.HasSuffix(word, "/") {
		return ""
	}
	return path.Base(word)
}

// glob returns the rule's path glob made absolute against dir.
func (r Rule) glob(dir string) string {
	g := r.Path
	if strings.HasPrefix(g, "~/") || filepath.IsAbs(g) || dir == "" {
		return g
	}
	return filepath.Join(dir, g)
}

// globMatch matches name against a slash-separated pattern where ** matches any number of
// path elements (none included) and the other elements are path.Match patterns.
func globMatch(pattern, name string) bool {
	return matchParts(strings.Split(pattern, "/"), strings.Split(name, "/"))
}

func matchParts(pat, name []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			for i := 0; i <= len(name); i++ {
				if matchParts(pat[1:], name[i:]) {
					return true
				}
			}
			return false
		}
		if len(name) == 0 {
			return false
		}
		if ok, _ := path.Match(pat[0], name[0]); !ok {
			return false
		}
		pat, name = pat[1:], name[1:]
	}
	return len(name) == 0
}
