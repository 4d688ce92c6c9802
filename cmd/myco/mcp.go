package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"myco.dev/cli"
	"myco.dev/engine"
)

// mcpCmd runs `myco mcp list [--profile NAME] [--config PATH]`: the profile's MCP servers,
// each started (as a session's start does) to list its tools, then ended.
func (a *app) mcpCmd(args []string) int {
	var o options
	fs := flag.NewFlagSet("myco mcp", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Func("profile", "", func(s string) error {
		o.profile, o.profileSet = s, true
		return nil
	})
	fs.StringVar(&o.config, "config", "", "")
	var rest []string
	if len(args) > 0 {
		rest = args[1:] // the flags follow the subcommand
	}
	if err := fs.Parse(rest); err != nil || fs.NArg() > 0 || len(args) == 0 {
		if err != nil && !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(a.stderr, "myco:", err)
		}
		fmt.Fprintln(a.stderr, "usage: myco mcp list [--profile NAME] [--config PATH]")
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
	return cli.MCPCommand(ctx, a.std(), args[:1], h)
}
