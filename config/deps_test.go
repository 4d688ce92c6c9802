package config

import (
	"testing"

	"myco/internal/depstest"
)

// TestDeps keeps the package at the bottom of the import graph: the standard library and
// the TOML decoder only.
func TestDeps(t *testing.T) {
	depstest.Only(t, "myco/config", "github.com/BurntSushi/toml")
}
