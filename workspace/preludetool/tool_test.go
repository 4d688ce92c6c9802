package preludetool

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"myco.dev/workspace"
)

func TestTool(t *testing.T) {
	dir := t.TempDir()
	tool := New(&workspace.Prelude{Dir: dir, Max: 400})
	call := func(input string) (string, bool) {
		t.Helper()
		res := tool.Call(t.Context(), "owner", json.RawMessage(input))
		return res.Text, res.IsError
	}
	text, isErr := call(`{"action":"add","content":"Build with make.","label":"build"}`)
	name := regexp.MustCompile(`added entry (\S+\.md)`).FindStringSubmatch(text)
	if isErr || name == nil || !strings.Contains(text, "[prelude: 1 entries,") {
		t.Fatalf("add = %q (error %v)", text, isErr)
	}
	if _, err := os.Stat(filepath.Join(dir, name[1])); err != nil {
		t.Fatalf("the entry is not on disk: %v", err)
	}
	text, isErr = call(`{"action":"list"}`)
	if isErr || !strings.Contains(text, "[prelude entry "+name[1]+"]\nBuild with make.") {
		t.Errorf("list = %q", text)
	}
	text, isErr = call(`{"action":"replace","entry":"` + name[1] + `","content":"Build with make -j4."}`)
	if isErr || !strings.Contains(text, "replaced "+name[1]+" with ") {
		t.Errorf("replace = %q (error %v)", text, isErr)
	}
	text, isErr = call(`{"action":"list","names_only":true}`)
	if isErr || strings.Contains(text, name[1]) || !strings.Contains(text, "(20 bytes)") {
		t.Errorf("list names_only = %q", text)
	}
	for _, tt := range []struct{ input, want string }{
		{`{"action":"add","content":"` + strings.Repeat("x", 500) + `"}`, "over the cap of 400"},
		{`{"action":"remove","entry":"nope.md"}`, "no such prelude entry"},
		{`{"action":"remove"}`, "remove needs entry"},
		{`{"action":"replace","content":"x"}`, "replace needs entry"},
		{`{"action":"edit"}`, `unknown action "edit"`},
		{`{"action":"add","text":"x"}`, `unknown field "text"`},
	} {
		if text, isErr := call(tt.input); !isErr || !strings.Contains(text, tt.want) {
			t.Errorf("Call(%s) = %q (error %v), want an error with %q", tt.input, text, isErr, tt.want)
		}
	}
}

// TestToolOversizeEntry: the tool never reads an entry larger than the cap; list shows it
// as a notice with its size, the size line counts it whole, and remove gets rid of it.
func TestToolOversizeEntry(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "huge.md"), []byte(strings.Repeat("x", 5000)), 0o644); err != nil {
		t.Fatal(err)
	}
	tool := New(&workspace.Prelude{Dir: dir, Max: 400})
	res := tool.Call(t.Context(), "owner", json.RawMessage(`{"action":"list"}`))
	if res.IsError || strings.Contains(res.Text, "xxx") || !strings.Contains(res.Text, "[prelude entry huge.md]\n[myco: this entry was not read: its file is 5000 bytes") || !strings.Contains(res.Text, "[prelude: 1 entries, 5025 of 400 bytes]") {
		t.Errorf("list = %q", res.Text)
	}
	res = tool.Call(t.Context(), "owner", json.RawMessage(`{"action":"remove","entry":"huge.md"}`))
	if res.IsError || !strings.Contains(res.Text, "[prelude: 0 entries, 0 of 400 bytes]") {
		t.Errorf("remove = %q", res.Text)
	}
}
