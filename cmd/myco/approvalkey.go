package main

import (
	"fmt"

	"myco.dev/engine"
	"myco.dev/profiles"
)

// approveLinkCmd is `myco approve-link`: it prints the link that gives a browser the
// approval capability, for the server running on MYCO_HOME (or, with none running, the
// link's path, to open on the server's address).
func (a *app) approveLinkCmd(args []string) int {
	if len(args) > 0 {
		fmt.Fprintln(a.stderr, "usage: myco approve-link")
		return exitUsage
	}
	paths, err := a.paths(options{})
	if err != nil {
		return a.fail(err)
	}
	key, err := engine.ApprovalKey(paths.Home)
	if err != nil {
		return a.fail(err)
	}
	base := profiles.ServingURL(paths.Home)
	if base == "" {
		base = "http://127.0.0.1:PORT/profiles/" + paths.Profile + "/"
	}
	fmt.Fprintln(a.stdout, base+"approve?key="+key)
	fmt.Fprintln(a.stderr, "myco: open this link once in the browser you answer approvals from; it keeps the key in a cookie. Anyone with the link can answer approvals: do not paste it where a command could read it.")
	return exitOK
}
