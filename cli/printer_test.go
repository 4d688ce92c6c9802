package cli

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"myco.dev/agent/model"
	"myco.dev/sessions"
)

// TestPrinterChatLines renders a turn's updates as the chat and as myco -p print them.
func TestPrinterChatLines(t *testing.T) {
	const working = "\x1b[2m" + workingLine + "\x1b[0m\r\x1b[K"
	updates := []sessions.Update{
		{Type: sessions.UpdateThinkingDelta, Text: "First I look\nat the "},
		{Type: sessions.UpdateThinkingDelta, Text: "files.\x1b]0;x\x07"},
		{Type: sessions.UpdateToolStarted, Tool: "bash", Host: "box", Input: json.RawMessage(`{"host":"box","command":"ls"}`)},
		{Type: sessions.UpdateToolFinished, Tool: "bash", Host: "box", Duration: 0.012, Text: "[exit status 0]\n"},
		{Type: sessions.UpdateToolFinished, Tool: "bash", Host: "box", Duration: 1.5, Text: "[exit status 1]\n"},
		{Type: sessions.UpdateToolFinished, Tool: "bash", Host: "local", IsError: true, Text: "no such file"},
		{Type: sessions.UpdateToolFinished, Tool: "bash", Unknown: true, Stopped: true, Duration: 2, Text: "the call was cancelled while running"},
		{Type: sessions.UpdateTextDelta, Text: "the answer"},
		{Type: sessions.UpdateNotice, Text: "retrying"},
	}
	for _, tt := range []struct {
		name          string
		stream, color bool
		stdout        string
		stderr        string
	}{
		{"chat", true, false, "the answer\n", `thinking: First I look at the files.\x1b]0;x\x07
→ bash @box {"host":"box","command":"ls"}
← bash exit 0 (12 ms)
← bash exit 1 (1.5 s)
← bash error: no such file (0 ms)
← bash stopped (2.0 s)
! retrying
`},
		{"chat in colour", true, true, "the answer\n", "\x1b[2mthinking: First I look at the files.\\x1b]0;x\\x07\x1b[0m\n" +
			"\x1b[36m→ bash @box {\"host\":\"box\",\"command\":\"ls\"}\x1b[0m\n" +
			"\x1b[2m← bash exit 0 (12 ms)\x1b[0m\n" +
			// After a tool's result the working line waits for the model, erased by what follows.
			working + "\x1b[31m← bash exit 1 (1.5 s)\x1b[0m\n" +
			working + "\x1b[31m← bash error: no such file (0 ms)\x1b[0m\n" +
			working + "\x1b[33m← bash stopped (2.0 s)\x1b[0m\n" +
			working + "\x1b[33m! retrying\x1b[0m\n"},
		{"one-shot", false, false, "", `→ bash {"host":"box","command":"ls"}
← bash exit 0 (12 ms)
← bash exit 1 (1.5 s)
← bash error: no such file (0 ms)
← bash stopped (2.0 s)
! retrying
`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			p := newPrinter(&stdout, &stderr, false)
			p.stream, p.color = tt.stream, tt.color
			for _, u := range updates {
				p.update(u)
			}
			p.update(sessions.Update{Type: sessions.UpdateDone})
			p.mu.Lock()
			p.endLine()
			p.mu.Unlock()
			if got := stdout.String(); got != tt.stdout {
				t.Errorf("stdout = %q, want %q", got, tt.stdout)
			}
			if got := stderr.String(); got != tt.stderr {
				t.Errorf("stderr =\n%s\nwant\n%s", got, tt.stderr)
			}
		})
	}
}

// TestPrinterThinkingFolded keeps a long thinking to one line, and a thinking that ends
// the turn is shown too.
func TestPrinterThinkingFolded(t *testing.T) {
	var stderr bytes.Buffer
	p := newPrinter(&bytes.Buffer{}, &stderr, false)
	p.stream = true
	for range 2000 {
		p.update(sessions.Update{Type: sessions.UpdateThinkingDelta, Text: "word word\n"})
	}
	p.update(sessions.Update{Type: sessions.UpdateDone})
	got := stderr.String()
	if strings.Count(got, "\n") != 1 || !strings.HasPrefix(got, "thinking: word word word") || len([]rune(got)) > 130 {
		t.Errorf("stderr = %q, want one line of at most 120 characters", got)
	}
}

