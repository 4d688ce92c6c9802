package tools

import (
	"path/filepath"
	"testing"
)

// TestInventoryAndRelease: Inventory lists the owner's resources in the tools that keep any
// (the editor's stamps here, not view_image's), and Release ends them.
func TestInventoryAndRelease(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.txt")
	writeFile(t, path, "one\n")
	e := NewEditor(EditorOptions{})
	ts := []Tool{e, NewImage(ImageOptions{MaxBase64Bytes: 100})}
	if res := e.Call(t.Context(), "o1", []byte(`{"command":"view","path":"`+path+`"}`)); res.IsError {
		t.Fatalf("view: %s", res.Text)
	}
	inv := Inventory(ts, "o1")
	if len(inv.Bash) != 0 || len(inv.Editor) != 1 || inv.Editor[0].Path != path {
		t.Fatalf("Inventory = %+v, want the editor's stamp of %s only", inv, path)
	}
	Release(ts, "o1")
	if stamps := Inventory(ts, "o1").Editor; len(stamps) != 0 {
		t.Errorf("Inventory after Release = %+v, want no stamps", stamps)
	}
}
