package engine

import (
	"fmt"
	"io/fs"
	"path/filepath"

	"myco.dev/config"
	"myco.dev/workspace"
)

// OpenOptions are what a profile's start takes from the process; cmd/myco reads them once.
type OpenOptions struct {
	Paths config.Paths // the profile's, resolved from the flags and the environment
	// Model is the launch model's key (--model); empty means the config's default.
	Model string
	// Home is the user's home directory: ~/ in auth file paths and MCP servers, and the
	// ~/.ssh/config that lists the remote hosts.
	Home string
	// Dir is the working directory: its .env is read for the credentials the config names,
	// sessions created without a directory work there, and the remote hosts are told it.
	// Empty means none is known.
	Dir       string
	Environ   []string                    // the process's environment, which tools start from
	LookupEnv func(string) (string, bool) // the process's environment, for credentials
	// Version is the release version, which MCP servers are told; Build the binary's
	// build, which the remote hosts are told in the hello.
	Version, Build string
	Manual         fs.FS        // the manual, exported to the profile's manual/ at each start
	Warn           func(string) // a warning for the user, such as an unknown config key
}

// Profile is what a profile's start resolves once: its paths, its config, the launch
// model and the environment that credentials are looked up in.
type Profile struct {
	o      OpenOptions
	Paths  config.Paths
	Config *config.Config
	Model  config.Model // the launch model: --model, else the config's default
	Env    config.Env   // the process's environment, then the .env credentials
}

// Open loads and validates the profile's config, reads the working directory's .env for
// the credentials the config names, selects the model, makes the profile's directories
// (refusing another user's) and prepares its workspace, all before any model call. Each
// warning goes to o.Warn.
func Open(o OpenOptions) (*Profile, error) {
	cfg, err := config.Load(o.Paths.ConfigFile, o.Paths.ConfigNamed)
	if err != nil {
		return nil, err
	}
	for _, w := range cfg.Warnings {
		o.Warn(w.String())
	}
	key, err := cfg.DefaultModel(o.Model)
	if err != nil {
		return nil, err
	}
	m, err := cfg.Resolve(key)
	if err != nil {
		return nil, err
	}
	env := config.NewEnv(o.LookupEnv)
	if o.Dir != "" {
		var warnings []config.Warning
		env, warnings, err = config.LoadDotEnv(filepath.Join(o.Dir, ".env"), cfg, o.LookupEnv)
		if err != nil {
			return nil, err
		}
		for _, w := range warnings {
			o.Warn(w.String())
		}
	}
	if err := o.Paths.Ensure(); err != nil {
		return nil, err
	}
	if err := startWorkspace(o.Paths, cfg, o.Manual); err != nil {
		return nil, err
	}
	return &Profile{o: o, Paths: o.Paths, Config: cfg, Model: m, Env: env}, nil
}

// startWorkspace does what every profile start does to the workspace: export the manual
// and refuse a prelude that is already over max_prelude_bytes.
func startWorkspace(paths config.Paths, cfg *config.Config, manual fs.FS) error {
	if err := workspace.ExportManual(manual, paths.ManualDir()); err != nil {
		return err
	}
	p := workspace.Prelude{Dir: paths.PreludeDir(), Max: cfg.MaxPreludeBytes}
	if err := p.Check(); err != nil {
		return fmt.Errorf("%w (config %s)", err, paths.ConfigFile)
	}
	return nil
}

// Models lists the catalog's models that resolve, in the config's order.
func (p *Profile) Models() []config.Model {
	var out []config.Model
	for _, key := range p.Config.ModelKeys() {
		if m, err := p.Config.Resolve(key); err == nil {
			out = append(out, m)
		}
	}
	return out
}
