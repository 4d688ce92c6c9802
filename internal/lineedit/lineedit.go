package lineedit

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"

	"golang.org/x/term"
)

// ErrInterrupted is what [Editor.ReadLine] returns when the user pressed Ctrl-C.
var ErrInterrupted = errors.New("lineedit: interrupted")

// ErrClosed is what [Editor.ReadLine] returns after [Editor.Close].
var ErrClosed = errors.New("lineedit: closed")

// Options configure an [Editor].
type Options struct {
	// In is the terminal the lines are typed at. It is in raw mode while a line is read;
	// between reads, in the mode it had but without echo (see [Editor.ReadLine]); after
	// Close, in the mode it had.
	In *os.File
	// Out is where the prompt and the echo of the line go: the same terminal (standard
	// error, so that standard output holds what the program writes).
	Out io.Writer
	// History is what ↑ and ↓ recall; nil keeps none. The editor only reads it: the
	// caller appends whole messages to it.
	History *History
}

// Editor reads lines from a terminal with x/term's line editing: ← → Home End Ctrl-A
// Ctrl-E Ctrl-W Ctrl-U Ctrl-K and the like, ↑ ↓ through the history, and bracketed paste.
// ReadLine must not be called concurrently; Write and Close may be called at any time.
type Editor struct {
	fd   int // -1 when In is not a terminal whose mode is set (tests)
	rw   io.ReadWriter
	out  io.Writer
	in   *filter
	hist *History

	mu      sync.Mutex     // guards the fields below
	t       *term.Terminal // replaced after an io.EOF: x/term would give its rest again
	orig    *term.State    // the terminal's mode before the first read; nil until then
	origTio *termios       // the same, to derive the mode between reads; nil: none
	changed bool           // the terminal is not in mode orig
	reading bool
	closed  bool
}

// New returns an editor for the terminal o.In. The caller must call Close before the
// program exits, on every path, to leave the terminal as it found it.
func New(o Options) *Editor {
	e := newEditor(o.In, o.Out, o.History)
	e.fd = int(o.In.Fd())
	return e
}

// newEditor returns an editor on in and out that leaves the terminal mode alone.
func newEditor(in io.Reader, out io.Writer, h *History) *Editor {
	f := &filter{r: in}
	e := &Editor{fd: -1, out: out, in: f, hist: h, rw: struct {
		io.Reader
		io.Writer
	}{f, out}}
	e.t = e.newTerminal()
	return e
}

func (e *Editor) newTerminal() *term.Terminal {
	t := term.NewTerminal(e.rw, "")
	t.History = termHistory{e.hist}
	return t
}

// ReadLine shows prompt, reads one line and returns it, with the line breaks of a pasted
// block (and of a recalled multi-line entry) as "\n". Ctrl-C returns [ErrInterrupted] and
// Ctrl-D on an empty line, or the end of input, io.EOF; the line being edited is dropped.
//
// The terminal is in raw mode while the line is read. Afterwards it is in its own mode
// without echo, so that keys typed while the program works (on a turn) are not written
// into its output but wait for the next ReadLine, which shows them on the line; Ctrl-C is
// the terminal's interrupt again.
func (e *Editor) ReadLine(prompt string) (string, error) {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return "", ErrClosed
	}
	t := e.t
	if e.fd >= 0 {
		if e.orig == nil {
			st, err := term.GetState(e.fd)
			if err != nil {
				e.mu.Unlock()
				return "", fmt.Errorf("read the terminal's mode: %w", err)
			}
			e.orig = st
			e.origTio, _ = getTermios(e.fd) // nil: between reads, the terminal's own mode
		}
		if _, err := term.MakeRaw(e.fd); err != nil {
			e.mu.Unlock()
			return "", fmt.Errorf("put the terminal in raw mode: %w", err)
		}
		e.changed = true
		e.setSize(t)
	}
	e.reading = true
	t.SetPrompt(prompt)
	t.SetBracketedPasteMode(true) // under mu: never after Close turned it off
	e.mu.Unlock()

	stop := e.watchSize(t)
	line, err := t.ReadLine()
	t.SetBracketedPasteMode(false)
	stop()
	if errors.Is(err, term.ErrPasteIndicator) {
		err = nil
	}

	e.mu.Lock()
	defer e.mu.Unlock()
	if err != nil {
		if e.in.interrupted() {
			err = ErrInterrupted
		}
		line = ""
		io.WriteString(e.out, "\r\n") // x/term leaves the cursor on the prompt's line
		e.t = e.newTerminal()
	}
	e.reading = false
	e.between()
	return shownAsTyped.Replace(line), err
}

// shownAsTyped turns the line as it was edited back into the text typed.
var shownAsTyped = strings.NewReplacer(Newline, "\n", Tab, "\t")

// asShown is the reverse of shownAsTyped, for a recalled entry.
var asShown = strings.NewReplacer("\n", Newline, "\t", Tab)

// between puts the terminal in its mode between reads: its own without echo, or its own
// when that cannot be set. Call it with mu held.
func (e *Editor) between() {
	if !e.changed || e.closed {
		return
	}
	if e.origTio != nil && setQuiet(e.fd, e.origTio) == nil {
		return
	}
	e.restore()
}

// watchSize keeps t's width that of the terminal while a line is read; stop ends it.
func (e *Editor) watchSize(t *term.Terminal) (stop func()) {
	if e.fd < 0 || len(resizeSignals) == 0 {
		return func() {}
	}
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, resizeSignals...)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-done:
				return
			case <-ch:
				e.setSize(t)
			}
		}
	})
	return func() {
		signal.Stop(ch)
		close(done)
		wg.Wait()
	}
}

// setSize gives t the terminal's size, when the terminal knows it (a pseudo-terminal may
// say 0 columns).
func (e *Editor) setSize(t *term.Terminal) {
	if w, h, err := term.GetSize(e.fd); err == nil && w > 0 {
		t.SetSize(w, h)
	}
}

// Write writes p to the output: above the prompt and the line being edited when a line is
// being read (which are then drawn again), as it is otherwise.
func (e *Editor) Write(p []byte) (int, error) {
	e.mu.Lock()
	t, reading := e.t, e.reading
	e.mu.Unlock()
	if reading {
		return t.Write(p)
	}
	return e.out.Write(p)
}

// Close puts the terminal back in the mode it had before the first read (even while a
// line is being read: that ReadLine goes on until input arrives or the program exits) and
// makes later reads fail with [ErrClosed]. It may be called more than once.
func (e *Editor) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.closed = true
	if e.reading && e.changed {
		io.WriteString(e.out, "\x1b[?2004l\r\n") // no more bracketed paste; off the prompt's line
	}
	return e.restore()
}

// restore puts the terminal back in the mode it had before the first read. Call it with
// mu held.
func (e *Editor) restore() error {
	if !e.changed {
		return nil
	}
	e.changed = false
	if err := term.Restore(e.fd, e.orig); err != nil {
		return fmt.Errorf("restore the terminal's mode: %w", err)
	}
	return nil
}

// termHistory is a [History] as x/term asks for it. x/term adds every line it reads; the
// caller adds whole messages instead (a message continued over several lines is one
// entry), so Add does nothing.
type termHistory struct{ h *History }

func (t termHistory) Add(string) {}

func (t termHistory) Len() int {
	if t.h == nil {
		return 0
	}
	return t.h.Len()
}

func (t termHistory) At(i int) string { return t.h.At(i) }
