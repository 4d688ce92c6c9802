package config

import (
	"os"
	"strings"
	"testing"
)

// TestDocsExamples keeps docs/configuration.md honest: every block marked as a complete
// example loads, and the documented empty-catalog entry is the one myco prints.
func TestDocsExamples(t *testing.T) {
	doc, err := os.ReadFile("../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	const marker = "<!-- complete example -->\n```toml\n"
	blocks := strings.Split(string(doc), marker)[1:]
	if len(blocks) != 3 {
		t.Fatalf("docs/configuration.md has %d complete examples, want one per protocol", len(blocks))
	}
	protocolsSeen := map[string]bool{}
	for i, b := range blocks {
		src, _, _ := strings.Cut(b, "```")
		c, err := Parse("example.toml", []byte(src))
		if err != nil {
			t.Errorf("example %d: %v", i+1, err)
			continue
		}
		for _, m := range c.Models {
			protocolsSeen[m.Protocol] = true
		}
	}
	for _, p := range protocols {
		if !protocolsSeen[p] {
			t.Errorf("no complete example uses %s", p)
		}
	}
	if !strings.Contains(string(doc), "```toml\n"+ExampleEntry+"```") {
		t.Error("docs/configuration.md does not show ExampleEntry as the empty-catalog entry")
	}
}
