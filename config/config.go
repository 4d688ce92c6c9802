package config

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"myco.dev/internal/shquote"
	"os"
	"slices"
	"strings"
	"syscall"

	"github.com/BurntSushi/toml"
)

// Config is a decoded config.toml with the defaults applied and the catalog resolved:
// every [Model] already carries what it inherits from its gateway.
type Config struct {
	File                  string // the path it was loaded from
	Model                 string // the default model key; empty when unset
	AttachTimeoutSecs     int    // per-remote connect timeout; 0 disables
	MaxPreludeBytes       int
	CompactionMaxRequests int
	// MaxCost is the budget of each session tree, in the catalog's money; 0 means none. A
	// session created with a budget of its own keeps that one.
	MaxCost    float64
	Gateways   map[string]Gateway
	Models     map[string]Model
	MCPServers map[string]MCPServer // by name; see docs/mcp.md
	Snapshots  Snapshots            // the [snapshots] table
	Approvals  Approvals            // see docs/security.md
	Sandbox    Sandbox

	// Warnings are what [Load] found that does not stop startup; the caller shows them.
	Warnings []Warning

	lines lineIndex // where keys are defined in File, for error lines; nil if unknown
}

// Approvals is the [approvals] table: the mode of new sessions and the person's rules, in
// their text form (bash(go test *), edit(docs/**), mcp(server/tool), a tool's name), which
// package policy reads.
type Approvals struct {
	// Mode is read-only, ask, workspace or full; empty means workspace where the sandbox
	// works, else ask.
	Mode  string   `toml:"mode"`
	Allow []string `toml:"allow"`
	Ask   []string `toml:"ask"`
	Deny  []string `toml:"deny"`
	// TimeoutSecs, when positive, denies an approval nobody answered in that time.
	TimeoutSecs int `toml:"timeout_secs"`
}

// Sandbox is the [sandbox] table: what the sandbox of the workspace and read-only modes
// allows besides the session's directory and its temporary directory.
type Sandbox struct {
	Writable []string `toml:"writable"` // more directories a command may write (~/ is the home)
	Network  bool     `toml:"network"`  // let commands reach the network
}

// Load reads, decodes and validates the config file at path. named reports that the user
// named the path (--config, $MYCO_CONFIG): then a missing file is an error; otherwise it
// is a first run and Load returns the defaults with an empty catalog.
//
// The file must be one no other user could have written (see [ResolvePaths]); it is
// checked on the open descriptor, so the checked file is the one read, and a symlink to
// it must not be another user's. A file with an inline credential that group or others
// may read loads with a [Warning] in [Config.Warnings].
//
// Problems in the file are returned as [*Error] values, all of them joined with
// [errors.Join] when there are several.
func Load(path string, named bool) (*Config, error) {
	c, _, err := load(path, named)
	return c, err
}

// load is [Load] that also returns the bytes it read; nil for a missing file that is not
// named.
func load(path string, named bool) (*Config, []byte, error) {
	src, info, err := readConfig(path, named)
	switch {
	case err != nil:
		return nil, nil, err
	case src == nil:
		return defaults(path), nil, nil
	}
	c, err := Parse(path, src)
	if err != nil {
		return nil, nil, err
	}
	if key := c.inlineCredential(); key != nil && info.Mode().Perm()&0o044 != 0 {
		c.Warnings = append(c.Warnings, Warning{File: path, Line: c.lines.line(key), Key: toml.Key(key).String(),
			Msg: fmt.Sprintf("an inline credential in a file that group or others may read (mode %s); run: chmod 600 %s, or move the credential to an env or file source",
				info.Mode(), shquote.Quote(path))})
	}
	return c, src, nil
}

// readConfig reads the config file at path as [Load] does, with its checks. A missing
// file that is not named is no error: src is nil.
func readConfig(path string, named bool) (src []byte, info fs.FileInfo, err error) {
	// O_NONBLOCK, then the type checked on the descriptor: a FIFO put where the config
	// should be would otherwise block the open, and with it every request of the profile.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if errors.Is(err, fs.ErrNotExist) {
		if named {
			return nil, nil, &Error{File: path, Msg: "the named config file does not exist", Err: err}
		}
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("load config: %w", err)
	}
	defer f.Close()
	info, err = checkFile("config file", path, f, os.Getuid())
	if err != nil {
		return nil, nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, nil, &Error{File: path, Msg: "the config file is " + fileKind(info) + ", not a regular file; make it a regular file"}
	}
	if src, err = io.ReadAll(f); err != nil {
		return nil, nil, fmt.Errorf("load config: %w", err)
	}
	if src == nil {
		src = []byte{}
	}
	return src, info, nil
}

