package agent

import (
	"strings"
	"testing"

	"myco.dev/agent/model"
)

func TestSystemPrompt(t *testing.T) {
	o := PromptOptions{
		Tools:         []model.ToolSpec{{Name: "bash"}, {Name: "str_replace_based_edit_tool"}, {Name: "view_image"}, {Name: "session_meta"}},
		Hosts:         []string{"local", "devbox", "gpu"},
		ContextWindow: 200_000,
		AutoCompactAt: 0.8,
		Blocks:        []string{"# Guidance\n\nfirst block", "", "# Prelude\n\nsecond block\n"},
	}
	p := SystemPrompt(o)
	if again := SystemPrompt(o); again != p {
		t.Errorf("SystemPrompt is not deterministic:\n%s\n---\n%s", p, again)
	}
	for _, want := range []string{
		"You are myco",
		"- bash: run shell commands",
		"- str_replace_based_edit_tool: view files",
		"- view_image: look at",
		"- session_meta\n",
		"Known hosts: local, devbox, gpu.",
		"optional `host` field",
		"Omit it to run on local",
		"Bash session ids are per host",
		"`cd DIR && cmd`",
		"Your context window is 200,000 tokens.",
		"When the prompt reaches 160,000 tokens (80% of the window)",
		"a # Session block with this session's id",
		"You cannot run myco's slash commands",
		"tell the user which to run",
	} {
		if !strings.Contains(p, want) {
			t.Errorf("SystemPrompt lacks %q:\n%s", want, p)
		}
	}
	i, j := strings.Index(p, "first block"), strings.Index(p, "second block")
	if i < 0 || j < i || !strings.HasSuffix(p, "second block\n") {
		t.Errorf("blocks not appended in order at the end:\n%s", p)
	}
	if strings.Contains(p, "\n\n\n") {
		t.Errorf("empty block left a gap:\n%s", p)
	}

	o.AutoCompactAt = 0
	if p := SystemPrompt(o); strings.Contains(p, "compacted") {
		t.Errorf("SystemPrompt without AutoCompactAt mentions compaction:\n%s", p)
	}
	o.ContextWindow, o.AutoCompactAt = 1_000_000, 0.85
	if p, want := SystemPrompt(o), "850,000 tokens (85% of the window)"; !strings.Contains(p, want) {
		t.Errorf("SystemPrompt lacks %q:\n%s", want, p)
	}
	if p := SystemPrompt(PromptOptions{}); !strings.Contains(p, "Known hosts: local.") || strings.Contains(p, "context window") {
		t.Errorf("SystemPrompt(zero) = \n%s\nwant local only and no context window", p)
	}
}

func TestThousands(t *testing.T) {
	for _, tt := range []struct {
		n    int
		want string
	}{{0, "0"}, {999, "999"}, {1000, "1,000"}, {32768, "32,768"}, {1000000, "1,000,000"}, {-1234, "-1,234"}} {
		if got := thousands(tt.n); got != tt.want {
			t.Errorf("thousands(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
}
