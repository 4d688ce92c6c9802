package sessions

import (
	"strconv"
	"strings"

	"myco.dev/agent/model"
)

// Outcome is how a finished tool call ended, in the words every front end shows: the
// browser's tool card and the terminal's line say the same.
type Outcome struct {
	// Status is "ok", "error" or "unknown".
	Status string
	// Words say how the call ended where Status alone does not: "exit 1", "killed",
	// "timed out", "stopped"; "" when Status says it.
	Words string
	// Output is the result's text to show: for a call stopped while it ran, what it
	// printed until then.
	Output string
}

// ToolOutcome reads how the call of tool that returned r ended. A bash command that exited
// with another status than 0, or was killed, failed, whatever the tool's error flag says.
// A call stopped while it ran is unknown, in the words "stopped", and shows what it
// printed before the stop.
func ToolOutcome(tool string, r model.ToolResult) Outcome {
	o := Outcome{Output: r.Text}
	switch {
	case r.Stopped:
		o.Status, o.Words = "unknown", "stopped"
		o.Output = PrintedBeforeStop(r.Text)
	case r.Unknown:
		o.Status = "unknown"
	case r.IsError:
		o.Status = "error"
	default:
		o.Status = "ok"
	}
	if tool == "bash" && !r.Unknown {
		if end, failed := bashEnd(o.Output); end != "" {
			o.Words = end
			if failed {
				o.Status = "error"
			}
		}
	}
	return o
}

// bashEnd reads how a bash call ended from the last line of its result ("[exit status 1]",
// "[killed by signal killed]", "[killed after timeout 120s]", a session's "[session b1:
// exited, exit status 2]"): a short phrase, and whether it failed.
func bashEnd(text string) (end string, failed bool) {
	last := BashEndLine(text)
	if last == "" {
		return "", false
	}
	last = last[1 : len(last)-1]
	if _, rest, ok := strings.Cut(last, "exited, "); ok && strings.HasPrefix(last, "session ") {
		last = rest
	}
	switch {
	case strings.HasPrefix(last, "exit status "):
		code := strings.TrimPrefix(last, "exit status ")
		return "exit " + code, code != "0"
	case strings.HasPrefix(last, "killed after timeout"):
		return "timed out", true
	case strings.HasPrefix(last, "killed"):
		return "killed", true
	}
	return "", false
}

// BashEndLine returns the last line of a bash call's result when it is the bracketed
// line that says how the call ended ("[exit status 1]", "[session b1: running]"), else "".
// A terminal leaves it out of the output it shows, since its own line says it.
func BashEndLine(text string) string {
	text = strings.TrimRight(text, "\n")
	last := text[strings.LastIndexByte(text, '\n')+1:]
	if !strings.HasPrefix(last, "[") || !strings.HasSuffix(last, "]") {
		return ""
	}
	return last
}

// BashExitCode returns the exit status of a bash command whose result r says it exited
// ("[exit status 3]", or a session's "exited, exit status 3"); false for any other call,
// a command killed or still running, or an unknown outcome.
func BashExitCode(tool string, r model.ToolResult) (int, bool) {
	if tool != "bash" || r.Unknown {
		return 0, false
	}
	end, _ := bashEnd(r.Text)
	n, err := strconv.Atoi(strings.TrimPrefix(end, "exit "))
	if !strings.HasPrefix(end, "exit ") || err != nil {
		return 0, false
	}
	return n, true
}
