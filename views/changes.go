package views

import (
	"html"
	"strconv"
	"strings"

	"github.com/alecthomas/chroma/v2"

	"myco.dev/views/lexers"
)

// ChangesPageView is the Changes page: what a turn, or the whole session, changed.
type ChangesPageView struct {
	Chrome
	Title   string // the session's
	BackURL string // the session page
	// SessionURL and TurnURLs switch the scope: the whole session, and each turn.
	SessionURL string
	Turns      []TurnLinkView
	Panel      ChangesView
	// EventsURL is the session's stream, which a turn's page follows (FollowID is where
	// its partials reload the view); "" for the whole session's page.
	EventsURL string
	FollowID  string
}

// ChangesFollowID is the id of the element a turn's Changes page is reloaded through.
func ChangesFollowID(thread string, turn int) string {
	return "changes-follow-" + thread + "-" + strconv.Itoa(turn)
}

// TurnLinkView links one turn's changes.
type TurnLinkView struct {
	Label   string
	URL     string
	Current bool
}

// ChangesView is the changes of one scope (a turn, or the session): its files, host by
// host, and the controls that take them back.
type ChangesView struct {
	Scope   string // "turn 3" or "the whole session"
	Running bool   // the turn runs: the view follows it
	Undone  bool
	Files   int
	Added   int
	Deleted int
	Hosts   []HostChangesView
	// UndoURL, when set, takes the turn's changes away (RedoURL puts them back); Thread and
	// Turn are the form's fields.
	UndoURL, RedoURL string
	Thread           string
	Turn             string
	// RevertURL reverts one file (form fields host, path, thread, turn, overwrite).
	RevertURL string
	// Conflicts are the files an undo, redo or revert left alone because they changed
	// since the turn: each may be overwritten. ConflictOp is the operation to do again.
	Conflicts  []ConflictView
	ConflictOp string
	// Done says what the last undo, redo or revert did.
	Done string
	// RefreshURL is where the view of a turn reloads itself from.
	RefreshURL string
}

// ConflictView is a file left alone.
type ConflictView struct {
	Host, Path string
	Reason     string
}

// HostChangesView is what changed on one host.
type HostChangesView struct {
	Host  string
	Dir   string
	Error string
	Files []FileChangeView
	Cut   bool
}

// FileChangeView is one changed file: its status, counts and diff.
type FileChangeView struct {
	DOMID   string
	Path    string
	OldPath string
	Status  string // added, modified, deleted, renamed
	Added   int
	Deleted int
	Binary  bool
	// Note says in words what the diff cannot show: a binary file's sizes, a symlink, a
	// file too large to store, a file the .gitignore files hid on one side, a mode change.
	Note string
	// URL is the file page, at the first changed line; "" for a deleted file.
	URL   string
	Hunks []HunkView
	// Cut says the diff shown is not all of it; AllURL shows all of it.
	Cut    bool
	AllURL string
	// Revertable: the file can be reverted from here (a turn, or the session).
	Revertable bool
}

// HunkView is one hunk of a unified diff.
type HunkView struct {
	Header string
	Lines  []PatchLine
}

// PatchLine is one line of a hunk with its numbers on the old and the new side (0 for
// none).
type PatchLine struct {
	Op       byte // ' ', '+', '-', '\\'
	Old, New int
	Text     string
	// HTML is Text coloured by its language ([HighlightPatch]); nil shows Text plain.
	HTML *MarkdownHTML
}

// OldNo and NewNo are the line numbers as shown ("" for none).
func (l PatchLine) OldNo() string { return lineNo(l.Old) }
func (l PatchLine) NewNo() string { return lineNo(l.New) }

func lineNo(n int) string {
	if n == 0 {
		return ""
	}
	return strconv.Itoa(n)
}

// Class is the line's CSS class.
func (l PatchLine) Class() string {
	switch l.Op {
	case '+':
		return "add"
	case '-':
		return "del"
	case '\\':
		return "meta"
	}
	return "ctx"
}

// Mark is the line's sign, as a unified diff writes it.
func (l PatchLine) Mark() string {
	if l.Op == '\\' {
		return ""
	}
	return string(l.Op)
}

