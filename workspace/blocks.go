package workspace

import (
	"fmt"
	"strings"
)

// PreludeBlock renders the # Prelude section of the system prompt: how the prelude works,
// then every entry of snap, whole.
func PreludeBlock(dir string, snap Snapshot) string {
	var b strings.Builder
	b.WriteString("# Prelude\n\n")
	fmt.Fprintf(&b, "The prelude is this profile's durable memory, shared by every agent of the profile: write-once Markdown entries in %s, rendered below in filename order. ", dir)
	b.WriteString("Make it the default home for what you learn that a later agent should know (how to build and test, conventions, pitfalls, where things are): record findings eagerly, in short self-contained entries. ")
	b.WriteString("Keep workspace files for cold material (rarely relevant, or bulky lookup-only data). ")
	b.WriteString("Edit the prelude only with the prelude tool (add, replace, remove, list), never by editing its files in place. ")
	fmt.Fprintf(&b, "Other agents edit it too: when entries change while you work, a hidden %s note tells you which; current entries supersede this copy.\n", NoteMarker)
	if len(snap.Entries) == 0 {
		b.WriteString("\nThe prelude has no entries yet.\n")
		return b.String()
	}
	b.WriteString("\n")
	b.WriteString(snap.Rendered())
	return b.String()
}
