package catalog

import (
	"fmt"
	"io/fs"
	"os"

	"myco.dev/config"
	"myco.dev/sessions"
	"myco.dev/workspace"
)

// PromptOptions say where the system prompt's blocks come from.
type PromptOptions struct {
	Paths           config.Paths
	MaxPreludeBytes int
	Manual          fs.FS  // the manual's pages, as exported to the profile's manual/
	Dir             string // the working directory, where project guidance is looked for
	// Warn is told of each project guidance file that was skipped, and why; nil means
	// nobody is.
	Warn func(string)
}

// Prompt returns the reader of a session's system prompt blocks, for
// [sessions.ManagerOptions].Prompt: the manual's index, project guidance, the prelude and
// the workspace listing, least to most volatile, and a prelude watcher relative to them.
// They are read when a session's model is built, so the prompt's bytes stay fixed for its
// life.
func Prompt(o PromptOptions) func() ([]string, sessions.PreludeWatcher, error) {
	return func() ([]string, sessions.PreludeWatcher, error) {
		watcher := (&workspace.Prelude{Dir: o.Paths.PreludeDir(), Max: o.MaxPreludeBytes}).Watcher()
		snap, err := watcher.Prompt()
		if err != nil {
			return nil, nil, err
		}
		return blocks(o, snap), watcher, nil
	}
}

// blocks are the system prompt's appended sections as of the prelude snapshot snap.
func blocks(o PromptOptions, snap workspace.Snapshot) []string {
	g := workspace.LoadGuidance(o.Dir)
	for _, s := range g.Skipped {
		if o.Warn != nil {
			o.Warn(fmt.Sprintf("project guidance %s skipped: %s", s.Path, s.Reason))
		}
	}
	return []string{
		workspace.ManualBlock(o.Manual, o.Paths.ManualDir()),
		g.Block,
		workspace.PreludeBlock(o.Paths.PreludeDir(), snap),
		workspace.ListingBlock(os.DirFS(o.Paths.WorkspaceDir()), o.Paths.WorkspaceDir(), workspace.DefaultListingLimits),
	}
}
