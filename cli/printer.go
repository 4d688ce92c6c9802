package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"

	"myco.dev/agent/model"
	"myco.dev/internal/humanize"
	"myco.dev/internal/termmd"
	"myco.dev/internal/termtext"
	"myco.dev/sessions"
)

// printer renders the session service's updates for a terminal: the answer on stdout and
// short activity lines on stderr, or, with --json, every update as one JSON object per line
// on stdout. Everything it writes to a terminal passes through [termtext.Safe], so that
// model output, tool output, gateway messages and titles cannot drive the terminal.
type printer struct {
	mu       sync.Mutex // guards the writers, midLine and writeErr
	stdout   io.Writer
	stderr   io.Writer
	json     bool
	enc      *json.Encoder
	rawOut   bool // stdout is not a terminal: the answer goes out as it is
	midLine  bool // stream: stdout's last byte was not a newline
	writeErr error
	// stream prints the model's text to stdout as it arrives (the terminal chat) rather
	// than the final answer at the end (myco -p); the chat's stderr lines also show the
	// model's thinking, folded to one line, and the host of each tool call.
	stream bool
	// color styles the stderr lines (thinking and tool lines dimmed, errors red); the
	// chat sets it when both outputs are terminals and NO_COLOR is not set.
	color bool
	// md lays out the answer's tables when stdout is a terminal, and styles its Markdown
	// when color is on too.
	md       termmd.Renderer
	thinking strings.Builder // the thinking of the response streaming now, not yet shown
	// waiting: the chat's "working…" line is on the terminal, to be erased by what comes
	// next (see [printer.working]).
	waiting bool
	// compactResult sends the line of a compaction to stdout, as myco --compact's result,
	// rather than to stderr as a note.
	compactResult bool
	// denied counts the tool calls denied approval (myco -p's exit status says so).
	denied int
	// mcp tells which MCP server a tool belongs to and where it runs, for the tool lines
	// ("mcp SERVER/TOOL"); nil reads the server from the tool's name alone.
	mcp MCPServers
	// output shows the tool calls' output on stderr (see tooloutput.go): the chat's, and
	// myco -p's when stderr is a terminal.
	output bool
	calls  map[string]*callOutput // guarded by mu: the running calls whose output showed
}

// The SGR sequences of the stderr lines' styles.
const (
	styleDim   = "\x1b[2m"
	styleTool  = "\x1b[36m" // cyan
	styleWarn  = "\x1b[33m" // yellow
	styleError = "\x1b[31m" // red
	styleReset = "\x1b[0m"
)

func newPrinter(stdout, stderr io.Writer, asJSON bool) *printer {
	p := &printer{stdout: stdout, stderr: stderr, json: asJSON, rawOut: !isTerminal(stdout)}
	p.enc = json.NewEncoder(writerFunc(p.writeOut))
	p.enc.SetEscapeHTML(false) // --json's "a && b" reads so, as in the API's events
	return p
}

// isTerminal reports whether w is a terminal (not merely a character device such as
// /dev/null).
func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }

// writeOut writes to stdout and keeps the first error, which the caller reports: an answer
// that could not be written is a failure. Call it with mu held.
func (p *printer) writeOut(b []byte) (int, error) {
	n, err := p.stdout.Write(b)
	if err != nil && p.writeErr == nil {
		p.writeErr = err
	}
	return n, err
}

// outText writes model text to stdout: made safe when stdout is a terminal. Call it with mu
// held.
func (p *printer) outText(s string) {
	if !p.rawOut {
		s = termtext.Safe(s)
	}
	io.WriteString(writerFunc(p.writeOut), s)
}

// err returns the first error writing to stdout, if any.
func (p *printer) err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.writeErr
}

func (p *printer) emit(u sessions.Update) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.enc.Encode(u)
}

// note writes one line to stderr, made safe.
func (p *printer) note(format string, args ...any) {
	p.styled("", format, args...)
}

