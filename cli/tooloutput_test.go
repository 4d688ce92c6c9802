package cli

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"myco.dev/internal/termtext"
	"myco.dev/sessions"
)

// stoppedText is the text of a call stopped while it ran that printed printed (see
// sessions.PrintedBeforeStop).
func stoppedText(printed string) string {
	return "the call was cancelled while running; it may have taken effect, so inspect its effects before retrying. Its output until then:\n" + printed
}

// TestPrinterToolOutput: a running call's output shows as its progress updates bring it,
// the lines new since the last one, bounded, safe and cut to the terminal; when the call
// ends, the rest, and for a stopped call what it printed before the stop.
func TestPrinterToolOutput(t *testing.T) {
	progress := func(id, text string) sessions.Update {
		return sessions.Update{Type: sessions.UpdateToolProgress, CallID: id, Text: text}
	}
	finished := func(id, tool, text string) sessions.Update {
		return sessions.Update{Type: sessions.UpdateToolFinished, CallID: id, Tool: tool, Text: text, Duration: 0.25}
	}
	var many strings.Builder
	for i := range 25 {
		fmt.Fprintf(&many, "line %d\n", i+1)
	}
	long := strings.Repeat("x", 100) + "\n" // a window of 2 KiB that slides
	window := strings.Repeat(long, 20) + "0123456789\n"
	slid := window[300:] + "after the slide\n"
	for _, tt := range []struct {
		name    string
		updates []sessions.Update
		want    string
	}{
		{"lines as they come, the rest at the end", []sessions.Update{
			progress("c1", "one\n"),
			progress("c1", "one\ntwo\nthr"),
			finished("c1", "bash", "one\ntwo\nthree\n[exit status 1]\n"),
		}, "  │ one\n  │ two\n  │ three\n← bash exit 1 (250 ms)\n"},
		{"a call that ended before its first update", []sessions.Update{
			finished("c1", "bash", "hi\nthere\n[exit status 0]\n"),
		}, "  │ hi\n  │ there\n← bash exit 0 (250 ms)\n"},
		{"a call that printed nothing", []sessions.Update{
			finished("c1", "bash", "[exit status 0]\n"),
		}, "← bash exit 0 (250 ms)\n"},
		{"the window slid", []sessions.Update{
			progress("c1", window),
			progress("c1", slid),
		}, "  │ … 11 lines left out\n" + strings.Repeat("  │ "+strings.Repeat("x", 100)+"\n", 9) + "  │ 0123456789\n  │ after the slide\n"},
		{"output between two updates is not known", []sessions.Update{
			progress("c1", "aaa\n"),
			progress("c1", "zzz\n"),
		}, "  │ aaa\n  │ … earlier output left out\n  │ zzz\n"},
		{"at most ten lines at once", []sessions.Update{
			progress("c1", many.String()),
		}, "  │ … 15 lines left out\n" + strings.ReplaceAll(strings.TrimSuffix(strings.SplitAfterN(many.String(), "\n", 16)[15], "\n"), "line", "  │ line") + "\n"},
		{"stopped: what it printed before the stop", []sessions.Update{
			progress("c1", "one\n"),
			{Type: sessions.UpdateToolFinished, CallID: "c1", Tool: "bash", Unknown: true, Stopped: true, Duration: 1.25,
				Text: stoppedText("one\ntwo\n[killed: the call was cancelled]\n")},
		}, "  │ one\n  │ two\n← bash stopped (1.2 s)\n"},
		{"stopped before it printed", []sessions.Update{
			{Type: sessions.UpdateToolFinished, CallID: "c1", Tool: "bash", Unknown: true, Stopped: true, Text: stoppedText("")},
		}, "← bash stopped (0 ms)\n"},
		{"escapes, carriage returns and tabs", []sessions.Update{
			progress("c1", "\x1b]0;pwned\x07 ok\r\nprogress 10%\rprogress 100%\n\tindented\n"),
		}, "  │ \\x1b]0;pwned\\x07 ok\n  │ progress 100%\n  │         indented\n"},
		{"a line longer than the terminal", []sessions.Update{
			progress("c1", strings.Repeat("y", 300)+"\n"),
		}, "  │ " + strings.Repeat("y", 114) + "…\n"},
		{"another tool's output is not shown", []sessions.Update{
			finished("c1", "str_replace_based_edit_tool", "the whole file"),
		}, "← str_replace_based_edit_tool ok (250 ms)\n"},
		{"two calls at once", []sessions.Update{
			progress("a", "from a\n"),
			progress("b", "from b\n"),
			progress("a", "from a\nagain a\n"),
			finished("b", "bash", "from b\n[exit status 0]\n"),
			finished("a", "bash", "from a\nagain a\n[exit status 0]\n"),
		}, "  │ from a\n  │ from b\n  │ again a\n← bash exit 0 (250 ms)\n← bash exit 0 (250 ms)\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var stderr bytes.Buffer
			p := newPrinter(&bytes.Buffer{}, &stderr, false)
			p.output = true
			for _, u := range tt.updates {
				p.update(u)
			}
			if got := stderr.String(); got != tt.want {
				t.Errorf("stderr =\n%s\nwant\n%s", got, tt.want)
			}
			for _, l := range strings.Split(stderr.String(), "\n") {
				if w := termtext.Width(l); w >= 120 {
					t.Errorf("a line of %d columns, wider than the terminal's 120 less one: %q", w, l)
				}
			}
		})
	}
}