// ParsePatch splits a unified diff's hunks (from the first "@@" line) into lines with
// their numbers; it returns the hunks and the first line changed on the new side (the
// old side's for a deletion), 0 for none.
func ParsePatch(patch string) ([]HunkView, int) {
	var hunks []HunkView
	first := 0
	var old, new int
	for line := range strings.SplitSeq(strings.TrimSuffix(patch, "\n"), "\n") {
		if strings.HasPrefix(line, "@@") {
			old, new = hunkStart(line)
			hunks = append(hunks, HunkView{Header: line})
			continue
		}
		if len(hunks) == 0 {
			continue
		}
		h := &hunks[len(hunks)-1]
		op, text := byte(' '), line
		if line != "" {
			op, text = line[0], line[1:]
		}
		pl := PatchLine{Op: op, Text: text}
		switch op {
		case '+':
			pl.New = new
			if first == 0 {
				first = new
			}
			new++
		case '-':
			pl.Old = old
			if first == 0 {
				first = max(new, 1)
			}
			old++
		case '\\':
		default:
			pl.Op, pl.Old, pl.New = ' ', old, new
			old++
			new++
		}
		h.Lines = append(h.Lines, pl)
	}
	return hunks, first
}

// hunkStart reads "@@ -a,b +c,d @@" into a and c.
func hunkStart(h string) (old, new int) {
	f := strings.Fields(h)
	if len(f) < 3 {
		return 1, 1
	}
	num := func(s string) int {
		s, _, _ = strings.Cut(s[1:], ",")
		n, _ := strconv.Atoi(s)
		return n
	}
	old, new = num(f[1]), num(f[2])
	if old == 0 {
		old = 1
	}
	if new == 0 {
		new = 1
	}
	return old, new
}

// TurnChangesView is a turn's changes in its message on the session page: how many files,
// with a link to them; the page's stream replaces it as the turn runs.
type TurnChangesView struct {
	DOMID string
	URL   string
	// SummaryURL is where the counts come from: the slot loads them, and loads them again
	// when the stream replaces it.
	SummaryURL string
	Files      int
	Added      int
	Deleted    int
	Undone     bool
}

// TurnChangesID is the DOM id of the changes line of the turn at entry turn of thread.
func TurnChangesID(thread string, turn int) string {
	return "changes-" + thread + "-" + strconv.Itoa(turn)
}

// Summary says the counts in words.
func (v TurnChangesView) Summary() string {
	s := strconv.Itoa(v.Files) + " file"
	if v.Files != 1 {
		s += "s"
	}
	s += " changed"
	if v.Undone {
		s += " (undone)"
	}
	return s
}

func signed(sign string, n int) string { return sign + strconv.Itoa(n) }

// HighlightPatch colours the lines of hunks by the language name's extension says, as the
// file page does: each side (the old lines with the context, the new ones with it) is
// tokenised as one text, so that a construct over several lines keeps its colour. A
// language that is not known, or a diff over the highlighting limit, stays plain.
func HighlightPatch(name string, hunks []HunkView) {
	lexer := lexers.ForFile(name)
	if lexer == nil {
		return
	}
	var oldRefs, newRefs []*PatchLine
	var oldText, newText []string
	size := 0
	for h := range hunks {
		for i := range hunks[h].Lines {
			l := &hunks[h].Lines[i]
			size += len(l.Text)
			switch l.Op {
			case '-':
				oldRefs, oldText = append(oldRefs, l), append(oldText, l.Text)
			case '+', ' ':
				newRefs, newText = append(newRefs, l), append(newText, l.Text)
			}
		}
	}
	if size > maxHighlightBytes {
		return
	}
	for _, side := range []struct {
		refs []*PatchLine
		text []string
	}{{oldRefs, oldText}, {newRefs, newText}} {
		if len(side.refs) == 0 {
			continue
		}
		lines, ok := highlightEach(lexer, side.text)
		if !ok {
			continue
		}
		for i, l := range side.refs {
			l.HTML = &MarkdownHTML{shown(lines[i])}
		}
	}
}

// highlightEach returns the HTML of each of lines, tokenised together; ok is false when
// chroma fails.
func highlightEach(lexer chroma.Lexer, lines []string) (out []string, ok bool) {
	defer func() {
		if recover() != nil { // chroma's iterators report errors by panicking
			out, ok = nil, false
		}
	}()
	it, err := chroma.Coalesce(lexer).Tokenise(nil, strings.Join(lines, "\n")+"\n")
	if err != nil {
		return nil, false
	}
	out = make([]string, len(lines))
	var cur strings.Builder
	i := 0
	for tok := it(); tok != chroma.EOF && i < len(lines); tok = it() {
		cls := chroma.StandardTypes[tok.Type]
		for j, part := range strings.Split(tok.Value, "\n") {
			if j > 0 {
				out[i] = cur.String()
				cur.Reset()
				if i++; i == len(lines) {
					break
				}
			}
			if part == "" {
				continue
			}
			if cls != "" {
				cur.WriteString(`<span class="` + classPrefix + cls + `">` + html.EscapeString(part) + `</span>`)
			} else {
				cur.WriteString(html.EscapeString(part))
			}
		}
	}
	if i < len(lines) {
		out[i] = cur.String()
	}
	return out, true
}
