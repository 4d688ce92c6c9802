package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"myco/agent"
	"myco/agent/model"
	"myco/hosts"
)

// printer renders a turn for the terminal: the answer on stdout and short activity lines
// on stderr, or, with --json, every event as one JSON object per line on stdout.
type printer struct {
	mu     sync.Mutex // guards the writers and midLine
	stdout io.Writer
	stderr io.Writer
	json   bool
	enc    *json.Encoder
	// stream prints the model's text to stdout as it arrives (the terminal chat) rather
	// than the final answer at the end (myco -p).
	stream  bool
	midLine bool // stream: stdout's last byte was not a newline
}

func newPrinter(stdout, stderr io.Writer, asJSON bool) *printer {
	return &printer{stdout: stdout, stderr: stderr, json: asJSON, enc: json.NewEncoder(stdout)}
}

// line is one NDJSON event.
type line struct {
	Type     string          `json:"type"`
	Session  string          `json:"session,omitempty"`
	Text     string          `json:"text,omitempty"`
	Tool     string          `json:"tool,omitempty"`
	CallID   string          `json:"call_id,omitempty"`
	Input    json.RawMessage `json:"input,omitempty"`
	IsError  bool            `json:"is_error,omitempty"`
	Unknown  bool            `json:"unknown,omitempty"`
	Images   int             `json:"images,omitempty"`
	Duration float64         `json:"duration_secs,omitempty"`
	Stop     string          `json:"stop,omitempty"`
	Usage    *model.Usage    `json:"usage,omitempty"`
	Error    string          `json:"error,omitempty"`
	Steps    int             `json:"steps,omitempty"`
	Host     string          `json:"host,omitempty"`
	State    string          `json:"state,omitempty"`
	Attaches int             `json:"attaches,omitempty"`
}

func (p *printer) emit(l line) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.enc.Encode(l)
}

func (p *printer) note(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.endLine()
	fmt.Fprintf(p.stderr, format+"\n", args...)
}

// endLine ends a streamed line of stdout, so that what follows starts on its own. Call it
// with mu held.
func (p *printer) endLine() {
	if p.midLine {
		io.WriteString(p.stdout, "\n")
		p.midLine = false
	}
}

// text streams model text to stdout.
func (p *printer) text(s string) {
	if s == "" {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	io.WriteString(p.stdout, s)
	p.midLine = !strings.HasSuffix(s, "\n")
}

// session announces the session id before the first model call, so a run that dies can
// still be found.
func (p *printer) session(id string) {
	p.note("session: %s", id)
	if p.json {
		p.emit(line{Type: "session", Session: id})
	}
}

// hostState reports a remote's state change: one short line on stderr and, with --json, a
// "host" event.
func (p *printer) hostState(st hosts.Status) {
	switch {
	case st.State == hosts.StateAttached && st.Attaches > 1:
		p.note("host %s: re-attached", st.Alias)
	case st.State == hosts.StateAttached:
		p.note("host %s: attached (myco %s, %s/%s)", st.Alias, st.Hello.Version, st.Hello.OS, st.Hello.Arch)
	default:
		p.note("host %s: %s: %s", st.Alias, st.State, summarize(st.Err, 300))
	}
	if p.json {
		p.emit(line{Type: "host", Host: st.Alias, State: string(st.State), Error: st.Err, Attaches: st.Attaches})
	}
}

func (p *printer) event(ev agent.Event) {
	if p.json {
		p.emit(jsonEvent(ev))
		return
	}
	switch ev := ev.(type) {
	case agent.TextDelta:
		if p.stream {
			p.text(ev.Text)
		}
	case agent.ToolStarted:
		p.note("→ %s %s", ev.Call.Name, summarize(string(ev.Call.Input), 100))
	case agent.ToolFinished:
		r := ev.Result
		status := "ok"
		switch {
		case r.Unknown:
			status = "outcome unknown"
		case r.IsError:
			status = "error: " + summarize(r.Text, 100)
		}
		p.note("← %s %s (%s)", ev.Call.Name, status, ev.Duration.Round(time.Millisecond))
	case agent.Notice:
		p.note("! %s", ev.Text)
	case agent.Resumed:
		p.note("… %s", ev.Reason)
	}
}

func jsonEvent(ev agent.Event) line {
	switch ev := ev.(type) {
	case agent.TextDelta:
		return line{Type: "text_delta", Text: ev.Text}
	case agent.ThinkingDelta:
		return line{Type: "thinking_delta", Text: ev.Text}
	case agent.Notice:
		return line{Type: "notice", Text: ev.Text}
	case agent.ToolStarted:
		return line{Type: "tool_started", Tool: ev.Call.Name, CallID: ev.Call.ID, Input: ev.Call.Input}
	case agent.ToolFinished:
		r := ev.Result
		return line{Type: "tool_finished", Tool: ev.Call.Name, CallID: ev.Call.ID, Text: r.Text,
			IsError: r.IsError, Unknown: r.Unknown, Images: len(r.Images), Duration: ev.Duration.Seconds()}
	case agent.StepDone:
		u := ev.Usage
		return line{Type: "step", Stop: string(ev.Stop), Usage: &u}
	case agent.Resumed:
		return line{Type: "resumed", Text: ev.Reason}
	}
	return line{Type: fmt.Sprintf("%T", ev)}
}

// done prints the final answer.
func (p *printer) done(res agent.Result) {
	if p.json {
		u := res.Usage
		p.emit(line{Type: "done", Text: res.Answer, Stop: string(res.Stop), Usage: &u, Steps: res.Steps})
		return
	}
	if res.CapReached {
		p.note("myco: the answer was cut off by the output limit %d times in a row; stopping (raise max_output_tokens or max_truncated_resumes)", res.TruncatedResumes)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stream {
		p.endLine() // the answer has streamed already
		return
	}
	answer := res.Answer
	if answer != "" && !strings.HasSuffix(answer, "\n") {
		answer += "\n"
	}
	io.WriteString(p.stdout, answer)
}

func (p *printer) failed(err error) {
	if p.json {
		p.emit(line{Type: "error", Error: err.Error()})
	}
	p.note("myco: %s", oneLine(err.Error()))
}

func (p *printer) interrupted() {
	if p.json {
		p.emit(line{Type: "interrupted"})
	}
	p.note("myco: interrupted")
}

// summarize shortens s to one line of at most n runes.
func summarize(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
