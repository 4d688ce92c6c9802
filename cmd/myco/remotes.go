package main

import (
	"fmt"
	"time"

	"myco.dev/config"
)

// attachTimeout is the config's attach_timeout_secs when the config can be read, else
// the default.
func (a *app) attachTimeout() time.Duration {
	paths, err := a.paths(options{})
	if err != nil {
		return config.DefaultAttachTimeoutSecs * time.Second
	}
	cfg, err := config.Load(paths.ConfigFile, paths.ConfigNamed)
	if err != nil {
		fmt.Fprintf(a.stderr, "myco: the config is not readable, so the attach timeout is the default %ds: %s\n", config.DefaultAttachTimeoutSecs, oneLine(err.Error()))
		return config.DefaultAttachTimeoutSecs * time.Second
	}
	return time.Duration(cfg.AttachTimeoutSecs) * time.Second
}