func TestMeterText(t *testing.T) {
	for _, tt := range []struct {
		used, window int
		want         string
	}{
		{123456, 1000000, "context: 123k of 1M tokens (12%)"},
		{0, 200000, "context: 0 of 200k tokens (0%)"},
		{72_000, 200_000, "context: 72k of 200k tokens (36%)"},
		{999, 0, "context: 999 of 0 tokens (0%)"},
	} {
		if got := meterText(tt.used, tt.window); got != tt.want {
			t.Errorf("meterText(%d, %d) = %q, want %q", tt.used, tt.window, got, tt.want)
		}
	}
}

// TestPrinterMarkdown styles the streamed answer's Markdown in colour, with spans split
// across deltas, and leaves it as written without colour.
func TestPrinterMarkdown(t *testing.T) {
	deltas := []string{"use **b", "old** and `x", ".go`\n```\n**a\x1b[2J**\n", "```\ndone"}
	for _, color := range []bool{false, true} {
		var stdout bytes.Buffer
		p := newPrinter(&stdout, &bytes.Buffer{}, false)
		p.stream, p.color, p.rawOut = true, color, false
		for _, d := range deltas {
			p.update(sessions.Update{Type: sessions.UpdateTextDelta, Text: d})
		}
		p.done(sessions.JobResult{})
		want := "use **bold** and `x.go`\n```\n**a\\x1b[2J**\n```\ndone\n"
		if color {
			want = "use \x1b[1mbold\x1b[0m and \x1b[32mx.go\x1b[0m\n\x1b[2m```\x1b[0m\n\x1b[32m**a\\x1b[2J**\x1b[0m\n\x1b[2m```\x1b[0m\ndone\n"
		}
		if got := stdout.String(); got != want {
			t.Errorf("colour %v: stdout =\n%q\nwant\n%q", color, got, want)
		}
	}
}

// TestPrinterTable lays out a table of the answer when stdout is a terminal, in the chat
// and in myco -p, with colour or without; to a file or a pipe the answer goes out as it
// came, byte for byte.
func TestPrinterTable(t *testing.T) {
	const answer = "Sizes:\n| file | bytes |\n|---|--:|\n| a.go | 12 |\n| main.go | 1200 |\n\x1b[2J done"
	const table = "Sizes:\nfile    │ bytes\n────────┼──────\na.go    │    12\nmain.go │  1200\n\\x1b[2J done\n"
	for _, tt := range []struct {
		name                  string
		stream, color, rawOut bool
		want                  string
	}{
		{"chat", true, false, false, table},
		{"chat in colour", true, true, false, "Sizes:\n\x1b[1mfile\x1b[0m    │ \x1b[1mbytes\x1b[0m\n────────┼──────\na.go    │    12\nmain.go │  1200\n\\x1b[2J done\n"},
		{"one-shot", false, false, false, table},
		{"chat to a file", true, false, true, answer + "\n"},
		{"one-shot to a file", false, false, true, answer + "\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var stdout bytes.Buffer
			p := newPrinter(&stdout, &bytes.Buffer{}, false)
			p.stream, p.color, p.rawOut = tt.stream, tt.color, tt.rawOut
			if tt.stream {
				for i := 0; i < len(answer); i += 5 {
					p.update(sessions.Update{Type: sessions.UpdateTextDelta, Text: answer[i:min(i+5, len(answer))]})
				}
			}
			var res sessions.JobResult
			res.Answer = answer
			p.done(res)
			if got := stdout.String(); got != tt.want {
				t.Errorf("stdout =\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}

// TestPrinterTurnFailed: a turn that failed is told on stderr in the words of its kind,
// then its technical detail on a line of its own, both made safe for the terminal.
func TestPrinterTurnFailed(t *testing.T) {
	var stdout, stderr bytes.Buffer
	p := newPrinter(&stdout, &stderr, false)
	p.turnFailed(&model.ProviderError{Status: 401, Type: "authentication_error", Message: "bad key \x1b]0;x\x07"})
	want := "myco: The model endpoint refused the credential (401 Unauthorized). Check `auth` of the model's gateway in config.toml; then try again.\n" +
		`  detail: model endpoint returned 401 (authentication_error): bad key \x1b]0;x\x07` + "\n"
	if got := stderr.String(); got != want {
		t.Errorf("stderr = %q, want %q", got, want)
	}
	if stdout.Len() != 0 {
		t.Errorf("stdout = %q, want nothing", stdout.String())
	}
}
