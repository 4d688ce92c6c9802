package main

import (
	"myco/agent"
	"myco/config"
	"myco/hosts"
	"myco/hosts/tools"
)

// toolset is the harness of one process and the executor of one session runtime.
type toolset struct {
	harness *hosts.Harness
	exec    *hosts.Executor
	std     []tools.Tool
	blocks  []string // the system prompt's appended sections, read at session start
}

// hostTools builds the standard host tool services with the given image cap; the local
// worker and myco --mode host use the same ones.
func hostTools(maxImageBase64Bytes int) []tools.Tool {
	return []tools.Tool{
		tools.NewBash(tools.BashOptions{}),
		tools.NewEditor(tools.EditorOptions{}),
		tools.NewImage(tools.ImageOptions{MaxBase64Bytes: maxImageBase64Bytes}),
	}
}

// close ends every process the tools started.
func (ts *toolset) close() {
	ts.harness.Release(ts.exec.Owner())
	ts.harness.Close()
	for _, t := range ts.std {
		if c, ok := t.(interface{ Close() }); ok {
			c.Close()
		}
	}
}

func (ts *toolset) systemPrompt(m config.Model) string {
	return agent.SystemPrompt(agent.PromptOptions{
		Tools:         ts.exec.Specs(),
		Hosts:         ts.harness.Hosts(),
		ContextWindow: m.ContextWindow,
		AutoCompactAt: m.AutoCompactAt,
		Blocks:        ts.blocks,
	})
}
