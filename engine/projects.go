package engine

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"time"

	"myco.dev/config"
	"myco.dev/hosts"
	"myco.dev/hosts/mcp"
)

// Projects are the MCP servers that the directories of a profile's sessions offer in
// their .mcp.json, and the person's approvals of them, kept in the profile
// ([config.Paths.MCPApprovalsFile]). It is the harness's [hosts.ProjectSource]: an
// approved server is resolved for it to start (its ${VAR}s from myco's own environment,
// never a .env), with the project's directory as its working directory. Safe for
// concurrent use.
type Projects struct {
	o ProjectsOptions
}

// ProjectsOptions configure [Projects].
type ProjectsOptions struct {
	// ApprovalsFile is where the approvals are kept.
	ApprovalsFile string
	// Config is the profile's: a project's server may not read its credential variables,
	// nor take a configured server's tools' names. nil means none.
	Config    *config.Config
	LookupEnv func(string) (string, bool) // myco's own environment
	Log       *slog.Logger                // nil means slog.Default()
}

// NewProjects returns the project servers of a profile.
func NewProjects(o ProjectsOptions) *Projects {
	if o.Log == nil {
		o.Log = slog.Default()
	}
	return &Projects{o: o}
}

// projects returns p's project servers.
func (p *Profile) projects(log *slog.Logger) *Projects {
	return NewProjects(ProjectsOptions{ApprovalsFile: p.Paths.MCPApprovalsFile(), Config: p.Config, LookupEnv: p.o.LookupEnv, Log: log})
}

// Project returns what dir's .mcp.json offers, whether the person approved it, and, when
// they did, the servers to start. A file or an approvals record that cannot be read is
// logged and offers nothing to start.
func (ps *Projects) Project(dir string) hosts.ProjectOffer {
	offer := hosts.ProjectOffer{Dir: dir}
	if dir == "" || !filepath.IsAbs(dir) {
		return offer
	}
	pm, err := config.LoadProjectMCP(dir, ps.o.Config)
	if err != nil {
		ps.o.Log.Warn("the project's mcp file cannot be read", "dir", dir, "err", err)
		return offer
	}
	if pm == nil {
		return offer
	}
	offer.File, offer.Sum, offer.Problem = pm.File, pm.Sum, pm.Problem
	for _, s := range pm.Servers {
		if s.Problem == "" && ps.o.Config != nil {
			if _, ok := ps.o.Config.MCPServers[s.Server()]; ok {
				s.Problem = "a configured server is named " + s.Server() + ", like this one's tools"
			}
		}
		offer.Servers = append(offer.Servers, hosts.ProjectServer{Name: s.Name, Server: s.Server(), Command: s.Command, Args: s.Args, Env: s.Env,
			URL: s.URL, Headers: s.Headers, Vars: s.Vars, Problem: s.Problem})
	}
	as, err := config.LoadMCPApprovals(ps.o.ApprovalsFile)
	if err != nil {
		ps.o.Log.Warn("the approvals of projects' mcp servers cannot be read: none is started", "err", err)
		return offer
	}
	a := config.ApprovalFor(as, dir)
	offer.Approved = a != nil && a.Sum == pm.Sum && pm.Problem == ""
	offer.Changed = a != nil && a.Sum != pm.Sum
	if !offer.Approved {
		return offer
	}
	for _, s := range pm.Servers {
		if i := indexServer(offer.Servers, s.Name); i < 0 || offer.Servers[i].Problem != "" {
			continue
		}
		srv := mcp.Server{Name: s.Server(), Command: s.Command, Args: s.Args, Dir: dir, URL: s.URL}
		env, headers, err := s.Values(ps.o.LookupEnv)
		if err != nil {
			srv.Unavailable = err.Error() + " in myco's environment; myco looks variables up when the server starts"
		}
		srv.Env, srv.Headers = env, headers
		offer.Start = append(offer.Start, srv)
	}
	return offer
}

func indexServer(servers []hosts.ProjectServer, name string) int {
	for i, s := range servers {
		if s.Name == name {
			return i
		}
	}
	return -1
}

// Approve records the person's approval of dir's .mcp.json, whose content they were
// shown with digest sum: a file that changed since is refused with
// [hosts.ErrProjectChanged],
// and so is one that offers nothing myco can start. It returns the offer approved.
func (ps *Projects) Approve(dir, sum string) (hosts.ProjectOffer, error) {
	offer := ps.Project(dir)
	switch {
	case !offer.Offers():
		return offer, fmt.Errorf("%s has no %s", dir, config.ProjectMCPFile)
	case offer.Problem != "":
		return offer, fmt.Errorf("%s cannot be used: %s", offer.File, offer.Problem)
	case sum != offer.Sum:
		return offer, fmt.Errorf("%s: %w; look at it again", offer.File, hosts.ErrProjectChanged)
	}
	var names []string
	usable := false
	for _, s := range offer.Servers {
		names = append(names, s.Name)
		usable = usable || s.Problem == ""
	}
	if !usable {
		return offer, fmt.Errorf("%s offers no server myco can start", offer.File)
	}
	if err := config.ApproveProjectMCP(ps.o.ApprovalsFile, config.MCPApproval{Dir: dir, Sum: sum, Servers: names, At: time.Now().UTC()}); err != nil {
		return offer, err
	}
	ps.o.Log.Info("the project's mcp servers are approved", "dir", dir, "servers", strings.Join(names, ","), "sha256", sum)
	return ps.Project(dir), nil
}

// Revoke removes the approval of dir's project servers; found reports whether there was
// one. Sessions that run them keep their instances until they end; no session gets
// their tools any more.
func (ps *Projects) Revoke(dir string) (found bool, err error) {
	return config.RevokeProjectMCP(ps.o.ApprovalsFile, dir)
}
