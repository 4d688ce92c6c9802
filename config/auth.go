package config

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// The sources a credential can come from.
const (
	AuthInline = "inline" // the credential is written in the config
	AuthEnv    = "env"    // read from the environment variable VarName
	AuthFile   = "file"   // read from the file Path, trimmed
	AuthNone   = "none"   // no credential: no auth header is sent
)

// Auth says where a model's credential comes from. It is looked up only when the model
// is used ([Auth.Key]), so a missing variable or file never fails startup. The zero Auth
// means none.
type Auth struct {
	Source  string // AuthInline, AuthEnv, AuthFile or AuthNone; "" means AuthNone
	Value   string // the credential, for AuthInline
	VarName string // for AuthEnv
	Path    string // for AuthFile; may start with ~/
}

// Key returns the credential, or "" for [AuthNone]. lookupEnv is where an env source
// is looked up, normally [Env.Lookup] (the process environment, then the .env), and home
// is the directory ~/ expands to. The error names the variable or file that could not
// supply it, and never holds a credential: "environment variable NAME is not set", "file
// PATH: no such file or directory".
func (a Auth) Key(lookupEnv func(string) (string, bool), home string) (string, error) {
	switch a.Source {
	case "", AuthNone:
		return "", nil
	case AuthInline:
		return a.Value, nil
	case AuthEnv:
		v, ok := lookupEnv(a.VarName)
		if !ok {
			return "", fmt.Errorf("environment variable %s is not set", a.VarName)
		}
		if strings.TrimSpace(v) == "" {
			return "", fmt.Errorf("environment variable %s is empty", a.VarName)
		}
		return v, nil
	case AuthFile:
		if home == "" && (a.Path == "~" || strings.HasPrefix(a.Path, "~/")) {
			return "", fmt.Errorf("file %s: home directory unknown", a.Path)
		}
		path := ExpandHome(a.Path, home)
		b, err := os.ReadFile(path)
		if pe, ok := errors.AsType[*fs.PathError](err); ok {
			return "", fmt.Errorf("file %s: %w", path, pe.Err) // "no such file or directory"
		} else if err != nil {
			return "", fmt.Errorf("file %s: %w", path, err)
		}
		key := strings.TrimSpace(string(b))
		if key == "" {
			return "", fmt.Errorf("file %s is empty", path)
		}
		return key, nil
	}
	return "", fmt.Errorf("unknown auth source %q", a.Source)
}

// CredentialVars returns the names of the environment variables that an auth of any
// gateway or model, or an env or header value of any MCP server, reads ({ source = "env",
// var_name = … }), sorted and without duplicates. They are the only variables a .env may
// supply ([LoadDotEnv]), and they are what to keep out of the environment of every process
// myco starts (an MCP server gets the values its own env names, and nothing else).
func (c *Config) CredentialVars() []string {
	var names []string
	for _, g := range c.Gateways {
		if g.Auth.Source == AuthEnv && g.Auth.VarName != "" {
			names = append(names, g.Auth.VarName)
		}
	}
	for _, m := range c.Models {
		if m.Auth.Source == AuthEnv && m.Auth.VarName != "" {
			names = append(names, m.Auth.VarName)
		}
	}
	for _, s := range c.MCPServers {
		for _, a := range slices.Concat(slices.Collect(maps.Values(s.Env)), slices.Collect(maps.Values(s.Headers))) {
			if a.Source == AuthEnv && a.VarName != "" {
				names = append(names, a.VarName)
			}
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// String describes the auth without revealing an inline credential, so that a [Model]
// can be logged or printed safely.
func (a Auth) String() string {
	switch a.Source {
	case "", AuthNone:
		return "none"
	case AuthInline:
		return "inline credential"
	case AuthEnv:
		return "env " + a.VarName
	case AuthFile:
		return "file " + a.Path
	}
	return "unknown auth source " + a.Source
}

// GoString is String, so that %#v does not reveal an inline credential either.
func (a Auth) GoString() string { return "config.Auth(" + a.String() + ")" }

// ExpandHome replaces a leading "~" or "~/" in path with home. Other paths are returned
// unchanged; "~user/" is not supported.
func ExpandHome(path, home string) string {
	if path == "~" {
		return home
	}
	if rest, ok := strings.CutPrefix(path, "~/"); ok {
		return filepath.Join(home, rest)
	}
	return path
}
