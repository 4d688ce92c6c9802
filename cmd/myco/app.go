package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"myco.dev/cli"
	"myco.dev/docs"
	"myco.dev/internal/logging"
	"myco.dev/profiles"
)

// app is one invocation of the binary.
type app struct {
	args   []string
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	getenv func(string) string
	// logs is how this process logs, and log its one logger, which every object gets.
	logs logging.Config
	log  *slog.Logger
}

// options are the parsed command-line flags.
type options struct {
	prompt    string
	promptSet bool
	model     string
	maxCost   float64 // --max-cost; 0 when not given
	profile   string
	// profileSet reports that --profile was given, even as "", which is then an error.
	profileSet bool
	config     string
	mode       string
	json       bool
	result     bool // --output-format json
	version    bool
	maxImage   int
	hostGrace  time.Duration
	hostIdle   time.Duration
	hostDir    string
	noDaemon   bool
	resume     string
	compact    string
	addr       string
	auth       string
	pprof      bool
	logLevel   string
	logFormat  string
	// approvalMode is --mode read-only|ask|workspace|full (or --approval-mode); allow are
	// the --allow rules.
	approvalMode string
	allow        []string
	set          []string // the flags given, by name
}

// Exit statuses: the front ends'.
const (
	exitOK    = cli.ExitOK
	exitError = cli.ExitError
	exitUsage = cli.ExitUsage
)

func (a *app) parse() (options, error) {
	var o options
	fs := flag.NewFlagSet("myco", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are printed once, by main, on one line
	fs.Usage = func() {}
	defineFlags(fs, &o)
	if err := fs.Parse(a.args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return o, err
		}
		return o, fmt.Errorf("%w%s (see myco --help)", err, cli.DidYouMean(fs, err))
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected argument %q (quote the prompt: myco -p %q)", fs.Arg(0), strings.Join(fs.Args(), " "))
	}
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "mode" && o.mode == "" && o.approvalMode != "" {
			o.set = append(o.set, "approval-mode") // --mode workspace: an approval mode
			return
		}
		o.set = append(o.set, f.Name)
	})
	return o, modeConflict(o)
}

