package preludetool

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"myco/workspace"
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