// inlineCredential returns the key of the first auth that holds the credential itself,
// or nil.
func (c *Config) inlineCredential() []string {
	for _, name := range slices.Sorted(maps.Keys(c.Gateways)) {
		if c.Gateways[name].Auth.Source == AuthInline {
			return []string{"gateways", name, "auth"}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(c.Models)) {
		if c.Models[k].Auth.Source == AuthInline { // not inherited: no gateway has one
			return []string{"models", k, "auth"}
		}
	}
	// Headers are how an HTTP server takes its credential. An env value is not counted:
	// most are settings, and which ones are secrets cannot be told.
	for _, name := range c.MCPServerNames() {
		h := c.MCPServers[name].Headers
		for _, k := range slices.Sorted(maps.Keys(h)) {
			if h[k].Source == AuthInline {
				return []string{"mcp_servers", name, "headers", k}
			}
		}
	}
	return nil
}

// Parse decodes and validates src as the contents of the config file named file, like
// [Load].
func Parse(file string, src []byte) (*Config, error) {
	d := &decoder{file: file, broken: map[string]bool{}}
	c := d.decode(string(src))
	if c == nil {
		return nil, joinErrors(d.errs)
	}
	errs := append(d.errs, c.validate(d.broken)...)
	if len(errs) > 0 {
		return nil, joinErrors(errs)
	}
	return c, nil
}

func defaults(file string) *Config {
	return &Config{
		File:                  file,
		AttachTimeoutSecs:     DefaultAttachTimeoutSecs,
		MaxPreludeBytes:       DefaultMaxPreludeBytes,
		CompactionMaxRequests: DefaultCompactionMaxRequests,
		Gateways:              map[string]Gateway{},
		Models:                map[string]Model{},
		MCPServers:            map[string]MCPServer{},
		Snapshots:             defaultSnapshots(),
	}
}

// joinErrors orders errs by line, those without one last, and joins them.
func joinErrors(errs []*Error) error {
	slices.SortStableFunc(errs, func(a, b *Error) int {
		la, lb := a.Line, b.Line
		if la == 0 {
			la = 1 << 30
		}
		if lb == 0 {
			lb = 1 << 30
		}
		return la - lb
	})
	if len(errs) == 1 {
		return errs[0]
	}
	all := make([]error, len(errs))
	for i, e := range errs {
		all[i] = e
	}
	return errors.Join(all...)
}

// DefaultModel picks the model key to start with: flag (--model) if set, then the
// config's model, then the sole catalog entry. An empty catalog returns
// [*EmptyCatalogError]; a key that is not configured, or several entries and no choice,
// is an error listing the configured keys.
func (c *Config) DefaultModel(flag string) (string, error) {
	if len(c.Models) == 0 {
		return "", &EmptyCatalogError{File: c.File}
	}
	switch {
	case flag != "":
		if _, err := c.Resolve(flag); err != nil {
			return "", err
		}
		return flag, nil
	case c.Model != "":
		if _, err := c.Resolve(c.Model); err != nil {
			return "", err
		}
		return c.Model, nil
	case len(c.Models) == 1:
		for k := range c.Models {
			return k, nil
		}
	}
	return "", fmt.Errorf("%s: no default model: set model in the config or pass --model; configured models: %s",
		c.File, c.modelKeys())
}

// Resolve returns the catalog entry for key. An unknown key is an error listing the
// configured keys. The credential is not looked up; see [Auth.Key].
func (c *Config) Resolve(key string) (Model, error) {
	m, ok := c.Models[key]
	if !ok {
		if len(c.Models) == 0 {
			return Model{}, &EmptyCatalogError{File: c.File}
		}
		return Model{}, &UnknownModelError{File: c.File, Key: key, Known: c.ModelKeys()}
	}
	return m, nil
}

func (c *Config) modelKeys() string { return strings.Join(c.ModelKeys(), ", ") }

// ModelKeys returns the catalog's model keys, sorted.
func (c *Config) ModelKeys() []string { return slices.Sorted(maps.Keys(c.Models)) }

// fileKind names the type of a file that is not a regular one: "a directory", "a FIFO
// (named pipe)", "a socket", "a device".
func fileKind(info fs.FileInfo) string {
	switch m := info.Mode(); {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO (named pipe)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "of mode " + info.Mode().String()
}