// TestPrinterToolOutputOff: myco -p with stderr not a terminal keeps its short lines.
func TestPrinterToolOutputOff(t *testing.T) {
	var stderr bytes.Buffer
	p := newPrinter(&bytes.Buffer{}, &stderr, false)
	p.update(sessions.Update{Type: sessions.UpdateToolProgress, CallID: "c1", Text: "one\n"})
	p.update(sessions.Update{Type: sessions.UpdateToolFinished, CallID: "c1", Tool: "bash", Text: "one\n[exit status 0]\n"})
	if got, want := stderr.String(), "← bash exit 0 (0 ms)\n"; got != want {
		t.Errorf("stderr = %q, want %q", got, want)
	}
}

func TestNewOutput(t *testing.T) {
	for _, tt := range []struct {
		prev, cur, fresh string
		gap              bool
	}{
		{"", "abc", "abc", false},
		{"ab", "abcd", "cd", false},
		{"abcdef", "cdefgh", "gh", false},
		{"abcdef", "xyz", "xyz", true},
		{"a\na\na\n", "a\na\na\n", "", false}, // the same: nothing new is known
		{"a\na\na\n", "a\na\nb\n", "b\n", false},
	} {
		fresh, gap := newOutput(tt.prev, tt.cur)
		if fresh != tt.fresh || gap != tt.gap {
			t.Errorf("newOutput(%q, %q) = %q, %v; want %q, %v", tt.prev, tt.cur, fresh, gap, tt.fresh, tt.gap)
		}
	}
}

// TestPartialBounded: a line that never ends (a progress bar) is held to its last redraw
// and to maxPartial bytes.
func TestPartialBounded(t *testing.T) {
	var stderr bytes.Buffer
	p := newPrinter(&bytes.Buffer{}, &stderr, false)
	p.output = true
	text := ""
	for i := range 200 {
		text += fmt.Sprintf("\r%3d%% %s", i/2, strings.Repeat("#", i))
		if len(text) > 2048 {
			text = text[len(text)-2048:]
		}
		p.update(sessions.Update{Type: sessions.UpdateToolProgress, CallID: "c1", Text: text})
		if n := len(p.calls["c1"].partial); n > maxPartial {
			t.Fatalf("the unfinished line holds %d bytes, more than %d", n, maxPartial)
		}
	}
	p.update(sessions.Update{Type: sessions.UpdateToolProgress, CallID: "c1", Text: text + "\ndone\n"})
	if got := stderr.String(); !strings.HasPrefix(got, "  │  99% ###") || !strings.HasSuffix(got, "…\n  │ done\n") || strings.Count(got, "\n") != 2 {
		t.Errorf("stderr = %q, want the bar's last redraw, cut, then done", got)
	}
}

// TestPrinterToolOutputForgotten: a turn that ends without a call's end (it failed) does
// not leave the call followed.
func TestPrinterToolOutputForgotten(t *testing.T) {
	p := newPrinter(&bytes.Buffer{}, &bytes.Buffer{}, false)
	p.output = true
	p.update(sessions.Update{Type: sessions.UpdateToolProgress, CallID: "c1", Text: "one\n"})
	if len(p.calls) != 1 {
		t.Fatalf("calls followed = %d, want 1", len(p.calls))
	}
	p.update(sessions.Update{Type: sessions.UpdateError, Error: "the host dropped"})
	if len(p.calls) != 0 {
		t.Errorf("after the turn's end %d calls are followed, want none", len(p.calls))
	}
}
