package views

import (
	"bytes"
	"strings"
	"testing"
)

func TestParsePatch(t *testing.T) {
	hunks, first := ParsePatch("@@ -3,4 +3,5 @@\n a\n-b\n+c\n+d\n e\n\\ No newline at end of file\n")
	if len(hunks) != 1 || first != 4 {
		t.Fatalf("ParsePatch = %d hunks, first %d; want 1, 4", len(hunks), first)
	}
	var got []string
	for _, l := range hunks[0].Lines {
		got = append(got, l.Mark()+l.OldNo()+"/"+l.NewNo()+" "+l.Text)
	}
	want := " 3/3 a|-4/ b|+/4 c|+/5 d| 5/6 e|/  No newline at end of file"
	if strings.Join(got, "|") != want {
		t.Errorf("lines = %q, want %q", strings.Join(got, "|"), want)
	}
	if _, first := ParsePatch("@@ -1,2 +0,0 @@\n-a\n-b\n"); first != 1 {
		t.Errorf("a deletion's first line = %d, want 1", first)
	}
}

// The Changes view names its controls: Undo, Redo, each Revert by its file, each
// conflict's checkbox by its file.
func TestChangesControls(t *testing.T) {
	v := ChangesView{Scope: "This turn", Files: 1, Added: 1, UndoURL: "/u", Thread: "t1", Turn: "0", RevertURL: "/r",
		Conflicts: []ConflictView{{Host: "local", Path: "b.txt", Reason: "changed"}}, ConflictOp: "undo",
		Hosts: []HostChangesView{{Host: "local", Files: []FileChangeView{{DOMID: "f0", Path: "a.txt", Status: "added", Added: 1, Revertable: true,
			URL: "/files/a.txt?line=1#L1", Hunks: []HunkView{{Header: "@@ -0,0 +1 @@", Lines: []PatchLine{{Op: '+', New: 1, Text: "x"}}}}}}}}}
	var b bytes.Buffer
	if err := Changes(v).Render(t.Context(), &b); err != nil {
		t.Fatal(err)
	}
	html := b.String()
	if strings.Contains(html, `id="undo-turn"`) {
		t.Error("the view offers Undo beside its conflicts")
	}
	v.Conflicts = nil
	b.Reset()
	if err := Changes(v).Render(t.Context(), &b); err != nil {
		t.Fatal(err)
	}
	html += b.String()
	for _, want := range []string{`id="undo-turn"`, `>Undo this turn's changes</button>`, `aria-label="Revert a.txt"`,
		`name="overwrite" value="b.txt" checked`, `Overwrite <code>b.txt</code>`, `href="/files/a.txt?line=1#L1"`, `data-ln="1"`} {
		if !strings.Contains(html, want) {
			t.Errorf("the view lacks %s:\n%s", want, html)
		}
	}
}
