// Command myco is the coding-agent server, its one-shot prompt and terminal modes, and the
// remote host runtime. It is the only package that knows every other: it parses flags,
// resolves the profile and config once, builds the objects below and starts them.
package main

import (
	"os"
)

// version is the binary's version, set at build time with -ldflags "-X main.version=…".
var version = "0.1.0-dev"

func main() { os.Exit(run()) }

// run is main without the exit, so tests can run the binary in-process (testscript).
func run() int {
	return (&app{
		args:   os.Args[1:],
		stdin:  os.Stdin,
		stdout: os.Stdout,
		stderr: os.Stderr,
		getenv: os.Getenv,
	}).main()
}
