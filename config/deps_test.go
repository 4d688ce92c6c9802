package config

import (
	"testing"

	"myco.dev/internal/depstest"
)

// TestDeps keeps the package at the bottom of the import graph: the standard library and
// the TOML decoder only.
func TestDeps(t *testing.T) {
	depstest.Only(t, "myco.dev/config", "github.com/BurntSushi/toml")
}
