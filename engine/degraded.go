package engine

import (
	"fmt"
	"log/slog"

	"myco.dev/config"
	"myco.dev/sessions"
)

// Degraded returns the session service of a profile whose config cannot be loaded
// (cfgErr): its sessions readable, no model, no tools, until the config is fixed. The
// profile's directories are made and checked as for any start: another user's directory
// is refused, whatever the config says. dir is the working directory.
func Degraded(paths config.Paths, dir string, cfgErr error, log *slog.Logger) (*sessions.Manager, error) {
	if err := paths.Ensure(); err != nil {
		return nil, err
	}
	return sessions.NewManager(sessions.ManagerOptions{Store: sessions.NewStore(paths.SessionDir()), Models: brokenCatalog{cfgErr}, Dir: dir, Log: log})
}

// brokenCatalog is the model catalog of a profile whose config is invalid: it has no model.
type brokenCatalog struct{ err error }

func (brokenCatalog) Default() string { return "" }
func (c brokenCatalog) Agent(string, []string) (sessions.AgentConfig, error) {
	return sessions.AgentConfig{}, fmt.Errorf("the profile's config is invalid: %w", c.err)
}
