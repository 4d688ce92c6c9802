package hostd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"myco.dev/hosts/proto"
	"myco.dev/hosts/sandbox"
	"myco.dev/hosts/tools"
	"myco.dev/internal/privdir"
)

// Host is what a host process knows of itself and gives the daemon it serves with: what
// its hello says and what its tools run with. The caller reads it from its environment;
// this package reads none.
type Host struct {
	Version string // the binary's version, for the hello
	// Build is the binary's identity, which names the daemon's socket, so that two
	// different builds never share a daemon; empty means Version.
	Build string
	Shell string   // the user's shell ($SHELL), for the hello
	Env   []string // the host's environment; bash commands get it without the ssh session's variables
	// Reaper, when not nil, makes bash's process groups die with the process however it
	// ends (see myco.dev/internal/reaper). The caller owns it and closes it after the run.
	Reaper tools.Reaper
	// Grace and IdleExit are the daemon's (see [Options]); zero means the default.
	Grace    time.Duration
	IdleExit time.Duration
	// Snapshots is the directory of the host's snapshot store (see [Options]): a
	// persistent one of this user on this host (see [SnapshotDir]); "" means none.
	Snapshots string
}

func (h Host) build() string {
	if h.Build != "" {
		return h.Build
	}
	return h.Version
}

// HostOptions configures [RunHost].
type HostOptions struct {
	// In and Out are the connection to the controller: ssh's stdin and stdout. Out
	// carries the protocol only; logs go to Log.
	In  io.Reader
	Out io.Writer
	// MaxImageBase64Bytes is the controller's image cap, for view_image; it must be
	// positive.
	MaxImageBase64Bytes int
	// NoDaemon, when set, says why the host serves in this process without the daemon
	// (the controller is told); every process then ends with the connection.
	NoDaemon string
	// Dir is the daemon's directory (see [DefaultDir]): its socket, start lock, log and
	// pid file.
	Dir string
	// DaemonArgs are the arguments that make this binary ([os.Executable]) run
	// [RunDaemon] with the same Dir, Grace and IdleExit, when no daemon answers.
	DaemonArgs []string
	Host       Host
	Log        *slog.Logger // nil means slog.Default()
}

// RunHost runs `myco --mode host`: a thin proxy between In and Out and the per-user host
// daemon in Dir, which it starts when none answers ([Proxy]). When no daemon can be had,
// or with NoDaemon, it serves the tools in this process, as before the daemon: then every
// process ends with the connection, and the hello says why.
//
// RunHost returns nil when the controller ended the connection, and an error when it
// ended otherwise (a protocol error, the daemon's fatal error frame), which the caller
// prints.
func RunHost(ctx context.Context, o HostOptions) error {
	if o.MaxImageBase64Bytes <= 0 {
		return fmt.Errorf("host: the image cap must be positive, not %d", o.MaxImageBase64Bytes)
	}
	log := o.Log
	if log == nil {
		log = slog.Default()
	}
	why := o.NoDaemon
	if why == "" {
		err := runProxy(ctx, o, log)
		if err == nil || !errors.Is(err, ErrNoDaemon) {
			return err
		}
		log.Warn("serving in this process, without the host daemon: processes end with the connection", "err", err)
		why = err.Error()
	}
	d := newDaemon(o.Host, log, why, "")
	defer d.Close()
	return d.Serve(ctx, o.In, o.Out, &proto.Proxy{MaxImageBase64Bytes: o.MaxImageBase64Bytes})
}

// runProxy connects In and Out to the daemon, starting it as this binary with DaemonArgs.
func runProxy(ctx context.Context, o HostOptions, log *slog.Logger) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("%w: find the running myco: %w", ErrNoDaemon, err)
	}
	return Proxy(ctx, o.In, o.Out, ProxyOptions{
		Dir: o.Dir, Socket: DaemonSocket(o.Host.build()), MaxImageBase64Bytes: o.MaxImageBase64Bytes, Log: log,
		Daemon: append([]string{exe}, o.DaemonArgs...),
	})
}

// DefaultDir is the host daemon's directory when none is given: myco-UID in tmp (the
// value of $TMPDIR, when absolute) or /tmp, as tmux does. Not $XDG_RUNTIME_DIR, which
// logind removes when the user's last session ends, the very drop the daemon is there to
// outlive; not the home directory, which may be shared by several machines over NFS.
func DefaultDir(tmp string) string { return privdir.Tmp(tmp) }

// DaemonOptions configures [RunDaemon].
type DaemonOptions struct {
	// Dir is the daemon's directory, made private if missing and refused when it is not
	// this user's alone.
	Dir string
	// Ready, when not nil, is told once the daemon listens, then closed: the pipe on
	// [ReadyFD] of a daemon that [Proxy] started.
	Ready io.WriteCloser
	Host  Host
	Log   *slog.Logger // nil means slog.Default()
}

