package main

import (
	"fmt"

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
