package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"myco/agent"
	"myco/internal/termtext"
	"myco/sessions"
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
	// than the final answer at the end (myco -p).
	stream bool
}

func newPrinter(stdout, stderr io.Writer, asJSON bool) *printer {
	p := &printer{stdout: stdout, stderr: stderr, json: asJSON, rawOut: !isTerminal(stdout)}
	p.enc = json.NewEncoder(writerFunc(p.writeOut))
	return p
}

// isTerminal reports whether w is a terminal (a character device).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
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
	p.mu.Lock()
	defer p.mu.Unlock()
	p.endLine()
	io.WriteString(p.stderr, termtext.Safe(fmt.Sprintf(format, args...))+"\n")
}

// endLine ends a streamed line of stdout, so that what follows starts on its own. Call it
// with mu held.
func (p *printer) endLine() {
	if p.midLine {
		p.writeOut([]byte("\n"))
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
	p.outText(s)
	p.midLine = !strings.HasSuffix(s, "\n")
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
	if p.json {
		if u.Type != sessions.UpdateReset {
			p.emit(u)
		}
		if u.Type == sessions.UpdateHost {
			p.hostState(u) // a host's state shows on stderr too, as without --json
		}
		return
	}
	switch u.Type {
	case sessions.UpdateTextDelta:
		if p.stream {
			p.text(u.Text)
		}
	case sessions.UpdateToolStarted:
		p.note("→ %s %s", u.Tool, summarize(string(u.Input), 100))
	case sessions.UpdateToolFinished:
		status := "ok"
		switch {
		case u.Unknown:
			status = "outcome unknown"
		case u.IsError:
			status = "error: " + summarize(u.Text, 100)
		}
		p.note("← %s %s (%s)", u.Tool, status, (time.Duration(u.Duration * float64(time.Second))).Round(time.Millisecond))
	case sessions.UpdateNotice:
		p.note("! %s", u.Text)
	case sessions.UpdateResumed:
		p.note("… %s", u.Text)
	case sessions.UpdateCompacted:
		p.note("compacted thread %s into %s", u.From, u.To)
	case sessions.UpdateHost:
		p.hostState(u)
	}
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

// done prints the final answer.
func (p *printer) done(res agent.Result) {
	if p.json {
		return // the done update carried it
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
	p.outText(answer)
}

func (p *printer) failed(err error) {
	p.note("myco: %s", oneLine(err.Error()))
}

func (p *printer) interrupted() {
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
