package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"syscall"

	"myco.dev/cli"
	"myco.dev/config"
	"myco.dev/engine"
	"myco.dev/hosts"
	"myco.dev/internal/termtext"
)

// mcpCmd runs `myco mcp list|add|remove|approve|revoke` (args are what follows `mcp`): see [cli.MCPUsage].
func (a *app) mcpCmd(args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(a.stderr, cli.MCPUsage)
		return exitUsage
	}
	switch args[0] {
	case "list":
		return a.mcpList(args[1:])
	case "add":
		return a.mcpAdd(args[1:])
	case "remove":
		return a.mcpRemove(args[1:])
	case "approve":
		return a.mcpApprove(args[1:], false)
	case "revoke":
		return a.mcpApprove(args[1:], true)
	}
	fmt.Fprintln(a.stderr, cli.MCPUsage)
	return exitUsage
}

// mcpFlags are the flags of every `myco mcp` command: the profile's.
func mcpFlags(name string, o *options) *flag.FlagSet {
	fs := flag.NewFlagSet("myco mcp "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Func("profile", "", func(s string) error {
		o.profile, o.profileSet = s, true
		return nil
	})
	fs.StringVar(&o.config, "config", "", "")
	return fs
}

// parseMCP parses args by fs, flags and operands in any order up to a "--", and returns
// the operands, and what follows "--" (nil when there is none). On a usage error it says
// so and returns false.
func (a *app) parseMCP(fs *flag.FlagSet, args []string) (operands, command []string, ok bool) {
	if i := slices.Index(args, "--"); i >= 0 {
		args, command = args[:i], append([]string{}, args[i+1:]...)
	}
	for {
		if err := fs.Parse(args); err != nil {
			if !errors.Is(err, flag.ErrHelp) {
				fmt.Fprintln(a.stderr, "myco:", err)
			}
			fmt.Fprintln(a.stderr, cli.MCPUsage)
			return nil, nil, false
		}
		if fs.NArg() == 0 {
			return operands, command, true
		}
		operands, args = append(operands, fs.Arg(0)), fs.Args()[1:]
	}
}

// mcpList runs `myco mcp list [--profile NAME] [--config PATH]`: the profile's MCP servers,
// each started (as a session's start does) to list its tools, then ended.
func (a *app) mcpList(args []string) int {
	var o options
	operands, command, ok := a.parseMCP(mcpFlags("list", &o), args)
	if !ok {
		return exitUsage
	}
	if len(operands) > 0 || command != nil {
		fmt.Fprintln(a.stderr, cli.MCPUsage)
		return exitUsage
	}
	p, err := a.setup(o)
	if err != nil {
		return a.fail(err)
	}
	rp := newReaper(a.log)
	defer rp.Close()
	h, closeHosts, err := engine.MCPHosts(p, rp, a.log)
	if err != nil {
		return a.fail(err)
	}
	defer closeHosts()
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer cancel()
	wd, _ := os.Getwd()
	return cli.MCPList(ctx, a.std(), h, wd)
}

// mcpApprove runs `myco mcp approve [--yes] [DIR]` (revoke false) and `myco mcp revoke
// [DIR]`: the person's approval of the MCP servers that DIR's .mcp.json offers (the
// working directory by default), recorded in the profile, or taken back.
func (a *app) mcpApprove(args []string, revoke bool) int {
	var o options
	var yes bool
	name := "approve"
	if revoke {
		name = "revoke"
	}
	fs := mcpFlags(name, &o)
	if !revoke {
		fs.BoolVar(&yes, "yes", false, "")
	}
	operands, command, ok := a.parseMCP(fs, args)
	if !ok {
		return exitUsage
	}
	if len(operands) > 1 || command != nil {
		fmt.Fprintln(a.stderr, cli.MCPUsage)
		return exitUsage
	}
	dir, _ := os.Getwd()
	if len(operands) == 1 {
		dir = operands[0]
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return a.fail(err)
	}
	paths, err := a.paths(o)
	if err != nil {
		return a.fail(err)
	}
	// The config says which variables are credentials, which a project's server may
	// not read, and which names are configured servers'.
	cfg, err := config.Load(paths.ConfigFile, paths.ConfigNamed)
	if err != nil {
		return a.fail(err)
	}
	if err := paths.Ensure(); err != nil {
		return a.fail(err)
	}
	ps := engine.NewProjects(engine.ProjectsOptions{ApprovalsFile: paths.MCPApprovalsFile(), Config: cfg, LookupEnv: os.LookupEnv, Log: a.log})
	if revoke {
		found, err := ps.Revoke(dir)
		switch {
		case err != nil:
			return a.fail(err)
		case !found:
			fmt.Fprintln(a.stdout, termtext.Safe("no approval of "+dir+"'s MCP servers to revoke"))
		default:
			fmt.Fprintln(a.stdout, termtext.Safe("revoked: "+dir+"'s project MCP servers start for no new session; the sessions that run them keep them until they end"))
		}
		return exitOK
	}
	return cli.MCPApprove(a.std(), ps.Project(dir), yes, func(sum string) (hosts.ProjectOffer, error) { return ps.Approve(dir, sum) })
}

// mcpAdd runs `myco mcp add NAME [--host H] [--env K=V]... [--cwd DIR] -- COMMAND
// [ARGS...]` and `myco mcp add NAME --url URL [--header K=V]...`: a [mcp_servers.NAME]
// table appended to the profile's config.toml (see [config.AddMCPServer]).
func (a *app) mcpAdd(args []string) int {
	var o options
	var host, cwd, url string
	var env, headers []string
	fs := mcpFlags("add", &o)
	fs.StringVar(&host, "host", "", "")
	fs.StringVar(&cwd, "cwd", "", "")
	fs.StringVar(&url, "url", "", "")
	fs.Func("env", "", func(s string) error { env = append(env, s); return nil })
	fs.Func("header", "", func(s string) error { headers = append(headers, s); return nil })
	operands, command, ok := a.parseMCP(fs, args)
	if !ok {
		return exitUsage
	}
	usage := func(msg string) int {
		fmt.Fprintln(a.stderr, "myco mcp add:", msg)
		fmt.Fprintln(a.stderr, cli.MCPUsage)
		return exitUsage
	}
	if len(operands) != 1 {
		return usage("name one server")
	}
	s, err := config.NewMCPServer(operands[0], host, cwd, url, command, env, headers)
	if err != nil {
		return usage(err.Error())
	}
	paths, err := a.paths(o)
	if err != nil {
		return a.fail(err)
	}
	if host != "" && host != "local" {
		if err := engine.CheckSSHHost(host); err != nil {
			return a.fail(fmt.Errorf("--host %s: %w; add it there first, or leave --host out to run the server here", host, err))
		}
	}
	if !paths.ConfigNamed {
		if err := paths.Ensure(); err != nil {
			return a.fail(err)
		}
	}
	line, err := config.AddMCPServer(paths.ConfigFile, paths.ConfigNamed, s)
	if err != nil {
		return a.fail(err)
	}
	fmt.Fprintf(a.stdout, "added mcp server %s: %s:%d\n%s\n", s.Name, paths.ConfigFile, line, cli.MCPEditApplied)
	return exitOK
}

// mcpRemove runs `myco mcp remove NAME`: the [mcp_servers.NAME] table taken out of the
// profile's config.toml (see [config.RemoveMCPServer]).
func (a *app) mcpRemove(args []string) int {
	var o options
	operands, command, ok := a.parseMCP(mcpFlags("remove", &o), args)
	if !ok {
		return exitUsage
	}
	if len(operands) != 1 || command != nil {
		fmt.Fprintln(a.stderr, "myco mcp remove: name one server")
		fmt.Fprintln(a.stderr, cli.MCPUsage)
		return exitUsage
	}
	paths, err := a.paths(o)
	if err != nil {
		return a.fail(err)
	}
	if err := config.RemoveMCPServer(paths.ConfigFile, paths.ConfigNamed, operands[0]); err != nil {
		return a.fail(err)
	}
	fmt.Fprintf(a.stdout, "removed mcp server %s from %s\n%s\n", operands[0], paths.ConfigFile, cli.MCPEditApplied)
	return exitOK
}