// styled writes one line to stderr, made safe, in style when colour is on.
func (p *printer) styled(style, format string, args ...any) {
	line := termtext.Safe(fmt.Sprintf(format, args...))
	if p.color && style != "" {
		line = style + line + styleReset
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clearWorking()
	p.endLine()
	io.WriteString(p.stderr, line+"\n")
}

// workingLine is what the chat shows while a turn waits for the model or its tools.
const workingLine = "working… (Ctrl-C stops the turn)"

// working shows a dimmed [workingLine] until the next thing printed erases it, so that the
// wait for a model's first token, or for its next step after a tool, reads as a wait and
// not as a hang. Only the chat with colour shows it: it is erased with a carriage return
// and an erase-line sequence, which need a terminal on both outputs.
func (p *printer) working() {
	if !p.stream || !p.color {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.waiting || p.midLine {
		return
	}
	io.WriteString(p.stderr, styleDim+workingLine+styleReset)
	p.waiting = true
}

// idle erases the working line, if it is shown.
func (p *printer) idle() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clearWorking()
}

// clearWorking erases the working line, if it is shown. Call it with mu held.
func (p *printer) clearWorking() {
	if p.waiting {
		io.WriteString(p.stderr, "\r\x1b[K")
		p.waiting = false
	}
}

// endLine ends a streamed line of stdout, so that what follows starts on its own. Call it
// with mu held.
func (p *printer) endLine() {
	if !p.rawOut {
		io.WriteString(writerFunc(p.writeOut), p.md.Flush())
	}
	if p.midLine {
		p.writeOut([]byte("\n"))
		p.midLine = false
	}
}

// text streams model text to stdout: on a terminal, made safe, its tables laid out and,
// when colour is on, its Markdown styled; otherwise as it came.
func (p *printer) text(s string) {
	if s == "" {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clearWorking()
	p.outMarkdown(s)
	p.midLine = !strings.HasSuffix(s, "\n")
}

// outMarkdown writes model text to stdout through the Markdown renderer when stdout is a
// terminal, as it is when it is not. Call it with mu held.
func (p *printer) outMarkdown(s string) {
	if p.rawOut {
		p.outText(s)
		return
	}
	p.md.Plain, p.md.Width = !p.color, columns(p.stdout, 80)
	io.WriteString(writerFunc(p.writeOut), p.md.Write(termtext.Safe(s)))
}

// session announces the session id before the first model call, so a run that dies can
// still be found.
func (p *printer) session(id string) {
	p.note("session: %s", id)
	if p.json {
		p.emit(sessions.Update{Type: sessions.UpdateSession, Session: id})
	}
}

// update prints one update of the session service.
func (p *printer) update(u sessions.Update) {
	if u.Type == sessions.UpdateApprovalResolved && u.Approval != nil && u.Approval.Status == sessions.ApprovalDenied {
		p.mu.Lock()
		p.denied++
		p.mu.Unlock()
	}
	if p.json {
		if u.Type != sessions.UpdateReset {
			p.emit(u)
		}
		if u.Type == sessions.UpdateHost {
			p.hostState(u) // a host's state shows on stderr too, as without --json
		}
		return
	}
	if u.Type == sessions.UpdateThinkingDelta {
		if p.stream {
			p.think(u.Text)
		}
		return
	}
	p.showThinking()
	if u.Terminal() {
		p.mu.Lock()
		p.calls = nil // a call cut without its end (a failed turn) is not followed further
		p.mu.Unlock()
	}
	switch u.Type {
	case sessions.UpdateTextDelta:
		if p.stream {
			p.text(u.Text)
		}
	case sessions.UpdateToolStarted:
		head := "→ " + p.toolLabel(u) + " "
		n := 100
		if p.stream {
			n = max(20, p.columns()-len([]rune(head))-1) // one line on the chat's terminal
		}
		p.styled(styleTool, "%s%s", head, summarize(string(u.Input), n))
	case sessions.UpdateToolProgress:
		if p.output {
			p.progress(u)
		}
	case sessions.UpdateToolFinished:
		o := sessions.ToolOutcome(u.Tool, model.ToolResult{Text: u.Text, IsError: u.IsError, Unknown: u.Unknown, Stopped: u.Stopped})
		if p.output {
			p.finished(u, o)
		}
		p.toolEnd(u, o)
		p.working() // the model's next step
	case sessions.UpdateNotice:
		p.styled(styleWarn, "! %s", u.Text)
	case sessions.UpdateResumed:
		p.note("… %s", u.Text)
	case sessions.UpdateCompacted:
		if p.compactResult {
			p.mu.Lock()
			fmt.Fprintf(writerFunc(p.writeOut), "compacted thread %s into %s\n", u.From, u.To)
			p.mu.Unlock()
			break
		}
		p.note("compacted thread %s into %s", u.From, u.To)
	case sessions.UpdateHost:
		p.hostState(u)
	case sessions.UpdateApprovalRequested:
		if a := u.Approval; a != nil {
			p.styled(styleWarn, "? %s%s waits for your approval: %s (%s)", childLabel(u), p.toolLabel(u), approvalSubject(a), a.Reason)
		}
	case sessions.UpdateApprovalResolved:
		if a := u.Approval; a != nil {
			p.styled(styleWarn, "! %s%s %s: %s", childLabel(u), p.toolLabel(u), a.Status, approvalSubject(a))
		}
	}
}

// childLabel names the child session an approval event is of, when it came on an
// ancestor's stream.
func childLabel(u sessions.Update) string {
	if u.Child == "" {
		return ""
	}
	return "child session " + u.Child + ": "
}

// approvalSubject is what an approval asks about, in a few words: the command, the files.
func approvalSubject(a *sessions.Approval) string {
	switch {
	case a.Command != "":
		return summarize(a.Command, 100)
	case len(a.Paths) > 0:
		return strings.Join(a.Paths, ", ")
	}
	return a.Tool
}

// toolEnd prints the last line of a tool call: how it ended, in the browser's words
// ([sessions.ToolOutcome]: "exit 1", "stopped", an error's text), and how long it took.
func (p *printer) toolEnd(u sessions.Update, o sessions.Outcome) {
	words, style := o.Words, styleDim
	switch o.Status {
	case "error":
		style = styleError
		if words == "" {
			words = "error: " + summarize(u.Text, 100)
		}
	case "unknown":
		style = styleWarn
		if words == "" {
			words = "outcome unknown"
		}
	default:
		if words == "" {
			words = "ok"
		}
	}
	tool := u.Tool
	if label, _, ok := mcpCall(p.mcp, u.Tool); ok {
		tool = label
	}
	p.styled(style, "← %s %s (%s)", tool, words, humanize.Duration(time.Duration(u.Duration*float64(time.Second))))
}

// toolLabel names a tool call in its first line: the tool and, in the chat, its host;
// an MCP tool as "mcp SERVER/TOOL" and the host its server runs on (an MCP call has no
// host field: its server's configuration says where it runs).
func (p *printer) toolLabel(u sessions.Update) string {
	if label, host, ok := mcpCall(p.mcp, u.Tool); ok {
		return label + p.at(host)
	}
	return u.Tool + p.at(u.Host)
}

// at names a tool call's host in the chat's header of the call (" @local"); myco -p's
// lines keep their older form.
func (p *printer) at(host string) string {
	if !p.stream || host == "" {
		return ""
	}
	return " @" + host
}

// maxThinking bounds the thinking kept for its one-line summary.
const maxThinking = 4 << 10

// think keeps a response's thinking as it streams, for [printer.showThinking].
func (p *printer) think(s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.thinking.Len() < maxThinking {
		p.thinking.WriteString(s)
	}
}

// showThinking prints the thinking kept, if any, dimmed and folded to one line, once the
// response goes on to something else.
func (p *printer) showThinking() {
	p.mu.Lock()
	text := p.thinking.String()
	p.thinking.Reset()
	p.mu.Unlock()
	if strings.TrimSpace(text) != "" {
		p.styled(styleDim, "thinking: %s", summarize(text, max(20, p.columns()-len("thinking: ")-1)))
	}
}

// columns is the width of stderr's terminal, or 120 when it is not one.
func (p *printer) columns() int { return columns(p.stderr, 120) }

// columns is the width of w's terminal, or def when it is not one.
func columns(w io.Writer, def int) int {
	if f, ok := w.(*os.File); ok {
		if w, _, err := term.GetSize(int(f.Fd())); err == nil && w > 0 {
			return w
		}
	}
	return def
}

// meter prints the context meter: the prompt tokens of the last response against the
// model's context window, in the browser's words, and what the session cost.
func (p *printer) meter(used, window int, cost string) {
	p.styled(styleDim, "%s · %s", meterText(used, window), cost)
}

// hostState reports a remote's state change: one short line on stderr.
func (p *printer) hostState(u sessions.Update) {
	switch {
	case u.State == "attached" && u.Attaches > 1 && u.Text != "":
		p.note("host %s: re-attached; %s", u.Host, u.Text)
	case u.State == "attached" && u.Attaches > 1:
		p.note("host %s: re-attached", u.Host)
	case u.State == "attached":
		p.note("host %s: attached (%s)", u.Host, u.Text)
	default:
		p.note("host %s: %s: %s", u.Host, u.State, summarize(u.Error, 300))
	}
}

// done prints the final answer of a turn that ended as res says.
func (p *printer) done(res sessions.JobResult) {
	if p.json {
		return // the done update carried it
	}
	if res.CapReached {
		p.note("myco: the answer was cut off by the output limit %d times in a row; stopping (raise max_output_tokens or max_truncated_resumes)", res.TruncatedResumes)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stream {
		p.clearWorking()
		p.endLine() // the answer has streamed already
		return
	}
	answer := res.Answer
	if answer != "" && !strings.HasSuffix(answer, "\n") {
		answer += "\n"
	}
	p.outMarkdown(answer)
	p.endLine()
}

func (p *printer) failed(err error) {
	p.styled(styleError, "myco: %s", oneLine(err.Error()))
}

// turnFailed says why a turn or compaction ended without an answer: the words every front
// end shows of its kind ([sessions.Describe]: what happened, what to do), then the
// technical detail, dimmed, on a line of its own.
func (p *printer) turnFailed(err error) {
	f := sessions.Describe(err)
	p.styled(styleError, "myco: %s", oneLine(f.Message))
	if f.Detail != "" {
		p.styled(styleDim, "  detail: %s", oneLine(f.Detail))
	}
}

// failure says why a job could not start (the session could not be opened, its model is
// unknown): the words of its kind on stderr, and with --json the error event that ends
// stdout, since no job publishes one.
func (p *printer) failure(f sessions.Failure) {
	p.styled(styleError, "myco: %s", oneLine(f.Message))
	if f.Detail != "" {
		p.styled(styleDim, "  detail: %s", oneLine(f.Detail))
	}
	if p.json {
		p.emit(sessions.Update{Type: sessions.UpdateError, Code: f.Code, Error: f.Message, Detail: f.Detail})
	}
}

func (p *printer) interrupted() {
	p.styled(styleWarn, "myco: interrupted")
}

// summarize shortens s to one line of at most n runes.
func summarize(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// deniedCalls returns how many tool calls were denied approval.
func (p *printer) deniedCalls() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.denied
}
