package mcp

import (
	"regexp"
	"strings"
	"testing"
)

var providerName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

func TestExposedName(t *testing.T) {
	for _, tt := range []struct {
		server, tool string
		want         string // "" when mapped: then only the rule and the prefix are checked
		prefix       string
	}{
		{"github", "create_issue", "mcp__github__create_issue", ""},
		{"everything", "get-tiny-image", "mcp__everything__get-tiny-image", ""},
		{"a", strings.Repeat("t", 56), "mcp__a__" + strings.Repeat("t", 56), ""}, // 64: fits
		{"fs", "read.file", "", "mcp__fs__read_file_"},
		{"fs", "read file/ünï", "", "mcp__fs__read_file__"},
		{"a", strings.Repeat("t", 57), "", "mcp__a__" + strings.Repeat("t", 47) + "_"}, // 65: cut
	} {
		got, mapped := ExposedName(tt.server, tt.tool)
		if !providerName.MatchString(got) {
			t.Errorf("ExposedName(%q, %q) = %q, which breaks the providers' rule", tt.server, tt.tool, got)
		}
		if again, _ := ExposedName(tt.server, tt.tool); again != got {
			t.Errorf("ExposedName(%q, %q) = %q, then %q: not stable", tt.server, tt.tool, got, again)
		}
		switch {
		case tt.want != "" && (got != tt.want || mapped):
			t.Errorf("ExposedName(%q, %q) = %q, %v; want %q unmapped", tt.server, tt.tool, got, mapped, tt.want)
		case tt.want == "" && (!mapped || !strings.HasPrefix(got, tt.prefix) || len(got) > MaxNameLen):
			t.Errorf("ExposedName(%q, %q) = %q, %v; want a mapped name starting %q", tt.server, tt.tool, got, mapped, tt.prefix)
		}
	}
	// Names that clean up alike stay apart, by their hash.
	a, _ := ExposedName("fs", "read.file")
	b, _ := ExposedName("fs", "read/file")
	c, _ := ExposedName("fs", "read_file")
	if a == b || a == c || b == c {
		t.Errorf("read.file, read/file and read_file map to %q, %q and %q: want three names", a, b, c)
	}
}
