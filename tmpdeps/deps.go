package tmpdeps

import (
	_ "github.com/BurntSushi/toml"
	_ "github.com/kevinburke/ssh_config"
	_ "github.com/rogpeppe/go-internal/testscript"
)
