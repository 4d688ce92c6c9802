package cli

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"

	"myco.dev/internal/lineedit"
)

// historySize is how many messages the chat's history keeps, in [Options].History.
const historySize = 1000

// chatInput is where the chat's messages come from: the line editor when standard input
// and standard error are a terminal, else the lines of standard input.
type chatInput interface {
	// next asks for the next message, which arrives on the channel returned; call it
	// again only after that.
	next() <-chan inputResult
	// interactive reports whether the user types at a line editor.
	interactive() bool
	// note writes a line for the user while a message is being read (above the prompt).
	note(s string)
	// close leaves the terminal as it was found.
	close()
}

// inputResult is one message, or why there is none: io.EOF at the end of input (Ctrl-D),
// [lineedit.ErrInterrupted] for Ctrl-C at the prompt.
type inputResult struct {
	text string
	err  error
	warn string // something to tell the user, e.g. that the history could not be saved
}

// capableTerm reports whether a terminal of type TERM takes the line editor's cursor
// movements and colours: not "dumb", nor unknown (TERM unset), as git decides.
func capableTerm(term string) bool { return term != "" && term != "dumb" }

// input picks the chat's input for the standard streams.
func (c *chatSession) input() chatInput {
	std := c.t.std
	f, _ := std.Stdin.(*os.File)
	if f != nil && isTerminal(f) && isTerminal(std.Stderr) && capableTerm(c.o.Term) {
		var hist *lineedit.History
		if c.o.History != "" {
			var err error
			if hist, err = lineedit.OpenHistory(c.o.History, historySize); err != nil {
				c.t.out.note("myco: %s; the history of this run is not kept", oneLine(err.Error()))
				hist = nil
			}
		}
		return &editorInput{ed: lineedit.New(lineedit.Options{In: f, Out: std.Stderr, History: hist}), hist: hist}
	}
	in := &lineInput{lines: readLines(std.Stdin), stderr: std.Stderr}
	if f != nil && isTerminal(f) {
		in.prompt = "> " // none when the input is not typed: no echo would end the line
	}
	return in
}

// color reports whether the chat's stderr lines are styled: both outputs are terminals
// that take colours, and NO_COLOR is not set.
func (c *chatSession) color() bool {
	std := c.t.std
	return isTerminal(std.Stdout) && isTerminal(std.Stderr) && !c.o.NoColor && capableTerm(c.o.Term)
}

// editorInput reads messages with the line editor, one goroutine per message: a read
// blocked when the chat ends lives until input arrives or the process exits.
type editorInput struct {
	ed   *lineedit.Editor
	hist *lineedit.History // nil when it could not be read

	mu       sync.Mutex // guards histWarn
	histWarn bool       // a failed save was reported
}

func (in *editorInput) next() <-chan inputResult {
	ch := make(chan inputResult, 1)
	go func() { ch <- in.read() }()
	return ch
}

// read reads one message: lines that end with a backslash continue it.
func (in *editorInput) read() inputResult {
	var msg strings.Builder
	prompt := "> "
	for {
		line, err := in.ed.ReadLine(prompt)
		if err != nil {
			return inputResult{err: err}
		}
		if s, ok := strings.CutSuffix(line, `\`); ok {
			msg.WriteString(s + "\n")
			prompt = "… "
			continue
		}
		msg.WriteString(line)
		r := inputResult{text: msg.String()}
		if in.hist != nil {
			if err := in.hist.Append(r.text); err != nil && !in.warned() {
				r.warn = oneLine(err.Error()) + " (the history of this run is still recalled)"
			}
		}
		return r
	}
}

// warned reports whether a failed history save was reported already, and marks it so.
func (in *editorInput) warned() bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	w := in.histWarn
	in.histWarn = true
	return w
}

func (in *editorInput) interactive() bool { return true }

func (in *editorInput) note(s string) { io.WriteString(in.ed, s+"\n") }

func (in *editorInput) close() { in.ed.Close() }

// lineInput reads the lines of standard input, as a script or a pipe gives them.
type lineInput struct {
	lines    <-chan string
	stderr   io.Writer
	prompt   string      // "> " when standard input is a terminal without the line editor
	prompted atomic.Bool // the prompt is shown and no line came yet
}

// next shows the prompt and takes the next line, in a goroutine that lives until a line
// comes or the input ends.
func (in *lineInput) next() <-chan inputResult {
	fmt.Fprint(in.stderr, in.prompt)
	in.prompted.Store(in.prompt != "")
	ch := make(chan inputResult, 1)
	go func() {
		l, ok := <-in.lines
		if !ok {
			ch <- inputResult{err: io.EOF}
			return
		}
		in.prompted.Store(false)
		ch <- inputResult{text: l}
	}()
	return ch
}

func (in *lineInput) interactive() bool { return false }

func (in *lineInput) note(s string) { fmt.Fprintln(in.stderr, s) }

// close ends the prompt's line, when a prompt is waiting.
func (in *lineInput) close() {
	if in.prompted.Load() {
		fmt.Fprintln(in.stderr)
	}
}

// readLines delivers the lines of r, joining a line that ends with a backslash to the
// next, and closes the channel at end of input. The reader goroutine lives until r ends or
// the process exits.
func readLines(r io.Reader) <-chan string {
	ch := make(chan string)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		var cur strings.Builder
		for sc.Scan() {
			line := sc.Text()
			if strings.HasSuffix(line, `\`) {
				cur.WriteString(strings.TrimSuffix(line, `\`))
				cur.WriteString("\n")
				continue
			}
			cur.WriteString(line)
			ch <- cur.String()
			cur.Reset()
		}
		if cur.Len() > 0 {
			ch <- cur.String()
		}
	}()
	return ch
}