// defineFlags defines myco's flags on fs, parsed into o.
func defineFlags(fs *flag.FlagSet, o *options) {
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
	fs.Func("mode", "`MODE`: server (default), cli or host; or, with -p, the chat or the server, the approval mode of new sessions: read-only, ask, workspace or full (see docs/security.md)", func(s string) error {
		switch s {
		case "read-only", "ask", "workspace", "full":
			o.approvalMode = s
		default:
			o.mode = s
		}
		return nil
	})
	fs.Func("approval-mode", "the approval `MODE` of new sessions: read-only, ask, workspace or full (the same as --mode MODE)", func(s string) error {
		switch s {
		case "read-only", "ask", "workspace", "full":
			o.approvalMode = s
			return nil
		}
		return fmt.Errorf("want read-only, ask, workspace or full, not %q", s)
	})
	fs.Func("allow", "allow the calls `RULE` matches without asking (repeatable): bash(go test *), edit(src/**), mcp(server/tool), a tool's name", func(s string) error {
		o.allow = append(o.allow, s)
		return nil
	})
	fs.StringVar(&o.addr, "addr", "", "the server's loopback `ADDRESS` (default $MYCO_ADDR, else "+profiles.DefaultAddr+"; port 0 picks one)")
	fs.BoolVar(&o.pprof, "pprof", false, "the server: serve Go's profiler (net/http/pprof) at /debug/pprof/ and at each profile's /profiles/NAME/debug/pprof/, behind the same checks as every page")
	fs.StringVar(&o.auth, "auth", "", "how the server tells its user: `HOW` is owner (the connecting socket's user id; the default where the system tells it) or token (a secret in a cookie; see docs/security.md)")
	fs.StringVar(&o.resume, "resume", "", "with -p or --mode cli: continue the saved session `ID`, or last, the one used last (live tools are not restored)")
	fs.StringVar(&o.compact, "compact", "", "compact the saved session `ID` into a successor thread and exit")
	fs.BoolVar(&o.json, "json", false, "with -p: print the turn's events as NDJSON on stdout (the same as --output-format stream-json)")
	fs.Func("output-format", "with -p: `FORMAT` of stdout: text (the answer, the default), json (one result object at the end: status, answer, session id, usage, duration, exit status) or stream-json (every event, one JSON object a line)", func(s string) error {
		switch s {
		case "text":
		case "json":
			o.result = true
		case "stream-json":
			o.json = true
		default:
			return fmt.Errorf("want text, json or stream-json, not %q", s)
		}
		return nil
	})
	fs.Func("max-cost", "with -p: the budget of the session's tree (`AMOUNT`, in the money of the catalog's prices): the turn stops at its next model request once the session and its children cost that much (exit status 7)", func(s string) error {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || !(v > 0) || math.IsInf(v, 0) {
			return fmt.Errorf("want an amount above 0, such as 0.50, not %q", s)
		}
		o.maxCost = v
		return nil
	})
	fs.BoolVar(&o.version, "version", false, "print the version and exit")
	fs.IntVar(&o.maxImage, "max-image-base64-bytes", 5<<20, "with --mode host: the largest image view_image returns, measured as base64 (`N` bytes)")
	fs.DurationVar(&o.hostGrace, "host-grace", 30*time.Minute, "with --mode host: how long the host daemon keeps a dropped controller's bash sessions (`DURATION`), when it starts one")
	fs.DurationVar(&o.hostIdle, "host-idle", 10*time.Second, "with --mode host: the host daemon exits after `DURATION` with nothing to keep, when it starts one")
	fs.StringVar(&o.hostDir, "host-dir", "", "with --mode host: the host daemon's private `DIR` (default $TMPDIR/myco-UID, else /tmp/myco-UID)")
	fs.BoolVar(&o.noDaemon, "no-daemon", false, "with --mode host: serve in this process, without the host daemon (processes end when the connection does)")
	fs.StringVar(&o.logLevel, "log-level", "", "the least `LEVEL` logged: debug, info, warn or error (default $MYCO_LOG_LEVEL, else info; warn for --mode host)")
	fs.StringVar(&o.logFormat, "log-format", "", "the log's `FORMAT`: text or json, one object a line (default $MYCO_LOG_FORMAT, else text). The server and --mode host log to stderr, -p and the chat to the profile's myco.log")
}

// runs names the ways myco runs that a user picks, and the flags that mean something in
// each; a flag given where it means nothing is a usage error rather than silently ignored.
var runs = []struct {
	name  string // as the error says it
	flags []string
}{
	{"-p", []string{"p", "model", "profile", "config", "json", "output-format", "resume", "log-level", "log-format", "approval-mode", "allow", "max-cost"}},
	{"--compact", []string{"compact", "model", "profile", "config", "log-level", "log-format"}},
	{"the server", []string{"mode", "addr", "auth", "pprof", "model", "profile", "config", "log-level", "log-format"}},
	{"--mode cli", []string{"mode", "model", "profile", "config", "resume", "log-level", "log-format", "approval-mode", "allow"}},
	{"--mode host", []string{"mode", "max-image-base64-bytes", "host-grace", "host-idle", "host-dir", "no-daemon", "log-level", "log-format"}},
}

