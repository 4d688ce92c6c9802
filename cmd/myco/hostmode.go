package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"syscall"

	"myco/hosts"
	"myco/hosts/proto"
)

// hostMode runs myco --mode host: the standard tool services over NDJSON on stdin and
// stdout, until stdin closes. Logs go to stderr, never to stdout.
func (a *app) hostMode(o options) int {
	if o.maxImage <= 0 {
		fmt.Fprintf(a.stderr, "myco: --max-image-base64-bytes must be positive, not %d\n", o.maxImage)
		return exitUsage
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	dir, _ := os.Getwd()
	log := slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	err := hosts.Serve(ctx, a.stdin, a.stdout, hosts.ServeOptions{
		Tools: hostTools(o.maxImage),
		Hello: proto.Hello{
			Version: version, OS: runtime.GOOS, Arch: runtime.GOARCH,
			Shell: a.getenv("SHELL"), Dir: dir, MaxImageBase64Bytes: o.maxImage,
		},
		Log: log,
	})
	if err != nil {
		fmt.Fprintln(a.stderr, "myco:", err)
		return exitError
	}
	return exitOK
}
