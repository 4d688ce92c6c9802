package views

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/a-h/templ"
)

func joinComma(s []string) string { return strings.Join(s, ", ") }

// ariaCurrent marks, when on, the link to what the page shows: "page" for the page itself,
// "true" for the section or profile it belongs to. (A bare aria-current is the empty
// value, which assistive technology reads as false.)
func ariaCurrent(value string, on bool) templ.Attributes {
	if !on {
		return nil
	}
	return templ.Attributes{"aria-current": value}
}

func statusText(code int) string {
	if t := http.StatusText(code); t != "" {
		return t
	}
	return "Error " + strconv.Itoa(code)
}

// queryPart is "&q=…" for a non-empty search, so filter links keep it.
func queryPart(q string) string {
	if q == "" {
		return ""
	}
	return "&q=" + url.QueryEscape(q)
}

// archiveAction is the action path relative to a session's URL (which ends with a slash).
func archiveAction(archived bool) string {
	if archived {
		return "restore"
	}
	return "archive"
}

// toolStatus is the words of a card's status: how the call ended, where it was told.
func toolStatus(t ToolView) string {
	if t.StatusText != "" && t.Status != "running" {
		return t.StatusText
	}
	return statusLabel(t.Status)
}

func statusLabel(s string) string {
	switch s {
	case "running":
		return "running…"
	case "waiting":
		return "waits for your approval"
	case "unknown":
		return "outcome unknown"
	}
	return s
}

func diffClass(op byte) string {
	switch op {
	case '+':
		return "add"
	case '-':
		return "del"
	}
	return "ctx"
}

// queuedLabel says when the i-th queued message runs.
func queuedLabel(i int) string {
	if i == 0 {
		return "Next:"
	}
	return "Then:"
}

// exact reports whether s shows as it is (see [shown]): a value a form sends back must be
// sent exactly, so one that is not left out rather than sent altered.
func exact(s string) bool { return shown(s) == s }

// cwdPart is the directory filter of a sessions page's link, if any.
func cwdPart(dir string) string {
	if dir == "" {
		return ""
	}
	return "&cwd=" + url.QueryEscape(dir)
}

// PageTitle is the document's title of a page titled title.
func PageTitle(title string) string { return title + " · myco" }

// noteSuffix is note after a separator, or "" for none.
func noteSuffix(note string) string {
	if note == "" {
		return ""
	}
	return " (" + note + ")"
}

// mainID is the id of the main content of a page with chrome c.
func mainID(c Chrome) string {
	if c.Main == "" {
		return "main"
	}
	return c.Main
}

// StateLabel is how a session's state reads: "working", "needs you", "done", "failed".
func StateLabel(state string) string {
	switch state {
	case "needs_you":
		return "needs you"
	case "working", "done", "failed":
		return state
	}
	return ""
}

// stateClass is state as a CSS class: one of the four, else none.
func stateClass(state string) string {
	if StateLabel(state) == "" {
		return ""
	}
	return state
}

// TitlePrefix is what a tab's title starts with for a session in state: it says when the
// session needs you or failed, so that a tab among many says so.
func TitlePrefix(state string) string {
	switch state {
	case "needs_you":
		return "(needs you) "
	case "failed":
		return "(failed) "
	}
	return ""
}

// turnsLabel is "1 turn", "12 turns".
func turnsLabel(n int) string {
	if n == 1 {
		return "1 turn"
	}
	return strconv.Itoa(n) + " turns"
}

// sessionsLabel is "1 session", "12 sessions".
func sessionsLabel(n int) string {
	if n == 1 {
		return "1 session"
	}
	return strconv.Itoa(n) + " sessions"
}

// orUntitledRow is a row's title, or "Untitled session".
func orUntitledRow(r SessionRow) string {
	if r.Title == "" {
		return "Untitled session"
	}
	return shown(r.Title)
}
