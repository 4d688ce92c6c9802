package lineedit

import (
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"myco.dev/internal/syncbuf"
)

type result struct {
	line string
	err  error
}

func TestReadLine(t *testing.T) {
	for _, tt := range []struct {
		name    string
		history []string
		in      []string // what the terminal sends
		want    []result // one ReadLine each
	}{
		{"a line", nil, []string{"hello\r"}, []result{{"hello", nil}}},
		{"← and a key insert in the middle", nil, []string{"abc\x1b[D\x1b[DX\r"}, []result{{"aXbc", nil}}},
		{"Home and End", nil, []string{"bc\x1b[Ha\x1b[Fd\r"}, []result{{"abcd", nil}}},
		{"VT220 Home and End", nil, []string{"bc\x1b[1~a\x1b[4~d\r"}, []result{{"abcd", nil}}},
		{"an unknown key is not typed", nil, []string{"a\x1bOPb\x1b[15~c\r"}, []result{{"abc", nil}}},
		{"↑ recalls the newest entry", []string{"first", "second"}, []string{"\x1b[A\r"}, []result{{"second", nil}}},
		{"↑ ↑ ↓ walks the history", []string{"first", "second"}, []string{"\x1b[A\x1b[A\x1b[A\x1b[B\r"}, []result{{"second", nil}}},
		{"a recalled entry is edited", []string{"hello world"}, []string{"\x1b[A\x1b[D\x1b[D\x1b[D\x1b[D\x1b[DX\r"}, []result{{"hello Xworld", nil}}},
		{"↑ alone sends nothing", []string{"first"}, []string{"\x1b[A", "\x03"}, []result{{"", ErrInterrupted}}},
		{"a recalled multi-line entry", []string{"one\ntwo"}, []string{"\x1b[A\r"}, []result{{"one\ntwo", nil}}},
		{"a bracketed paste is one line", nil, []string{"\x1b[200~line one\rline two\x1b[201~\r"}, []result{{"line one\nline two", nil}}},
		{"a pasted tab shows as one column and is given back", nil, []string{"\x1b[200~\tx := 1\x1b[201~\r"}, []result{{"\tx := 1", nil}}},
		{"text typed after a paste", nil, []string{"see: \x1b[200~a\r\nb\x1b[201~ ok\r"}, []result{{"see: a\nb ok", nil}}},
		{"Ctrl-C drops the line, the next read starts afresh", nil, []string{"abc\x03", "def\r"},
			[]result{{"", ErrInterrupted}, {"def", nil}}},
		{"Ctrl-D on an empty line", nil, []string{"\x04", "again\r"}, []result{{"", io.EOF}, {"again", nil}}},
		{"Ctrl-D on a line deletes the character under the cursor", nil, []string{"ab\x1b[D\x04\r"}, []result{{"a", nil}}},
		{"the end of input", nil, []string{"part"}, []result{{"", io.EOF}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var h *History
			if tt.history != nil {
				var err error
				h, err = OpenHistory(filepath.Join(t.TempDir(), "h"), 10)
				if err != nil {
					t.Fatal(err)
				}
				for _, e := range tt.history {
					if err := h.Append(e); err != nil {
						t.Fatal(err)
					}
				}
			}
			in := chunks(tt.in)
			var out syncbuf.Buffer
			e := newEditor(&in, &out, h)
			for i, want := range tt.want {
				line, err := e.ReadLine("> ")
				if line != want.line || !errors.Is(err, want.err) {
					t.Fatalf("ReadLine #%d = %q, %v, want %q, %v", i+1, line, err, want.line, want.err)
				}
			}
			if strings.Contains(out.String(), "\x1b]") {
				t.Errorf("the echo carries an OSC sequence: %q", out.String())
			}
		})
	}
}

func TestReadLineEchoesPasteMode(t *testing.T) {
	in := chunks{"x\r"}
	var out syncbuf.Buffer
	e := newEditor(&in, &out, nil)
	if _, err := e.ReadLine("> "); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	if !strings.HasPrefix(got, "\x1b[?2004h") || !strings.HasSuffix(got, "\x1b[?2004l") || !strings.Contains(got, "> x") {
		t.Errorf("output = %q, want bracketed paste on, the prompt and the echo, bracketed paste off", got)
	}
}

func TestClosedEditor(t *testing.T) {
	in := chunks{"x\r"}
	e := newEditor(&in, io.Discard, nil)
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := e.ReadLine("> "); !errors.Is(err, ErrClosed) {
		t.Errorf("ReadLine after Close = %v, want ErrClosed", err)
	}
}

// TestWriteAbovePrompt writes while a line is being read: the text comes first, then the
// prompt and the line typed so far are drawn again.
func TestWriteAbovePrompt(t *testing.T) {
	pr, pw := io.Pipe()
	var out syncbuf.Buffer
	e := newEditor(pr, &out, nil)
	done := make(chan result)
	go func() {
		line, err := e.ReadLine("> ")
		done <- result{line, err}
	}()
	pw.Write([]byte("ab"))
	// A pipe's write returns once the editor has read it, and the editor reads again only
	// after it echoed what it read.
	pw.Write(nil)
	if !strings.Contains(out.String(), "> ab") {
		t.Fatalf("output = %q, want the echo of ab", out.String())
	}
	e.Write([]byte("note\n"))
	pw.Write([]byte("c\r"))
	r := <-done
	if r.line != "abc" || r.err != nil {
		t.Fatalf("ReadLine = %q, %v, want abc", r.line, r.err)
	}
	got := out.String()
	if i, j := strings.Index(got, "note\r\n"), strings.LastIndex(got, "> ab"); i < 0 || j < i {
		t.Errorf("output = %q, want the note, then the prompt and line again", got)
	}
}
