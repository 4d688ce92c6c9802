package workspace

import (
	"fmt"
	"strings"
	"sync"
)

// NoteMarker starts every prelude change note.
const NoteMarker = "[myco: Prelude changes]"

// Watcher tells a running agent about prelude edits made after its system prompt was built,
// by this agent or any other process. Before each model step the caller asks [Watcher.Step]
// for a note; the note goes, hidden, onto the latest user input or tool result, so the
// system prompt itself never changes and its cached prefix stays reusable. It is safe for
// concurrent use.
type Watcher struct {
	dir string

	mu       sync.Mutex // guards the fields below
	scanner  Scanner
	prompt   Snapshot // what the system prompt carries
	known    Snapshot // what the model has been told: the prompt plus the notes it received
	thread   string   // the thread the notes went to
	notified bool     // known differs from prompt: the model depends on notes
}

// NewWatcher returns a watcher of the prelude in dir that reads no entry larger than
// [DefaultEntryLimit]; [Prelude.Watcher] bounds entries by max_prelude_bytes instead. Call
// [Watcher.Prompt] to build the system prompt before the first step.
func NewWatcher(dir string) *Watcher { return &Watcher{dir: dir} }

// Prompt scans the prelude for a new system prompt (session start, model switch, worker
// spawn) and makes that snapshot the baseline later notes are relative to.
func (w *Watcher) Prompt() (Snapshot, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	snap, err := w.scanner.Scan(w.dir)
	if err != nil {
		return Snapshot{}, err
	}
	w.prompt, w.known, w.notified = snap, snap, false
	return snap, nil
}

// Reads returns how many prelude files the watcher has read, for tests and benchmarks.
func (w *Watcher) Reads() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.scanner.Reads
}

// Step rescans the prelude before a model request on thread and returns the note to add
// to that request's last message, or "" when there is nothing to say. inContext reports
// whether the history the request carries still holds an earlier note (a compaction or a
// rewind drops them). When the notes the model relied on are gone, or it moved to another
// thread, the note asks it to reload the full live prelude. A failed scan returns the error
// and keeps the last snapshot; the next step tries again.
func (w *Watcher) Step(thread string, inContext bool) (string, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	live, err := w.scanner.Scan(w.dir)
	if err != nil {
		return "", err
	}
	moved := w.thread != "" && thread != w.thread
	w.thread = thread
	if w.notified && (moved || !inContext) {
		w.known = live
		c := w.prompt.Diff(live)
		if c.Empty() {
			w.notified = false
			return "", nil
		}
		return w.reloadNote(c), nil
	}
	c := w.known.Diff(live)
	if c.Empty() {
		return "", nil
	}
	w.known = live
	w.notified = !w.prompt.Diff(live).Empty()
	return w.changeNote(c), nil
}

func (w *Watcher) changeNote(c Changes) string {
	var b strings.Builder
	b.WriteString(NoteMarker)
	b.WriteString(" The prelude changed since your system prompt was built (edits by you or by another agent of this profile).")
	writeLists(&b, c)
	fmt.Fprintf(&b, " Current entries supersede the prompt's copy and removed entries no longer apply; read the changed ones with the prelude tool (action list) or from %s.", w.dir)
	return b.String()
}

func (w *Watcher) reloadNote(c Changes) string {
	var b strings.Builder
	b.WriteString(NoteMarker)
	b.WriteString(" Earlier notes about prelude changes are no longer in this context (after a compaction, a rewind or a move to another thread), so the prelude in your system prompt is out of date. Reload the full live prelude now with the prelude tool (action list). Changes since your system prompt was built:")
	writeLists(&b, c)
	fmt.Fprintf(&b, " The entries live in %s.", w.dir)
	return b.String()
}

func writeLists(b *strings.Builder, c Changes) {
	for _, l := range []struct {
		label string
		names []string
	}{{"Added", c.Added}, {"Modified", c.Modified}, {"Removed", c.Removed}} {
		if len(l.names) > 0 {
			quoted := make([]string, len(l.names))
			for i, n := range l.names {
				quoted[i] = oneLine(n)
			}
			fmt.Fprintf(b, " %s: %s.", l.label, strings.Join(quoted, ", "))
		}
	}
}
