package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"myco/internal/termtext"
)

// app is one invocation of the binary.
type app struct {
	args   []string
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	getenv func(string) string
}

// options are the parsed command-line flags.
type options struct {
	prompt    string
	promptSet bool
	model     string
	profile   string
	// profileSet reports that --profile was given, even as "", which is then an error.
	profileSet bool
	config     string
	mode       string
	json       bool
	version    bool
	maxImage   int
	hostGrace  time.Duration
	hostIdle   time.Duration
	hostDir    string
	noDaemon   bool
	resume     string
	compact    string
	addr       string
	socket     string
}

// Exit statuses.
const (
	exitOK        = 0
	exitError     = 1
	exitUsage     = 2
	exitInterrupt = 130 // 128 + SIGINT
)

const usageText = `myco: a coding agent server

Usage:
  myco [--addr 127.0.0.1:8080]            serve the browser UI on loopback; prints the URL to open
  myco -p PROMPT [--model KEY] [--json]   one turn on a new durable session; the answer on stdout
  myco -p - ...                           read the prompt from standard input
  myco -p PROMPT --resume ID              continue a saved session
  myco --compact ID                       compact a saved session into a successor thread
  myco --mode cli [--resume ID]           terminal chat on a durable session (myco --help cli)
  myco --mode host                        remote host runtime (NDJSON on stdin/stdout)
  myco hosts [check|install ALIAS]        the remote hosts of ~/.ssh/config; check one, or copy myco there
  myco --version

Flags:
`

func (a *app) parse() (options, error) {
	var o options
	fs := flag.NewFlagSet("myco", flag.ContinueOnError)
	fs.SetOutput(a.stderr)
	fs.Usage = func() {
		fmt.Fprint(a.stderr, usageText)
		fs.PrintDefaults()
	}
	fs.Func("p", "run one prompt (`PROMPT`, or - to read it from standard input) and exit", func(s string) error {
		o.prompt, o.promptSet = s, true
		return nil
	})
	fs.StringVar(&o.model, "model", "", "model `KEY` from the catalog (default: config model, else the only one)")
	fs.Func("profile", "profile `NAME` (default: $MYCO_PROFILE, else default)", func(s string) error {
		o.profile, o.profileSet = s, true
		return nil
	})
	fs.StringVar(&o.config, "config", "", "config file `PATH` (default: $MYCO_CONFIG, else the profile's config.toml)")
	fs.StringVar(&o.mode, "mode", "", "`MODE`: server (default), cli or host")
	fs.StringVar(&o.addr, "addr", "", "the server's loopback `ADDRESS` (default "+defaultAddr+"; port 0 picks one)")
	fs.StringVar(&o.socket, "socket", "", "with --mode profile-worker: the Unix socket `PATH` to serve on (the server starts its workers itself)")
	fs.StringVar(&o.resume, "resume", "", "with -p or --mode cli: continue the saved session `ID` (live tools are not restored)")
	fs.StringVar(&o.compact, "compact", "", "compact the saved session `ID` into a successor thread and exit")
	fs.BoolVar(&o.json, "json", false, "with -p: print the turn's events as NDJSON on stdout")
	fs.BoolVar(&o.version, "version", false, "print the version and exit")
	fs.IntVar(&o.maxImage, "max-image-base64-bytes", 5<<20, "with --mode host: the largest image view_image returns, measured as base64 (`N` bytes)")
	fs.DurationVar(&o.hostGrace, "host-grace", 30*time.Minute, "with --mode host: how long the host daemon keeps a dropped controller's bash sessions (`DURATION`), when it starts one")
	fs.DurationVar(&o.hostIdle, "host-idle", 10*time.Second, "with --mode host: the host daemon exits after `DURATION` with nothing to keep, when it starts one")
	fs.StringVar(&o.hostDir, "host-dir", "", "with --mode host: the host daemon's private `DIR` (default $TMPDIR/myco-UID, else /tmp/myco-UID)")
	fs.BoolVar(&o.noDaemon, "no-daemon", false, "with --mode host: serve in this process, without the host daemon (processes end when the connection does)")
	if err := fs.Parse(a.args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected argument %q (quote the prompt: myco -p %q)", fs.Arg(0), strings.Join(fs.Args(), " "))
	}
	return o, nil
}

func (a *app) main() int {
	if len(a.args) > 0 && a.args[0] == "hosts" {
		return a.hostsCmd(a.args[1:])
	}
	if len(a.args) == 2 && strings.TrimLeft(a.args[0], "-") == "help" && a.args[1] == "cli" {
		fmt.Fprint(a.stdout, chatHelp)
		return exitOK
	}
	o, err := a.parse()
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		fmt.Fprintln(a.stderr, "myco:", err)
		return exitUsage
	}
	switch {
	case o.profileSet && o.profile == "":
		fmt.Fprintln(a.stderr, "myco: --profile needs a name (letters, digits, '-' and '_'); leave it out for $MYCO_PROFILE or default")
		return exitUsage
	case o.version:
		fmt.Fprintf(a.stdout, "myco %s\n", version)
		return exitOK
	case o.compact != "" && o.promptSet:
		fmt.Fprintln(a.stderr, "myco: --compact and -p do not go together; compact first, then resume with -p TEXT --resume ID")
		return exitUsage
	case o.compact != "":
		return a.compactCmd(o)
	case o.resume != "" && !o.promptSet && o.mode != "cli":
		fmt.Fprintln(a.stderr, "myco: --resume needs a prompt (myco -p TEXT --resume ID) or the chat (myco --mode cli --resume ID)")
		return exitUsage
	case o.promptSet:
		return a.oneShot(o)
	}
	switch o.mode {
	case "host":
		return a.hostMode(o)
	case "host-daemon":
		return a.hostDaemon(o)
	case "cli":
		return a.chat(o)
	case "", "server":
		return a.serve(o)
	case "profile-worker":
		return a.profileWorker(o)
	default:
		fmt.Fprintf(a.stderr, "myco: unknown mode %q (want server, cli or host)\n", o.mode)
		return exitUsage
	}
}

// fail prints a one-line error and returns the error status.
func (a *app) fail(err error) int {
	fmt.Fprintln(a.stderr, "myco:", termtext.Safe(oneLine(err.Error())))
	return exitError
}

// oneLine keeps an error on one line, unless it carries a block to paste (an example
// config), which must stay intact.
func oneLine(s string) string {
	if strings.Contains(s, "\n\n") {
		return s
	}
	return strings.ReplaceAll(strings.TrimSpace(s), "\n", "; ")
}
