package engine

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"myco.dev/hosts/sandbox"
	"myco.dev/policy"
	"myco.dev/sessions"
)

// GuardOptions turn on modes, rules and the sandbox for an engine's sessions (see
// docs/security.md). Without them (a nil Options.Guard) every call runs at once.
type GuardOptions struct {
	// Exe is the executable that fences commands in: myco itself, whose main calls
	// sandbox.Main first. Empty means no sandbox (sandboxed modes ask instead).
	Exe string
	// Mode overrides the config's mode of new sessions (-p's --mode); Allow adds allow
	// rules (-p's --allow), checked before the config's.
	Mode  string
	Allow []string
	// NonInteractive denies what would ask (-p).
	NonInteractive bool
}

// guard builds the sessions' guard of profile p, its sandbox letting commands reach the
// API at serverURL (for nested sessions).
func guard(p *Profile, g *GuardOptions, serverURL string) (*sessions.Guard, error) {
	if g == nil {
		return nil, nil
	}
	c := p.Config.Approvals
	out := &sessions.Guard{NonInteractive: g.NonInteractive, Network: p.Config.Sandbox.Network,
		Hidden: hiddenPaths(p.Paths.Home, p.o.Home), Timeout: time.Duration(c.TimeoutSecs) * time.Second}
	mode := c.Mode
	if g.Mode != "" {
		mode = g.Mode
	}
	if mode != "" {
		m, err := policy.ParseMode(mode)
		if err != nil {
			return nil, err
		}
		out.Mode = m
	}
	for _, r := range g.Allow {
		rule, err := policy.ParseRule(policy.Allow, r, policy.FromFlag)
		if err != nil {
			return nil, fmt.Errorf("--allow: %w", err)
		}
		out.Rules = append(out.Rules, rule)
	}
	for _, set := range []struct {
		a     policy.Action
		rules []string
	}{{policy.Deny, c.Deny}, {policy.Ask, c.Ask}, {policy.Allow, c.Allow}} {
		for _, r := range set.rules {
			rule, err := policy.ParseRule(set.a, r, policy.FromConfig)
			if err != nil {
				return nil, fmt.Errorf("%s: [approvals] %s: %w", p.Config.File, set.a, err)
			}
			out.Rules = append(out.Rules, rule)
		}
	}
	// The profile's workspace is the agents' own (notes, the prelude): writable, although
	// it lies in myco's hidden home.
	out.Writable = append(out.Writable, p.Paths.WorkspaceDir())
	for _, w := range p.Config.Sandbox.Writable {
		if rest, ok := strings.CutPrefix(w, "~/"); ok && p.o.Home != "" {
			w = filepath.Join(p.o.Home, rest)
		}
		out.Writable = append(out.Writable, w)
	}
	if u, err := url.Parse(serverURL); err == nil && u.Port() != "" {
		if n, err := strconv.ParseUint(u.Port(), 10, 16); err == nil {
			out.Ports = []uint16{uint16(n)}
		}
	}
	if g.Exe != "" {
		f, err := sandbox.New(sandbox.Options{Exe: g.Exe})
		if err != nil {
			return nil, err
		}
		out.Fence = f
	}
	return out, nil
}

// hiddenPaths are what a sandboxed command may not read: myco's home, and the browsers'
// profiles, whose cookie stores hold the approval capability.
func hiddenPaths(mycoHome, home string) []string {
	out := []string{mycoHome}
	if home == "" {
		return out
	}
	for _, d := range []string{".config/google-chrome", ".config/chromium", ".mozilla", ".config/BraveSoftware", ".config/microsoft-edge", "snap/chromium", "snap/firefox"} {
		p := filepath.Join(home, d)
		if _, err := os.Stat(p); err == nil {
			out = append(out, p)
		}
	}
	return out
}