// modeConflict refuses flags that do not go with the way o runs myco: -p with --mode host,
// --addr with -p, --json with the chat. The internal modes (the host daemon, a profile
// worker) are started by myco itself and are not checked; --version goes with anything.
func modeConflict(o options) error {
	var run string
	switch {
	case o.version:
		return nil
	case o.promptSet && o.compact != "":
		return errors.New("--compact and -p do not go together; compact first, then resume with -p TEXT --resume ID")
	case o.promptSet:
		run = "-p"
	case o.compact != "":
		run = "--compact"
	case o.mode == "" || o.mode == "server":
		run = "the server"
	case o.mode == "cli" || o.mode == "host":
		run = "--mode " + o.mode
	default:
		return nil
	}
	allowed := func(run, flag string) bool {
		for _, r := range runs {
			if r.name == run {
				return slices.Contains(r.flags, flag)
			}
		}
		return false
	}
	for _, f := range o.set {
		if allowed(run, f) {
			continue
		}
		var goes []string
		for _, r := range runs {
			if slices.Contains(r.flags, f) {
				goes = append(goes, r.name)
			}
		}
		switch {
		case f == "mode":
			return fmt.Errorf("%s and --mode %s are two ways to run myco; pick one", run, o.mode)
		case f == "resume" && run == "the server":
			return errors.New("--resume needs a prompt (myco -p TEXT --resume ID) or the chat (myco --mode cli --resume ID)")
		}
		return fmt.Errorf("--%s goes with %s, not with %s", f, strings.Join(goes, " or "), run)
	}
	return nil
}

func (a *app) main() int {
	if len(a.args) > 0 && a.args[0] == "hosts" {
		if !a.startLog(options{}, slog.LevelWarn) {
			return exitUsage
		}
		return a.hostsCmd(a.args[1:])
	}
	if len(a.args) > 0 && a.args[0] == "approve-link" {
		return a.approveLinkCmd(a.args[1:])
	}
	if len(a.args) > 0 && a.args[0] == "mcp" {
		// The listing says why a server failed; the log would say it again.
		if !a.startLog(options{}, slog.LevelError) {
			return exitUsage
		}
		return a.mcpCmd(a.args[1:])
	}
	if len(a.args) > 0 && isHelp(a.args[0]) {
		return a.help(a.args[1:])
	}
	o, err := a.parse()
	if errors.Is(err, flag.ErrHelp) {
		return a.help(nil)
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
		fmt.Fprintf(a.stdout, "myco %s\n", buildInfo())
		return exitOK
	}
	// The terminal modes log to a file once their profile is known (see a.terminal), and
	// --mode host, whose stderr its controller shows, warnings and errors only.
	def := slog.LevelInfo
	if o.mode == "host" || o.mode == "cli" || o.promptSet || o.compact != "" {
		def = slog.LevelWarn
	}
	if !a.startLog(o, def) {
		return exitUsage
	}
	switch {
	case o.compact != "":
		return a.compactCmd(o)
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

// startLog makes the process's logger from o's log flags and the environment: on stderr,
// at def unless a level was asked for. A bad flag or variable is reported as a usage error.
func (a *app) startLog(o options, def slog.Level) bool {
	var err error
	if a.logs, err = logging.Parse(o.logLevel, o.logFormat, a.getenv); err != nil {
		fmt.Fprintln(a.stderr, "myco:", err)
		return false
	}
	a.setLog(a.logs.Logger(a.stderr, def))
	return true
}

// setLog makes log the process's logger, and slog's default, so that nothing this process
// logs goes elsewhere.
func (a *app) setLog(log *slog.Logger) {
	a.log = log
	slog.SetDefault(log)
}

// logArgs are the log flags given on o's command line, for the processes this one starts
// (a profile's worker, the host daemon); the environment reaches them anyway.
func logArgs(o options) []string {
	var args []string
	if o.logLevel != "" {
		args = append(args, "--log-level", o.logLevel)
	}
	if o.logFormat != "" {
		args = append(args, "--log-format", o.logFormat)
	}
	return args
}

// fail prints a one-line error (see [cli.Fail]) and returns the error status.
func (a *app) fail(err error) int { return cli.Fail(a.stderr, err) }

// isHelp reports whether arg asks for help.
func isHelp(arg string) bool {
	switch arg {
	case "-h", "-help", "--help", "help":
		return true
	}
	return false
}

// help runs myco --help [TOPIC] (see [cli.Help]) with the usage and the flags.
func (a *app) help(args []string) int {
	var flags strings.Builder
	fs := flag.NewFlagSet("myco", flag.ContinueOnError)
	defineFlags(fs, &options{})
	fs.SetOutput(&flags)
	fs.PrintDefaults()
	return cli.Help(a.std(), args, docs.FS, cli.Usage, flags.String())
}