// RunDaemon runs the per-user host daemon (`myco --mode host-daemon`, which a proxy
// starts): it listens on its socket in Dir, writes its pid file, tells the proxy on Ready,
// and serves until ctx ends or it has been idle for IdleExit. The pid file says which
// process to signal: ending ctx (on SIGTERM) ends the daemon and everything it runs.
func RunDaemon(ctx context.Context, o DaemonOptions) error {
	log := o.Log
	if log == nil {
		log = slog.Default()
	}
	if err := privateDir(o.Dir); err != nil {
		return err
	}
	sock := filepath.Join(o.Dir, DaemonSocket(o.Host.build()))
	l, err := net.Listen("unix", sock)
	if err != nil {
		return fmt.Errorf("host daemon: %w", err)
	}
	os.Chmod(sock, 0o600)
	pidFile := strings.TrimSuffix(sock, ".sock") + ".pid"
	pid := fmt.Appendf(nil, "%d\n", os.Getpid())
	os.WriteFile(pidFile, pid, 0o600)
	defer func() {
		if b, _ := os.ReadFile(pidFile); string(b) == string(pid) { // not a successor's
			os.Remove(pidFile)
		}
	}()
	if o.Ready != nil {
		fmt.Fprintf(o.Ready, "listening on %s as pid %d\n", sock, os.Getpid())
		o.Ready.Close()
	}
	d := newDaemon(o.Host, log, "", o.Dir)
	defer d.Close()
	log.Info("host daemon", "instance", d.Instance(), "pid", os.Getpid(), "socket", sock, "grace", o.Host.Grace)
	return d.Run(ctx, l, func() func() {
		unlock, err := lockDir(o.Dir)
		if err != nil {
			log.Warn("start lock", "err", err)
			return func() {}
		}
		return unlock
	})
}

// newDaemon builds the host daemon's tools: bash and the editor shared by every
// connection, view_image per connection with its controller's image cap, and the MCP
// servers controllers run here. noDaemon, when
// set, is why the host serves in this process instead of its daemon: the hello tells the
// controller.
func newDaemon(h Host, log *slog.Logger, noDaemon, daemonDir string) *Daemon {
	dir, _ := os.Getwd()
	fence, hidden := hostFence(daemonDir, h.Env)
	bash := tools.NewBash(tools.BashOptions{Env: hostEnv(h.Env), Reaper: h.Reaper})
	return NewDaemon(Options{
		Tools: []tools.Tool{bash, tools.NewEditor(tools.EditorOptions{Dirs: bash})},
		ConnTools: func(n int) []tools.Tool {
			return []tools.Tool{tools.NewImage(tools.ImageOptions{MaxBase64Bytes: n, Dirs: bash})}
		},
		Hello: proto.Hello{Version: h.Version, OS: runtime.GOOS, Arch: runtime.GOARCH, Shell: h.Shell, Dir: dir, NoDaemon: noDaemon},
		Grace: h.Grace, IdleExit: h.IdleExit,
		MCP:       MCPOptions{Env: h.Env, Reaper: h.Reaper, Version: h.Version},
		Snapshots: h.Snapshots,
		Fence:     fence, Hidden: hidden,
		Log: log,
	})
}

// SnapshotDir is the directory of the host's snapshot store, given the values of
// $XDG_STATE_HOME, $HOME and the host's name: STATE/myco/snapshots/HOST, where STATE is
// $XDG_STATE_HOME when absolute, else ~/.local/state. Persistent (a reboot keeps it, as
// undo needs), private to the user, and per host name, since a home directory may be
// shared by several machines over NFS (each captures its own directories). "" when
// neither is absolute.
func SnapshotDir(stateHome, home, hostname string) string {
	base := ""
	switch {
	case filepath.IsAbs(stateHome):
		base = stateHome
	case filepath.IsAbs(home):
		base = filepath.Join(home, ".local", "state")
	default:
		return ""
	}
	if hostname == "" || strings.ContainsAny(hostname, "/\x00") || hostname == "." || hostname == ".." {
		hostname = "host"
	}
	return filepath.Join(base, "myco", "snapshots", hostname)
}

// hostFence is the host's sandbox, through this binary (whose main calls sandbox.Main
// first), and what a fenced command may not read here: the daemon's directory, and
// myco's home ($MYCO_HOME, else ~/.myco) when there is one. A nil fence: none.
func hostFence(daemonDir string, env []string) (*sandbox.Fence, []string) {
	f, err := sandbox.New(sandbox.Options{})
	if err != nil {
		return nil, nil
	}
	var hidden []string
	if daemonDir != "" {
		hidden = append(hidden, daemonDir)
	}
	home := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "MYCO_HOME="); ok && v != "" {
			home = v
		}
	}
	if home == "" {
		if u, err := os.UserHomeDir(); err == nil {
			home = filepath.Join(u, ".myco")
		}
	}
	if _, err := os.Stat(home); err == nil {
		hidden = append(hidden, home)
	}
	return f, hidden
}

// hostEnv is the environment of the host's bash commands: the host's own, without the
// variables of the ssh session that started it. They are stale once the daemon outlives
// that session, and on Debian and Ubuntu their presence makes bash read ~/.bashrc for
// every non-interactive command.
func hostEnv(env []string) []string {
	return slices.DeleteFunc(slices.Clone(env), func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		return name == "SSH_CLIENT" || name == "SSH2_CLIENT" || name == "SSH_CONNECTION" || name == "SSH_TTY"
	})
}
