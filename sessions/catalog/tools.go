package catalog

import (
	"os"
	"slices"
	"strings"

	"myco.dev/config"
	"myco.dev/hosts/tools"
)

// LocalOptions configure the local host's tools.
type LocalOptions struct {
	Paths  config.Paths
	Config *config.Config
	// Env is the process's environment, which bash's processes start from.
	Env []string
	// Reaper makes bash's processes die with this one; nil means they may outlive it.
	Reaper tools.Reaper
	// ServerURL is this instance's URL when the process serves the profile, for nested
	// sessions through its API; TokenFile is the 0600 file that holds the header carrying
	// its secret, when the server asks for one.
	ServerURL, TokenFile string
}

// LocalTools returns the local worker's standard tool services: bash (whose processes get
// the profile's variables and never the configured credentials), the editor and
// view_image with the catalog's largest image cap (each call is held to its session's
// model's). The editor and view_image stay out of myco's home but for the profile's
// workspace (and its manual, to read), and resolve relative paths against the caller's
// bash session's current directory. The caller closes the tools that keep processes.
func LocalTools(o LocalOptions) []tools.Tool {
	p := o.Paths
	deny := []string{p.Home}
	if !strings.HasPrefix(p.ConfigFile, p.Home+string(os.PathSeparator)) {
		deny = append(deny, p.ConfigFile)
	}
	g := &tools.Guard{Deny: deny, Allow: []string{p.WorkspaceDir()}, ReadOnly: []string{p.ManualDir()}}
	bash := tools.NewBash(tools.BashOptions{Env: ToolEnv(o), Reaper: o.Reaper})
	return []tools.Tool{
		bash,
		tools.NewEditor(tools.EditorOptions{Guard: g, Dirs: bash}),
		tools.NewImage(tools.ImageOptions{MaxBase64Bytes: LargestImageCap(o.Config), Guard: g, Dirs: bash}),
	}
}

// ToolEnv is the environment of local tool processes: o.Env without the variables that
// carry model credentials (a command such as env must not print a key), with the
// profile's MYCO_PROFILE and absolute MYCO_HOME, so that a nested myco finds the same
// profile from any directory, and, when this process serves the profile, the instance's
// MYCO_SERVER_URL (for nested sessions through its API) and, in token mode, the
// MYCO_SERVER_TOKEN_FILE to send with it (curl -H @FILE): the token itself never reaches a
// command line, where every user of the machine could read it.
func ToolEnv(o LocalOptions) []string {
	drop := o.Config.CredentialVars()
	ours := []string{"MYCO_PROFILE", "MYCO_HOME", "MYCO_SERVER_URL", "MYCO_SERVER_TOKEN", "MYCO_SERVER_TOKEN_FILE"}
	out := slices.DeleteFunc(slices.Clone(o.Env), func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		return slices.Contains(drop, name) || slices.Contains(ours, name)
	})
	out = append(out, "MYCO_PROFILE="+o.Paths.Profile, "MYCO_HOME="+o.Paths.Home)
	if o.ServerURL != "" {
		out = append(out, "MYCO_SERVER_URL="+o.ServerURL)
	}
	if o.TokenFile != "" {
		out = append(out, "MYCO_SERVER_TOKEN_FILE="+o.TokenFile)
	}
	return out
}
