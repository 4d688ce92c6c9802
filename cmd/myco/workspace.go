package main

import (
	"fmt"
	"os"

	"myco.dev/config"
	"myco.dev/docs"
	"myco.dev/workspace"
)

// startWorkspace does what every profile start does to the workspace: export the manual
// and refuse a prelude that is already over max_prelude_bytes.
func startWorkspace(paths config.Paths, cfg *config.Config) error {
	if err := workspace.ExportManual(docs.FS, paths.ManualDir()); err != nil {
		return err
	}
	p := workspace.Prelude{Dir: paths.PreludeDir(), Max: cfg.MaxPreludeBytes}
	if err := p.Check(); err != nil {
		return fmt.Errorf("%w (config %s)", err, paths.ConfigFile)
	}
	return nil
}

// promptBlocks are the system prompt's appended sections, least to most volatile: the
// manual's index, project guidance, the prelude as of snap, the workspace listing. They
// are read once, when the model is built, so the prompt's bytes stay fixed for its life.
func promptBlocks(paths config.Paths, snap workspace.Snapshot, warn func(string)) []string {
	wd, _ := os.Getwd()
	g := workspace.LoadGuidance(wd)
	for _, s := range g.Skipped {
		warn(fmt.Sprintf("project guidance %s skipped: %s", s.Path, s.Reason))
	}
	return []string{
		workspace.ManualBlock(docs.FS, paths.ManualDir()),
		g.Block,
		workspace.PreludeBlock(paths.PreludeDir(), snap),
		workspace.ListingBlock(os.DirFS(paths.WorkspaceDir()), paths.WorkspaceDir(), workspace.DefaultListingLimits),
	}
}
