package config

import (
	"testing"

	"myco.dev/internal/depstest"
)

// TestDeps keeps the package at the bottom of the import graph: the standard library, the
// TOML decoder and the shell quoting of internal/shquote only.
func TestDeps(t *testing.T) {
	depstest.Only(t, "myco.dev/config", "github.com/BurntSushi/toml", "myco.dev/internal/shquote", "myco.dev/internal/atomicfile")
}
