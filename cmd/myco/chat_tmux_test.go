package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"myco.dev/internal/fakemodel"
	"myco.dev/internal/needs"
)

// The tests in this file drive the real binary's terminal chat in a tmux pane (a real
// terminal: raw mode, cursor keys, bracketed paste, colours), each on a private tmux
// server, against the scripted fake model.

// What the chat prints (package cli), as a user sees it.
const (
	quitHint    = "press Ctrl-C again or Ctrl-D to quit"
	workingLine = "working… (Ctrl-C stops the turn)"
	styleDim    = "\x1b[2m"
)

// tmuxPane is a myco --mode cli running in the only pane of a private tmux server.
type tmuxPane struct {
	t    *testing.T
	tmux string
	sock string
}

// tmuxBinary returns the path of tmux (see package needs).
func tmuxBinary(t *testing.T) string {
	t.Helper()
	return needs.Program(t, "tmux", "apt-get install -y tmux")
}

// chatHome writes a MYCO_HOME whose default profile has two models at url: m (the
// default, context window 100,000) and m2 (200,000).
func chatHome(t *testing.T, url string) string {
	t.Helper()
	home := t.TempDir()
	dir := filepath.Join(home, "profiles", "default")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf(`model = "m"
[models.m]
protocol = "anthropic-messages"
base_url = %[1]q
context_window = 100000
[models.m2]
protocol = "anthropic-messages"
base_url = %[1]q
context_window = 200000
[approvals]
mode = "full"
`, url)
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return home
}

// startPane runs `myco --mode cli ARGS` (shell words, e.g. a redirection) in a 120×40
// pane, in a fresh working directory, with MYCO_HOME home and the extra environment env.
// The server is killed when the test ends.
func startPane(t *testing.T, home, args string, env ...string) *tmuxPane {
	t.Helper()
	return startPaneWidth(t, home, args, 120, env...)
}

// startPaneWidth is [startPane] in a pane of width columns.
func startPaneWidth(t *testing.T, home, args string, width int, env ...string) *tmuxPane {
	t.Helper()
	return startPaneArgs(t, home, "--mode cli "+args, width, env...)
}

