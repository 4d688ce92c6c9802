package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"

	"myco.dev/hosts/hostd"
	"myco.dev/hosts/proto"
	"myco.dev/hosts/tools"
	"myco.dev/internal/privdir"
	"myco.dev/internal/reaper"
)

// hostMode runs myco --mode host: a thin proxy between stdin and stdout and the per-user
// host daemon, which it starts when none answers. When no daemon can be had (or with
// --no-daemon) it serves the tools in this process, as before the daemon: then every
// process ends with the connection. Logs go to stderr, never to stdout.
func (a *app) hostMode(o options) int {
	if o.maxImage <= 0 {
		fmt.Fprintf(a.stderr, "myco: --max-image-base64-bytes must be positive, not %d\n", o.maxImage)
		return exitUsage
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	log := slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	why := "--no-daemon was given" // the controller is told, and tells its user
	if !o.noDaemon {
		err := a.proxy(ctx, o, log)
		if err == nil {
			return exitOK
		}
		if !errors.Is(err, hostd.ErrNoDaemon) {
			fmt.Fprintln(a.stderr, "myco:", err)
			return exitError
		}
		log.Warn("serving in this process, without the host daemon: processes end with the connection", "err", err)
		why = err.Error()
	}
	rp := newReaper(log)
	defer rp.Close()
	d := a.newDaemon(o, rp, log, why)
	defer d.Close()
	if err := d.Serve(ctx, a.stdin, a.stdout, &proto.Proxy{MaxImageBase64Bytes: o.maxImage}); err != nil {
		fmt.Fprintln(a.stderr, "myco:", err)
		return exitError
	}
	return exitOK
}

func (a *app) proxy(ctx context.Context, o options, log *slog.Logger) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("%w: find the running myco: %w", hostd.ErrNoDaemon, err)
	}
	dir := a.hostDir(o)
	return hostd.Proxy(ctx, a.stdin, a.stdout, hostd.ProxyOptions{
		Dir: dir, Socket: hostd.DaemonSocket(version), MaxImageBase64Bytes: o.maxImage, Log: log,
		Daemon: []string{exe, "--mode", "host-daemon", "--host-dir", dir,
			"--host-grace", o.hostGrace.String(), "--host-idle", o.hostIdle.String()},
	})
}

// hostDir is the host daemon's directory: --host-dir, else myco-UID in $TMPDIR or /tmp,
// as tmux does. Not $XDG_RUNTIME_DIR, which logind removes when the user's last session
// ends, the very drop the daemon is there to outlive; not the home directory, which may be
// shared by several machines over NFS.
func (a *app) hostDir(o options) string {
	if o.hostDir != "" {
		return o.hostDir
	}
	return privdir.Tmp(a.getenv("TMPDIR"))
}

// hostDaemon runs the per-user host daemon (myco --mode host-daemon, started by a proxy):
// it listens on its socket, tells the proxy on file descriptor 3, and serves until it has
// been idle for --host-idle.
func (a *app) hostDaemon(o options) int {
	log := slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	dir := a.hostDir(o)
	if err := hostd.PrivateDir(dir); err != nil {
		return a.fail(err)
	}
	sock := filepath.Join(dir, hostd.DaemonSocket(version))
	l, err := net.Listen("unix", sock)
	if err != nil {
		return a.fail(fmt.Errorf("host daemon: %w", err))
	}
	os.Chmod(sock, 0o600)
	// The pid file says which process to signal (SIGTERM ends it and everything it runs).
	pidFile := strings.TrimSuffix(sock, ".sock") + ".pid"
	pid := fmt.Appendf(nil, "%d\n", os.Getpid())
	os.WriteFile(pidFile, pid, 0o600)
	defer func() {
		if b, _ := os.ReadFile(pidFile); string(b) == string(pid) { // not a successor's
			os.Remove(pidFile)
		}
	}()
	if ready := os.NewFile(3, "ready"); ready != nil {
		fmt.Fprintf(ready, "listening on %s as pid %d\n", sock, os.Getpid())
		ready.Close()
	}
	// The proxy that started it may go at any time; only SIGTERM and SIGINT end it.
	signal.Ignore(syscall.SIGHUP, syscall.SIGPIPE)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	rp := newReaper(log)
	defer rp.Close()
	d := a.newDaemon(o, rp, log, "")
	defer d.Close()
	log.Info("host daemon", "instance", d.Instance(), "pid", os.Getpid(), "socket", sock, "grace", o.hostGrace)
	err = d.Run(ctx, l, func() func() {
		unlock, err := hostd.LockDir(dir)
		if err != nil {
			log.Warn("start lock", "err", err)
			return func() {}
		}
		return unlock
	})
	if err != nil {
		return a.fail(err)
	}
	return exitOK
}

// newDaemon builds the host daemon's tools: bash and the editor shared by every
// connection, view_image per connection with its controller's image cap.
// Its bash processes die with this process, through rp. noDaemon, when set, is why the host
// serves in this process instead of its daemon: the hello tells the controller.
func (a *app) newDaemon(o options, rp *reaper.Reaper, log *slog.Logger, noDaemon string) *hostd.Daemon {
	dir, _ := os.Getwd()
	bash := tools.NewBash(tools.BashOptions{Env: hostEnv(os.Environ()), Reaper: rp})
	return hostd.NewDaemon(hostd.DaemonOptions{
		Tools: []tools.Tool{bash, tools.NewEditor(tools.EditorOptions{Dirs: bash})},
		ConnTools: func(n int) []tools.Tool {
			return []tools.Tool{tools.NewImage(tools.ImageOptions{MaxBase64Bytes: n, Dirs: bash})}
		},
		Hello: proto.Hello{Version: version, OS: runtime.GOOS, Arch: runtime.GOARCH, Shell: a.getenv("SHELL"), Dir: dir, NoDaemon: noDaemon},
		Grace: o.hostGrace, IdleExit: o.hostIdle,
		Log: log,
	})
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
