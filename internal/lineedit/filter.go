package lineedit

import (
	"bytes"
	"io"
	"strings"
	"unicode/utf8"

	"myco.dev/internal/termtext"
)

// Newline is how a line break inside the line being edited shows: a pasted block's line
// breaks, and those of a recalled multi-line message. [Editor.ReadLine] gives each back as
// "\n".
const Newline = "␤"

// Tab is how a tab inside the line being edited shows: x/term counts every rune as one
// column, so a tab, which the terminal moves over to its next stop, would leave the cursor
// where x/term does not think it is. [Editor.ReadLine] gives each back as "\t".
const Tab = "⇥"

// The markers a terminal in bracketed-paste mode puts around pasted text.
var (
	pasteStart = []byte("\x1b[200~")
	pasteEnd   = []byte("\x1b[201~")
)

const (
	keyCtrlC = 3
	keyCtrlD = 4
)

// filter is the input of the x/term Terminal: the terminal's bytes, with a pasted block's
// line breaks turned into [Newline] (so that pressing Enter, not the paste, sends it), its
// tabs into [Tab] and its other control characters dropped (x/term would echo them to the terminal as they
// are). A delivery ends after Ctrl-C or Ctrl-D, so that the last byte delivered says which
// of them ended a read with io.EOF. Not safe for concurrent use.
type filter struct {
	r     io.Reader
	buf   [256]byte
	in    []byte // read, not yet looked at
	out   []byte // ready to deliver
	err   error  // the read error, reported once in and out are spent
	paste bool   // inside a bracketed paste
	cr    bool   // in a paste, the last byte was CR: a following LF is the same break
	last  byte   // the last byte delivered
}

func (f *filter) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	for len(f.out) == 0 {
		if f.err != nil {
			if len(f.in) > 0 { // a partial marker or rune that will not be completed
				f.flush()
				continue
			}
			return 0, f.err
		}
		n, err := f.r.Read(f.buf[:])
		f.in = append(f.in, f.buf[:n]...)
		f.err = err
		f.process()
	}
	n := copy(p, f.out)
	f.out = f.out[n:]
	f.last = p[n-1]
	return n, nil
}

// interrupted reports whether the last byte delivered was Ctrl-C.
func (f *filter) interrupted() bool { return f.last == keyCtrlC }

// process moves what it can of in to out: all of it but a marker or rune cut off at the
// end of the read, and nothing after a Ctrl-C or Ctrl-D that is not pasted.
func (f *filter) process() {
	for len(f.in) > 0 {
		if !f.paste {
			i := bytes.IndexAny(f.in, "\x1b\x03\x04")
			if i < 0 {
				f.out = append(f.out, f.in...)
				f.in = f.in[:0]
				return
			}
			f.out = append(f.out, f.in[:i]...)
			f.in = f.in[i:]
			switch {
			case f.in[0] != 0x1b: // Ctrl-C or Ctrl-D: deliver up to it
				f.out = append(f.out, f.in[0])
				f.in = f.in[1:]
				return
			case bytes.HasPrefix(f.in, pasteStart):
				f.out = append(f.out, pasteStart...)
				f.in = f.in[len(pasteStart):]
				f.paste, f.cr = true, false
			case bytes.HasPrefix(pasteStart, f.in), len(f.in) == 2 && f.in[1] == 'O', vtKeyPrefix(f.in):
				return // maybe a paste starts, or an SS3 or VT key: wait for the rest
			case vtKey(f.in) != 0: // Home and End as VT220s (and tmux, screen) send them
				f.out = append(f.out, 0x1b, '[', vtKey(f.in))
				f.in = f.in[4:]
			case f.in[1] == 'O': // SS3, as F1-F4 (and arrows in some modes) send: x/term knows CSI only
				if k := f.in[2]; strings.IndexByte("ABCDHF", k) >= 0 {
					f.out = append(f.out, 0x1b, '[', k)
				}
				f.in = f.in[3:]
			default: // another key's sequence: x/term parses it
				f.out = append(f.out, 0x1b)
				f.in = f.in[1:]
			}
			continue
		}
		switch {
		case bytes.HasPrefix(f.in, pasteEnd):
			f.out = append(f.out, pasteEnd...)
			f.in = f.in[len(pasteEnd):]
			f.paste = false
			continue
		case bytes.HasPrefix(pasteEnd, f.in) || !utf8.FullRune(f.in):
			return // wait for the rest
		}
		r, n := utf8.DecodeRune(f.in)
		rb := f.in[:n]
		f.in = f.in[n:]
		cr := f.cr
		f.cr = r == '\r'
		switch {
		case r == '\r':
			f.out = append(f.out, Newline...)
		case r == '\n':
			if !cr {
				f.out = append(f.out, Newline...)
			}
		case r == '\t':
			f.out = append(f.out, Tab...)
		case r == utf8.RuneError && n == 1:
			// not UTF-8: dropped
		case termtext.Safe(string(r)) == string(r):
			f.out = append(f.out, rb...)
		}
		// Other control characters (escape, C1, bidi overrides) are dropped: x/term would
		// write them to the terminal as the line's echo.
	}
}

// vtKeys are the VT220 forms of Home and End, which x/term does not know, and the
// final byte of the CSI form it knows.
var vtKeys = []struct {
	seq string
	key byte
}{{"\x1b[1~", 'H'}, {"\x1b[7~", 'H'}, {"\x1b[4~", 'F'}, {"\x1b[8~", 'F'}}

// vtKey returns the final byte of the CSI form of the key b starts with, or 0.
func vtKey(b []byte) byte {
	for _, k := range vtKeys {
		if bytes.HasPrefix(b, []byte(k.seq)) {
			return k.key
		}
	}
	return 0
}

// vtKeyPrefix reports whether b is a proper prefix of a VT220 Home or End key.
func vtKeyPrefix(b []byte) bool {
	for _, k := range vtKeys {
		if len(b) < len(k.seq) && strings.HasPrefix(k.seq, string(b)) {
			return true
		}
	}
	return false
}

// flush moves a partial marker or rune left at the end of input to out: outside a paste
// as it is, inside one dropped.
func (f *filter) flush() {
	if !f.paste {
		f.out = append(f.out, f.in...)
	}
	f.in = f.in[:0]
}