// startPaneArgs runs myco with args (all of them, shell words) in a pane of width columns.
func startPaneArgs(t *testing.T, home, args string, width int, env ...string) *tmuxPane {
	t.Helper()
	tmux := tmuxBinary(t)
	dir, err := os.MkdirTemp("", "myco-tmux-") // short: a socket path is at most 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	conf := filepath.Join(dir, "tmux.conf")
	if err := os.WriteFile(conf, []byte("set -g remain-on-exit on\nset -g history-limit 20000\nset -g set-clipboard on\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := &tmuxPane{t: t, tmux: tmux, sock: filepath.Join(dir, "sock")}
	work := t.TempDir()
	cmd := fmt.Sprintf("cd '%s' && exec '%s' %s", work, binary(t), args)
	argv := []string{"-f", conf, "new-session", "-d", "-x", strconv.Itoa(width), "-y", "40", "-s", "chat",
		"-e", "MYCO_HOME=" + home, "-e", "MYCO_PROFILE=", "-e", "MYCO_CONFIG="}
	for _, e := range env {
		argv = append(argv, "-e", e)
	}
	p.run(append(argv, cmd)...)
	t.Cleanup(func() { exec.Command(p.tmux, "-S", p.sock, "kill-server").Run() })
	return p
}

// run runs a tmux command on the pane's server and returns its output.
func (p *tmuxPane) run(args ...string) string {
	p.t.Helper()
	cmd := exec.Command(p.tmux, append([]string{"-S", p.sock}, args...)...)
	// The server's environment is the first client's: none of the user's tmux, colour
	// preference or myco profile.
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool {
		k, _, _ := strings.Cut(kv, "=")
		return k == "TMUX" || k == "NO_COLOR" || strings.HasPrefix(k, "MYCO_")
	})
	out, err := cmd.CombinedOutput()
	if err != nil {
		p.t.Fatalf("tmux %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// screen returns the pane's text, scrollback included, wrapped lines joined.
func (p *tmuxPane) screen() string {
	p.t.Helper()
	var b strings.Builder
	for l := range strings.SplitSeq(p.run("capture-pane", "-p", "-J", "-S", "-", "-t", "chat"), "\n") {
		b.WriteString(strings.TrimRight(l, " ") + "\n")
	}
	return strings.TrimRight(b.String(), "\n") + "\n"
}

// styled returns the pane's text with its attributes as escape sequences.
func (p *tmuxPane) styled() string {
	p.t.Helper()
	return p.run("capture-pane", "-p", "-e", "-J", "-S", "-", "-t", "chat")
}

// wait polls the screen (every 50ms, for at most 10s) until ok holds, and returns it.
func (p *tmuxPane) wait(what string, ok func(screen string) bool) string {
	p.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		s := p.screen()
		if ok(s) {
			return s
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("waited 10s for %s; the pane shows:\n%s", what, s)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitFor waits until the screen shows marker at least n times.
func (p *tmuxPane) waitFor(marker string, n int) string {
	p.t.Helper()
	return p.wait(fmt.Sprintf("%q (×%d)", marker, n), func(s string) bool { return strings.Count(s, marker) >= n })
}

// waitPrompt waits until the last line is the prompt with line on it.
func (p *tmuxPane) waitPrompt(line string) string {
	p.t.Helper()
	return p.wait(fmt.Sprintf("the prompt %q", "> "+line), func(s string) bool {
		lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
		return strings.TrimRight(lines[len(lines)-1], " ") == strings.TrimRight("> "+line, " ")
	})
}

// keys sends tmux key names (Enter, Up, C-c).
func (p *tmuxPane) keys(keys ...string) {
	p.t.Helper()
	p.run(append([]string{"send-keys", "-t", "chat"}, keys...)...)
}

// typeText types s literally.
func (p *tmuxPane) typeText(s string) {
	p.t.Helper()
	p.run("send-keys", "-t", "chat", "-l", s)
}

// say waits for an empty prompt, types line, presses Enter and waits until marker shows
// once more than before.
func (p *tmuxPane) say(line, marker string) string {
	p.t.Helper()
	p.waitPrompt("")
	n := strings.Count(p.screen(), marker)
	p.typeText(line)
	p.keys("Enter")
	return p.waitFor(marker, n+1)
}

// paste pastes s the way a terminal does, bracketed when the program asked for it.
func (p *tmuxPane) paste(s string) {
	p.t.Helper()
	p.run("set-buffer", "-b", "clip", "--", s)
	p.run("paste-buffer", "-p", "-b", "clip", "-t", "chat")
}

// exitStatus waits until myco has exited and returns its status.
func (p *tmuxPane) exitStatus() int {
	p.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var dead, status int
		fmt.Sscan(p.run("display-message", "-p", "-t", "chat", "#{pane_dead} #{pane_dead_status}"), &dead, &status)
		if dead == 1 {
			return status
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("myco did not exit; the pane shows:\n%s", p.screen())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// userTexts returns the text of each user message of a recorded anthropic request.
func userTexts(t *testing.T, r fakemodel.Request) (apiModel string, texts []string) {
	t.Helper()
	var body struct {
		Model    string `json:"model"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(r.Body, &body); err != nil {
		t.Fatalf("request body: %v", err)
	}
	for _, m := range body.Messages {
		if m.Role != "user" {
			continue
		}
		var s string
		if json.Unmarshal(m.Content, &s) == nil {
			texts = append(texts, s)
			continue
		}
		var blocks []struct{ Type, Text string }
		json.Unmarshal(m.Content, &blocks)
		for _, b := range blocks {
			if b.Type == "text" && !strings.HasPrefix(b.Text, "[myco") && !strings.HasPrefix(b.Text, "<") {
				texts = append(texts, b.Text)
			}
		}
	}
	return body.Model, texts
}

// newestUserText returns the model and the newest user text of the newest request.
func newestUserText(t *testing.T, srv *fakemodel.Server) (string, string) {
	t.Helper()
	reqs := srv.Requests()
	if len(reqs) == 0 {
		t.Fatal("the fake model got no request")
	}
	m, texts := userTexts(t, reqs[len(reqs)-1])
	if len(texts) == 0 {
		t.Fatalf("the newest request has no user text: %s", reqs[len(reqs)-1].Body)
	}
	return m, texts[len(texts)-1]
}

var sessionLine = regexp.MustCompile(`(?m)^session: (\S+)$`)

// TestChatTmux runs a whole chat in a terminal: a turn with thinking and a tool call, the
// context meter, /model, /status, /archive and /sessions, /help, /compact, ↑ and ← at the
// prompt, a bracketed paste, /new and /resume, then Ctrl-D; and a second run that recalls
// the first run's messages and ends with two Ctrl-C.
func TestChatTmux(t *testing.T) {
	t.Parallel()
	srv := fakemodel.New(t,
		fakemodel.Turn{Thinking: "The user wants the tool run. I will call bash and then report what it printed.",
			ToolCalls: []fakemodel.ToolCall{{ID: "c1", Name: "bash", Args: `{"command":"echo hello from the tool"}`}},
			Usage:     fakemodel.Usage{Input: 900}},
		fakemodel.Turn{Text: "The tool said: {{tool_result}}", Usage: fakemodel.Usage{Input: 1234}},
		fakemodel.Turn{Text: "an answer from m2", Usage: fakemodel.Usage{Input: 50}},
		fakemodel.Turn{Text: "## Goal\nchat\n## Next action\nwait"},
		fakemodel.Turn{Text: "edited ok"},
		fakemodel.Turn{Text: "pasted ok"},
		fakemodel.Turn{Text: "continued ok"},
		fakemodel.Turn{Text: "fresh ok"},
	)
	home := chatHome(t, srv.URL)
	p := startPane(t, home, "")

	s := p.say("run the tool", "context: 1.2k of 100k tokens (1%)")
	for _, want := range []string{
		"model m · /help for commands",
		"thinking: The user wants the tool run.",
		`→ bash @local {"command":"echo hello from the tool"}`,
		"  │ hello from the tool\n← bash exit 0 (",
		"The tool said: hello from the tool",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("the pane does not show %q:\n%s", want, s)
		}
	}
	st := p.styled()
	for _, want := range []string{"\x1b[2mthinking: ", "\x1b[36m"} {
		if !strings.Contains(st, want) {
			t.Errorf("the pane's attributes lack %q (dimmed thinking, coloured tool line):\n%q", want, st)
		}
	}
	m := sessionLine.FindStringSubmatch(s)
	if m == nil {
		t.Fatalf("no session line:\n%s", s)
	}
	first := m[1]

	// /model lists the catalog and switches the session's model for the next turn.
	s = p.say("/model", "context window 200,000")
	if !regexp.MustCompile(`(?m)^\* m   context window 100,000\n  m2  context window 200,000$`).MatchString(s) {
		t.Errorf("/model does not list both models with the current one marked:\n%s", s)
	}
	p.say("/model nope", `unknown model "nope"; the catalog has m, m2`)
	p.say("/model m2", "model m2 from the next turn (was m)")
	p.say("and now?", "context: 50 of 200k tokens (0%)")
	if model, text := newestUserText(t, srv); model != "m2" || text != "and now?" {
		t.Errorf("the turn after /model m2 asked model %q with %q, want m2 with %q", model, text, "and now?")
	}

	s = p.say("/status", "hosts: local")
	for _, want := range []string{"session " + first + " · ", "model m2 · context: 50 of 200k tokens (0%)", "\nidle\n"} {
		if !strings.Contains(s, want) {
			t.Errorf("/status does not show %q:\n%s", want, s)
		}
	}

	// Archiving hides from browsing only: /sessions lists it, marked.
	p.say("/archive", "archived "+first)
	p.say("/sessions", first+"  run the tool [archived] (this one)")
	p.say("/sessions no-such-title", `no session matches "no-such-title"`)
	p.say("/sessions RUN THE", first+"  run the tool [archived] (this one)")
	p.say("/restore", "restored "+first)
	p.say("/sessions", first+"  run the tool (this one)")

	p.say("/help", "/archive [ID]")
	p.say("/compact", "compacted thread t1 into t2")

	// ↑ recalls the last message without sending it; ← edits a line.
	served := srv.Served()
	p.waitPrompt("")
	p.keys("Up")
	p.waitPrompt("/compact")
	p.keys("C-u")
	p.waitPrompt("")
	p.typeText("wrld")
	p.keys("Left", "Left", "Left")
	p.typeText("o")
	p.keys("Home")
	p.typeText("hello ")
	p.keys("End")
	p.typeText("!")
	p.waitPrompt("hello world!")
	p.keys("Enter")
	p.waitFor("edited ok", 1)
	if got := srv.Served(); got != served+1 {
		t.Errorf("the model served %d turns after ↑ and one edited line, want 1", got-served)
	}
	if _, text := newestUserText(t, srv); text != "hello world!" {
		t.Errorf("the edited line reached the model as %q, want %q", text, "hello world!")
	}

	// A bracketed paste of two lines is one message, sent with Enter; its tab shows as one
	// column, so the cursor stays where the editor thinks it is.
	p.waitPrompt("")
	p.paste("line one\n\tline two")
	p.waitPrompt("line one␤⇥line two")
	p.keys("Left", "Left", "Left")
	p.typeText("Z")
	p.waitPrompt("line one␤⇥line Ztwo")
	p.keys("Enter")
	p.waitFor("pasted ok", 1)
	if got := srv.Served(); got != served+2 {
		t.Errorf("the paste made %d turns, want 1", got-served-1)
	}
	if _, text := newestUserText(t, srv); text != "line one\n\tline Ztwo" {
		t.Errorf("the paste reached the model as %q, want one message %q", text, "line one\n\tline Ztwo")
	}

	// A line that ends with a backslash continues the message.
	p.waitPrompt("")
	p.typeText(`first part\`)
	p.keys("Enter")
	p.wait("the continuation prompt", func(s string) bool { return strings.HasSuffix(s, "\n…\n") })
	p.typeText("second part")
	p.keys("Enter")
	p.waitFor("continued ok", 1)
	if _, text := newestUserText(t, srv); text != "first part\nsecond part" {
		t.Errorf("the continued message reached the model as %q, want %q", text, "first part\nsecond part")
	}

	// /new, then /resume the first session.
	p.say("/new", "a new session starts with your next message")
	s = p.say("fresh start", "fresh ok")
	if ids := sessionLine.FindAllStringSubmatch(s, -1); len(ids) != 2 || ids[1][1] == first {
		t.Errorf("the message after /new did not start a second session:\n%s", s)
	}
	p.say("/resume "+first, "session: "+first)
	p.say("/status", "session "+first+" · ")

	p.waitPrompt("")
	p.keys("C-d")
	if code := p.exitStatus(); code != 0 {
		t.Errorf("Ctrl-D: exit status %d, want 0", code)
	}
	if st, err := os.Stat(filepath.Join(home, "profiles", "default", "cli-history")); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("cli-history: %v, %v; want a file of mode 0600", st, err)
	}

	// A second run recalls the first run's messages; two Ctrl-C end it.
	p2 := startPane(t, home, "")
	p2.waitPrompt("")
	p2.keys("Up")
	p2.waitPrompt("/status")
	p2.keys("Up")
	p2.waitPrompt("/resume " + first)
	p2.keys("C-c")
	p2.waitFor(quitHint, 1)
	p2.waitPrompt("")
	p2.keys("C-c")
	if code := p2.exitStatus(); code != 0 {
		t.Errorf("two Ctrl-C: exit status %d, want 0", code)
	}
	if got := srv.Served(); got != served+4 {
		t.Errorf("the second run sent %d turns, want none", got-served-4)
	}
}

// TestChatTmuxInterrupt presses Ctrl-C while a tool runs: the turn stops, the chat goes
// on. With NO_COLOR set, nothing is styled. An answer's escape sequences show as text:
// they neither set the pane's title, nor write tmux's clipboard, nor clear the screen.
// Keys typed during a turn are not echoed into its output; they wait at the next prompt.
func TestChatTmuxInterrupt(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pidFile, goFile := filepath.Join(dir, "pid"), filepath.Join(dir, "go")
	srv := fakemodel.New(t,
		fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{{Name: "bash", Args: `{"command":"echo $$ > ` + pidFile + `; sleep 60"}`}}},
		fakemodel.Turn{Text: "still here " + hostile},
		fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{{Name: "bash", Args: `{"command":"until [ -e ` + goFile + ` ]; do sleep 0.02; done"}`}}},
		fakemodel.Turn{Text: "done waiting"})
	p := startPane(t, chatHome(t, srv.URL), "", "NO_COLOR=1")
	p.say("sleep please", "→ bash @local")
	deadline := time.Now().Add(10 * time.Second)
	pid := waitPID(t, pidFile, deadline)
	p.keys("C-c")
	p.waitFor("myco: interrupted", 1)
	waitGone(t, pid, deadline)
	s := p.say("are you there?", "still here")
	if strings.Contains(s, quitHint) {
		t.Errorf("the Ctrl-C that stopped the turn counted at the prompt:\n%s", s)
	}
	if !strings.Contains(s, `still here \x1b]52;c;ZXZpbA==\x07 \x1b]0;pwned\x07 \x1b[2J`) || !strings.Contains(s, "> sleep please") {
		t.Errorf("the answer's escapes are not shown as text, or the screen was cleared:\n%s", s)
	}
	if title := p.run("display-message", "-p", "-t", "chat", "#{pane_title}"); strings.Contains(title, "pwned") {
		t.Errorf("the answer set the pane's title to %q", title)
	}
	if bufs := p.run("list-buffers"); strings.Contains(bufs, "evil") {
		t.Errorf("the answer wrote the clipboard: %q", bufs)
	}
	if st := p.styled(); strings.Contains(st, "\x1b[") {
		t.Errorf("with NO_COLOR the pane is styled:\n%q", st)
	}

	p.say("wait for the file", "→ bash @local {\"command\":\"until")
	p.typeText("typed ahead")
	if err := os.WriteFile(goFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	p.waitFor("done waiting", 1)
	s = p.waitPrompt("typed ahead")
	if n := strings.Count(s, "typed ahead"); n != 1 {
		t.Errorf("the keys typed during the turn show %d times, want once, at the prompt:\n%s", n, s)
	}
	p.keys("C-u")
	p.waitPrompt("")
	p.keys("C-d")
	if code := p.exitStatus(); code != 0 {
		t.Errorf("Ctrl-D: exit status %d, want 0", code)
	}
}

// TestChatTmuxStdoutToFile sends stdout to a file: the answers go there as they are,
// without colour or control sequences, and the terminal shows the rest, unstyled. The chat
// starts with --model m2.
func TestChatTmuxStdoutToFile(t *testing.T) {
	t.Parallel()
	srv := fakemodel.New(t,
		fakemodel.Turn{Thinking: "Thinking it over. " + strings.Repeat("And over again. ", 20), ToolCalls: []fakemodel.ToolCall{{Name: "bash", Args: `{"command":"echo hi"}`}}},
		fakemodel.Turn{Text: "first answer\nin two lines", Usage: fakemodel.Usage{Input: 77}})
	out := filepath.Join(t.TempDir(), "answers.txt")
	p := startPane(t, chatHome(t, srv.URL), "--model m2 > '"+out+"'")
	s := p.say("go", "context: 77 of 200k tokens (0%)")
	if !strings.Contains(s, "model m2 · /help for commands") {
		t.Errorf("--model m2: the chat does not say it uses m2:\n%s", s)
	}
	if model, _ := newestUserText(t, srv); model != "m2" {
		t.Errorf("--model m2: the turn asked model %q", model)
	}
	if strings.Contains(s, "first answer") {
		t.Errorf("the answer reached the terminal, not only the file:\n%s", s)
	}
	if !strings.Contains(s, "thinking: Thinking it over.") || !strings.Contains(s, "→ bash @local") {
		t.Errorf("the terminal does not show the thinking and the tool line:\n%s", s)
	}
	if st := p.styled(); strings.Contains(st, "\x1b[") {
		t.Errorf("with stdout not a terminal the pane is styled:\n%q", st)
	}
	// The thinking is folded to one line of the pane, not wrapped.
	if !regexp.MustCompile(`(?m)^thinking: Thinking it over\. And over again\. .*…$`).MatchString(p.run("capture-pane", "-p", "-t", "chat")) {
		t.Errorf("the thinking is not one line of the pane:\n%s", p.run("capture-pane", "-p", "-t", "chat"))
	}
	p.waitPrompt("")
	p.keys("C-d")
	if code := p.exitStatus(); code != 0 {
		t.Errorf("Ctrl-D: exit status %d, want 0", code)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != "first answer\nin two lines\n" {
		t.Errorf("stdout = %q, want the answer alone", b)
	}
}

// TestChatTmuxWorking: while a turn waits for the model (its first token, or its next step
// after a tool), the chat shows a dimmed working line, which what comes next erases; the
// answer's Markdown is styled.
func TestChatTmuxWorking(t *testing.T) {
	t.Parallel()
	srv := fakemodel.New(t,
		fakemodel.Turn{HangMs: 2500, ToolCalls: []fakemodel.ToolCall{{Name: "bash", Args: `{"command":"echo hi"}`}}},
		fakemodel.Turn{HangMs: 2500, Text: "all **done**, see `x.go`"})
	p := startPane(t, chatHome(t, srv.URL), "")
	p.waitPrompt("")
	p.typeText("go")
	p.keys("Enter")
	s := p.waitFor(workingLine, 1)
	if strings.Contains(s, "→ bash") {
		t.Errorf("the working line showed only after the tool call:\n%s", s)
	}
	if st := p.styled(); !strings.Contains(st, styleDim+workingLine) {
		t.Errorf("the working line is not dimmed:\n%q", st)
	}
	s = p.wait("the working line after the tool's result", func(s string) bool {
		_, after, ok := strings.Cut(s, "← bash exit 0")
		return ok && strings.Contains(after, workingLine)
	})
	if n := strings.Count(s, workingLine); n != 1 {
		t.Errorf("the first working line was not erased (%d shown):\n%s", n, s)
	}
	s = p.waitFor("all done, see x.go", 1)
	s = p.wait("the prompt after the answer", func(s string) bool { return strings.HasSuffix(s, "> \n") || strings.HasSuffix(s, ">\n") })
	if strings.Contains(s, "working…") {
		t.Errorf("a working line stayed after the answer:\n%s", s)
	}
	// The answer's Markdown is styled: strong text bold, a code span in colour.
	if st := p.styled(); !strings.Contains(st, "\x1b[1mdone") || !strings.Contains(st, "\x1b[32mx.go") {
		t.Errorf("the answer's Markdown is not styled:\n%q", st)
	}
}
