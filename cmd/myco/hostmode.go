package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"myco.dev/hosts/hostd"
	"myco.dev/internal/reaper"
)

// hostMode runs myco --mode host (see [hostd.RunHost]): a thin proxy between stdin and
// stdout and the per-user host daemon, which it starts as myco --mode host-daemon when
// none answers, or the tools served in this process. Logs go to stderr, never to stdout.
func (a *app) hostMode(o options) int {
	if o.maxImage <= 0 {
		fmt.Fprintf(a.stderr, "myco: --max-image-base64-bytes must be positive, not %d\n", o.maxImage)
		return exitUsage
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	log := a.log
	rp := newReaper(log) // started only if the tools run in this process
	defer rp.Close()
	var noDaemon string
	if o.noDaemon {
		noDaemon = "--no-daemon was given" // the controller is told, and tells its user
	}
	dir := a.hostDir(o)
	err := hostd.RunHost(ctx, hostd.HostOptions{
		In: a.stdin, Out: a.stdout, MaxImageBase64Bytes: o.maxImage, NoDaemon: noDaemon,
		Dir: dir, DaemonArgs: append([]string{"--mode", "host-daemon", "--host-dir", dir,
			"--host-grace", o.hostGrace.String(), "--host-idle", o.hostIdle.String()}, logArgs(o)...),
		Host: a.host(o, rp), Log: log,
	})
	if err != nil {
		fmt.Fprintln(a.stderr, "myco:", err)
		return exitError
	}
	return exitOK
}

// hostDaemon runs the per-user host daemon (myco --mode host-daemon, started by a proxy;
// see [hostd.RunDaemon]) until it has been idle for --host-idle.
func (a *app) hostDaemon(o options) int {
	log := a.log
	// The proxy that started it may go at any time; only SIGTERM and SIGINT end it.
	signal.Ignore(syscall.SIGHUP, syscall.SIGPIPE)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	rp := newReaper(log)
	defer rp.Close()
	err := hostd.RunDaemon(ctx, hostd.DaemonOptions{
		Dir: a.hostDir(o), Ready: os.NewFile(hostd.ReadyFD, "ready"), Host: a.host(o, rp), Log: log,
	})
	if err != nil {
		return a.fail(err)
	}
	return exitOK
}

// hostDir is the host daemon's directory: --host-dir, else [hostd.DefaultDir] under
// $TMPDIR.
func (a *app) hostDir(o options) string {
	if o.hostDir != "" {
		return o.hostDir
	}
	return hostd.DefaultDir(a.getenv("TMPDIR"))
}

// host describes this host process to package hostd: its bash processes die with it
// through rp; its snapshot store is this user's on this host ([hostd.SnapshotDir]).
func (a *app) host(o options, rp *reaper.Reaper) hostd.Host {
	bi := buildInfo()
	name, _ := os.Hostname()
	return hostd.Host{Version: bi.String(), Build: bi.ID, Shell: a.getenv("SHELL"), Env: os.Environ(), Reaper: rp,
		Grace: o.hostGrace, IdleExit: o.hostIdle, Snapshots: hostd.SnapshotDir(a.getenv("XDG_STATE_HOME"), a.getenv("HOME"), name)}
}
