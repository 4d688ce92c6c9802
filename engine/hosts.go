package engine

import (
	"fmt"
	"log/slog"
	"os"
	"os/user"
	"path/filepath"
	"runtime"
	"time"

	"myco.dev/config"
	"myco.dev/hosts"
	"myco.dev/hosts/mcp"
	"myco.dev/hosts/proto"
	"myco.dev/hosts/tools"
	"myco.dev/internal/reaper"
	"myco.dev/sessions/catalog"
)

// remotes returns the remote hosts of ~/.ssh/config and the options of their controllers:
// lazy ssh workers spawned with the catalog's largest image cap (each call is held to its
// session's model's) and the config's attach timeout; the hosts remove the model
// credentials from their tool processes.
func (p *Profile) remotes(log *slog.Logger) ([]hosts.RemoteSpec, hosts.RemoteOptions, error) {
	specs, _, err := SSHRemotes(p.o.Home)
	if err != nil {
		return nil, hosts.RemoteOptions{}, err
	}
	attach := time.Duration(p.Config.AttachTimeoutSecs) * time.Second
	return specs, RemoteOptions(p.o, catalog.LargestImageCap(p.Config), attach, p.Config.CredentialVars(), log), nil
}

// SSHRemotes reads the remote hosts of home's .ssh/config, and returns them with that
// file's path. OpenSSH reads the passwd home's config, so when home is another directory
// the remotes get -F with the file myco parsed.
func SSHRemotes(home string) ([]hosts.RemoteSpec, string, error) {
	def := ""
	if u, err := user.Current(); err == nil && u.HomeDir != "" {
		def = filepath.Join(u.HomeDir, ".ssh", "config")
	}
	path := filepath.Join(home, ".ssh", "config")
	if def == path {
		def = ""
	}
	specs, err := hosts.LoadSSHConfig(hosts.SSHConfigOptions{Path: path, Home: home, Default: def})
	return specs, path, err
}

// RemoteOptions are the options of every remote controller: images up to maxImage bytes
// of base64, attach as the attach timeout; the host removes the variables withoutEnv
// names (the model credentials) from its tool processes.
func RemoteOptions(o OpenOptions, maxImage int, attach time.Duration, withoutEnv []string, log *slog.Logger) hosts.RemoteOptions {
	return hosts.RemoteOptions{
		MaxImageBase64Bytes: maxImage,
		WithoutEnv:          withoutEnv,
		AttachTimeout:       attach,
		PingInterval:        5 * time.Second,
		Log:                 log,
		Hello:               proto.Hello{Version: o.Build, OS: runtime.GOOS, Arch: runtime.GOARCH, Dir: o.Dir},
	}
}

// mcpOptions checks that every MCP server's host is one of remotes (an unknown host is a
// startup error naming the file, the line and the key) and returns the harness options
// of the profile's MCP servers: the local ones in a Set whose processes die with rp's
// process, the remote ones, the disabled ones, and the projects' servers that the person
// approved (started by the harness, with the same options). The caller closes the Set.
func (p *Profile) mcpOptions(remotes []hosts.RemoteSpec, rp tools.Reaper, projects *Projects, log *slog.Logger) (hosts.Options, error) {
	var aliases []string
	for _, r := range remotes {
		aliases = append(aliases, r.Alias)
	}
	if err := p.Config.CheckMCPHosts(aliases); err != nil {
		return hosts.Options{}, err
	}
	servers := catalog.MCP(catalog.MCPOptions{Config: p.Config, Env: p.Env, Home: p.o.Home})
	mo := mcp.Options{LookupEnv: p.o.LookupEnv, Reaper: rp, Version: p.o.Version, Log: log}
	local := mo
	local.Servers = servers.Local
	set, err := mcp.New(local)
	if err != nil {
		return hosts.Options{}, err
	}
	return hosts.Options{MCP: set, RemoteMCP: servers.Remote, MCPDisabled: servers.Disabled, Projects: projects, ProjectMCP: mo, Log: log}, nil
}

// MCPHosts returns a harness of p's MCP servers (the projects' approved ones too) and
// remote hosts, without the local tools, for myco mcp list; the local servers' processes die with rp's process. The caller calls
// close when done, and then closes rp.
func MCPHosts(p *Profile, rp *reaper.Reaper, log *slog.Logger) (h *hosts.Harness, close func(), err error) {
	remotes, ro, err := p.remotes(log)
	if err != nil {
		return nil, nil, err
	}
	ho, err := p.mcpOptions(remotes, rp, p.projects(log), log)
	if err != nil {
		return nil, nil, err
	}
	ho.Remotes, ho.Remote = remotes, ro
	if h, err = hosts.NewHarness(ho); err != nil {
		ho.MCP.Close()
		return nil, nil, err
	}
	return h, func() { h.Close(); ho.MCP.Close() }, nil
}

// AttachTimeout is the attach_timeout_secs of the config at paths. When the config cannot
// be read, it is the default, with an error that says so.
func AttachTimeout(paths config.Paths) (time.Duration, error) {
	cfg, err := config.Load(paths.ConfigFile, paths.ConfigNamed)
	if err != nil {
		return config.DefaultAttachTimeoutSecs * time.Second,
			fmt.Errorf("the config is not readable, so the attach timeout is the default %ds: %w", config.DefaultAttachTimeoutSecs, err)
	}
	return time.Duration(cfg.AttachTimeoutSecs) * time.Second, nil
}

// CheckSSHHost reports, with the file it read, when host is not a Host of the user's SSH
// config: a remote myco can reach only those.
func CheckSSHHost(host string) error {
	home, _ := os.UserHomeDir()
	specs, sshConfig, err := SSHRemotes(home)
	if err != nil {
		return err
	}
	for _, r := range specs {
		if r.Alias == host {
			return nil
		}
	}
	return fmt.Errorf("not a Host of %s", sshConfig)
}
