// Command myco is the coding-agent server, its one-shot prompt and terminal modes, and the
// remote host runtime. It is the only package that knows every other: it parses flags,
// resolves the profile, reads the environment once and wires the packages below into each
// mode's process (the server, a profile's worker, the host, the terminal modes); what a
// mode does is theirs.
package main

import (
	"os"
	"runtime"

	"myco.dev/hosts/sandbox"
	"myco.dev/internal/build"
	"myco.dev/internal/reaper"
)

// version is the binary's release version, set at build time with -ldflags
// "-X main.version=…"; [buildInfo] adds the revision and the build's identity.
var version = ""

// buildInfo tells which build this is, for --version, the host hello and the host
// daemon's socket (see package build).
func buildInfo() build.Info {
	exe := "/proc/self/exe" // this binary, even after an upgrade replaced its file
	if runtime.GOOS != "linux" {
		exe, _ = os.Executable()
	}
	return build.Read(version, exe)
}

func main() { os.Exit(run()) }

// run is main without the exit, so tests can run the binary in-process (testscript).
func run() int {
	// The reaper (see internal/reaper) comes first: it must not read flags, config or .env.
	// A sandboxed command's fence (see hosts/sandbox) comes before anything else too: it
	// restricts itself and executes the command, or exits.
	sandbox.Main()
	if len(os.Args) == 3 && os.Args[1] == "--mode" && os.Args[2] == "reaper" {
		return reaper.Main(os.Stdin, os.Stdout)
	}
	// No process of the user's can read this one's memory or environment through /proc
	// (a tool command reading /proc/$PPID/environ for a key), nor attach a debugger.
	undumpable()
	return (&app{
		args:   os.Args[1:],
		stdin:  os.Stdin,
		stdout: os.Stdout,
		stderr: os.Stderr,
		getenv: os.Getenv,
	}).main()
}
