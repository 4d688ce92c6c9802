package catalog

import (
	"context"
	"fmt"
	"io/fs"

	"myco.dev/config"
	"myco.dev/sessions"
	"myco.dev/workspace"
)

// PromptOptions say where the system prompt's blocks come from.
type PromptOptions struct {
	Paths           config.Paths
	MaxPreludeBytes int
	Manual          fs.FS // the manual's pages, as exported to the profile's manual/
	// Warn is told of each project guidance file that was skipped, and why; nil means
	// nobody is.
	Warn func(string)
	// Config is the profile's config, whose MCP servers the prompt names; nil means none.
	Config *config.Config
	// Tools lists the tools of the MCP servers before the blocks are read, so that a
	// session's first model request has them; nil means nothing to list.
	Tools Discoverer
}

// Discoverer lists the tools of the MCP servers not listed yet; *hosts.Harness satisfies
// it. Discover bounds each server's start by its own timeout.
type Discoverer interface {
	Discover(ctx context.Context)
}

// Prompt returns the reader of a session's system prompt blocks, for
// [sessions.ManagerOptions].Prompt: the MCP servers of the config, the manual's index,
// the project guidance of the session's directory, the prelude and the workspace listing,
// least to most volatile, and a prelude watcher relative to them. Sessions in one
// directory get the same bytes while the files are the same (the prompt cache's prefix).
// They are read when a session's model is built, so the prompt's bytes stay fixed for its
// life. Before that, the MCP servers whose tools are not listed yet are started and
// listed (o.Tools), so that the tools are known before the session's first model
// request; the wait is bounded by the servers' startup timeouts (and a remote's attach
// timeout), and a server that fails is only left out.
func Prompt(o PromptOptions) func(dir string) ([]string, sessions.PreludeWatcher, error) {
	return func(dir string) ([]string, sessions.PreludeWatcher, error) {
		if o.Tools != nil {
			// The caller gives no context: each server bounds its own start.
			o.Tools.Discover(context.Background())
		}
		watcher := (&workspace.Prelude{Dir: o.Paths.PreludeDir(), Max: o.MaxPreludeBytes}).Watcher()
		snap, err := watcher.Prompt()
		if err != nil {
			return nil, nil, err
		}
		return blocks(o, dir, snap), watcher, nil
	}
}

// blocks are the system prompt's appended sections for a session in dir, as of the
// prelude snapshot snap.
func blocks(o PromptOptions, dir string, snap workspace.Snapshot) []string {
	g := workspace.LoadGuidance(dir)
	for _, s := range g.Skipped {
		if o.Warn != nil {
			o.Warn(fmt.Sprintf("project guidance %s skipped: %s", s.Path, s.Reason))
		}
	}
	return []string{
		mcpBlock(o.Config),
		workspace.ManualBlock(o.Manual, o.Paths.ManualDir()),
		g.Block,
		workspace.PreludeBlock(o.Paths.PreludeDir(), snap),
		workspace.ListingBlock(workspace.DirFS(o.Paths.WorkspaceDir()), o.Paths.WorkspaceDir(), workspace.DefaultListingLimits),
	}
}
