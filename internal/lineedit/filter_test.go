package lineedit

import (
	"errors"
	"io"
	"testing"
)

// chunks is a reader that returns one chunk per Read, then io.EOF.
type chunks []string

func (c *chunks) Read(p []byte) (int, error) {
	if len(*c) == 0 {
		return 0, io.EOF
	}
	n := copy(p, (*c)[0])
	if n < len((*c)[0]) {
		(*c)[0] = (*c)[0][n:]
	} else {
		*c = (*c)[1:]
	}
	return n, nil
}

// readAll reads f to the end, returning each delivery.
func readAll(t *testing.T, f *filter) []string {
	t.Helper()
	var got []string
	buf := make([]byte, 64)
	for range 1000 {
		n, err := f.Read(buf)
		if n > 0 {
			got = append(got, string(buf[:n]))
		}
		if errors.Is(err, io.EOF) {
			return got
		}
		if err != nil {
			t.Fatalf("Read: %v", err)
		}
	}
	t.Fatal("the filter never reached the end")
	return nil
}

func TestFilter(t *testing.T) {
	for _, tt := range []struct {
		name string
		in   []string
		want []string // the deliveries
	}{
		{"typed text passes", []string{"abc\r"}, []string{"abc\r"}},
		{"keys pass", []string{"a\x1b[D\x1b[Hb\x1b[A"}, []string{"a\x1b[D\x1b[Hb\x1b[A"}},
		{"SS3 keys become CSI ones or go", []string{"a\x1bOD\x1bOPb\x1bO", "Hc"}, []string{"a\x1b[Db", "\x1b[Hc"}},
		{"VT220 Home and End become CSI ones", []string{"a\x1b[1~b\x1b[4", "~\x1b[7~\x1b[8~\x1b[1;3C"}, []string{"a\x1b[Hb", "\x1b[F\x1b[H\x1b[F\x1b[1;3C"}},
		{"a delivery ends after Ctrl-C", []string{"ab\x03cd\x04ef"}, []string{"ab\x03", "cd\x04", "ef"}},
		{"a pasted line break is kept on the line", []string{"\x1b[200~one\rtwo\r\nthree\nfour\x1b[201~\r"},
			[]string{"\x1b[200~one␤two␤three␤four\x1b[201~\r"}},
		{"markers cut between reads", []string{"\x1b[2", "00~a\r", "\nb\x1b[20", "1~\r"},
			[]string{"\x1b[200~a␤", "b", "\x1b[201~\r"}},
		{"a paste's controls are dropped, tabs kept", []string{"\x1b[200~a\x1b]0;pwned\x07b\tc\x03\x7f\u009b\u202ed\x1b[201~"},
			[]string{"\x1b[200~a]0;pwnedb⇥cd\x1b[201~"}},
		{"a rune cut between reads", []string{"\x1b[200~\xc3", "\xa9\x1b[201~"}, []string{"\x1b[200~", "é\x1b[201~"}},
		{"invalid UTF-8 in a paste is dropped", []string{"\x1b[200~a\xffb\x1b[201~"}, []string{"\x1b[200~ab\x1b[201~"}},
		{"a partial marker at the end of input", []string{"a\x1b[20"}, []string{"a", "\x1b[20"}},
		{"an unended paste's partial rune is dropped", []string{"\x1b[200~a\xc3"}, []string{"\x1b[200~a"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			in := chunks(tt.in)
			got := readAll(t, &filter{r: &in})
			if len(got) != len(tt.want) {
				t.Fatalf("deliveries = %q, want %q", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Fatalf("deliveries = %q, want %q", got, tt.want)
				}
			}
		})
	}
}

func TestFilterInterrupted(t *testing.T) {
	in := chunks{"ab\x03", "c\x04"}
	f := &filter{r: &in}
	buf := make([]byte, 64)
	f.Read(buf)
	if !f.interrupted() {
		t.Errorf("after %q: interrupted() = false, want true", "ab\x03")
	}
	f.Read(buf)
	if f.interrupted() {
		t.Errorf("after %q: interrupted() = true, want false", "c\x04")
	}
}
