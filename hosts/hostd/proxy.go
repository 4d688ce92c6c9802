package hostd

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"myco.dev/hosts/proto"
	"myco.dev/internal/privdir"
	"myco.dev/internal/termtext"
)

// DaemonSocket is the name of the daemon's socket in its directory: one daemon per
// protocol and build (see [Host].Build), so an upgraded or rebuilt myco starts a daemon of
// its own.
func DaemonSocket(build string) string {
	return fmt.Sprintf("host-v%d-%s.sock", proto.Version, strings.Map(func(r rune) rune {
		if r == '/' || r == ' ' {
			return '_'
		}
		return r
	}, build))
}

// ProxyOptions configures [Proxy].
type ProxyOptions struct {
	// Dir holds the daemon's socket, its start lock and its log; it is created with mode
	// 0700 and must belong to this user.
	Dir    string
	Socket string // the socket's file name in Dir (see [DaemonSocket])
	// Daemon is the command line that starts the daemon when none answers. It is started
	// in a session of its own (setsid) with its stderr appended to Dir/daemon.log, and
	// must write a line to file descriptor [ReadyFD] once it listens.
	Daemon []string
	// MaxImageBase64Bytes is this controller's image cap, told to the daemon.
	MaxImageBase64Bytes int
	// StartTimeout bounds the start of a daemon (default 10 s).
	StartTimeout time.Duration
	Log          *slog.Logger // nil means slog.Default()
}

// ErrNoDaemon wraps a [Proxy] failure before anything was written to out: the caller may
// serve the connection itself instead.
var ErrNoDaemon = errors.New("no host daemon")

// Proxy connects in and out to the per-user host daemon, starting it when none answers,
// and copies bytes both ways until the daemon closes the connection. When in ends, the
// daemon sees the connection end (a drop, unless the controller released its owners).
//
// Proxy returns nil when the controller ended the connection (in reached its end), and an
// error when the daemon ended it: after a fatal error frame (a protocol mismatch, a line
// over [proto.MaxRequestLine], a connection over the daemon's limit) the error is that
// frame's message, filtered for a terminal.
//
// The copy from in runs on a goroutine that stays blocked in its read when the daemon
// ends first; the caller exits then.
func Proxy(ctx context.Context, in io.Reader, out io.Writer, o ProxyOptions) error {
	if o.StartTimeout <= 0 {
		o.StartTimeout = 10 * time.Second
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	var (
		c     net.Conn
		hello []byte
		err   error
	)
	// A daemon that exits (idle) just as this proxy connects closes the connection
	// before its hello: connect again, starting a new one.
	for range 3 {
		c, err = connectDaemon(ctx, o)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrNoDaemon, err)
		}
		if err = proto.NewWriter(c).Write(proto.Msg{Proxy: &proto.Proxy{MaxImageBase64Bytes: o.MaxImageBase64Bytes}}); err == nil {
			br := bufio.NewReaderSize(c, 64<<10)
			if hello, err = br.ReadBytes('\n'); err == nil {
				c = &bufferedConn{Conn: c, r: br}
				break
			}
		}
		c.Close()
		o.Log.Warn("the host daemon closed the connection before its hello; connecting again", "err", err)
	}
	if err != nil {
		return fmt.Errorf("%w: the daemon closed every connection before its hello: %w", ErrNoDaemon, err)
	}
	defer c.Close()
	watch := &fatalWatcher{w: out}
	if _, err := watch.Write(hello); err != nil {
		return fmt.Errorf("host proxy: write: %w", err)
	}
	var inEnded atomic.Bool // set before the daemon can see the end of its input
	go func() {
		src := &readErr{r: in}
		io.Copy(c, src)
		if src.err != nil {
			// The controller's side ended (when the daemon's ends, the write fails
			// instead): let the daemon see the end of its input.
			inEnded.Store(true)
		}
		if cw, ok := c.(interface{ CloseWrite() error }); ok {
			cw.CloseWrite()
		}
	}()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	_, err = io.Copy(watch, c)
	if msg := watch.fatal(); msg != "" {
		return errors.New(termtext.Safe(msg))
	}
	if inEnded.Load() || ctx.Err() != nil {
		return nil // the controller ended the connection; the daemon closed its side
	}
	if err == nil {
		err = errors.New("it closed the connection")
	}
	return fmt.Errorf("host proxy: the host daemon ended the connection (%w); is it still running? its log is %s", err, filepath.Join(o.Dir, "daemon.log"))
}

// readErr remembers the error of its reader's last read: io.Copy does not say whether its
// read or its write failed.
type readErr struct {
	r   io.Reader
	err error
}

func (r *readErr) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	r.err = err
	return n, err
}

// fatalWatcher passes the daemon's lines on to w and keeps the message of a fatal error
// frame, the daemon's last word before it ends a connection. The daemon is the same
// binary, so such a frame starts with fatalPrefix; only those lines are decoded, and only
// their first maxFatalLine bytes are kept. It is not safe for concurrent use.
type fatalWatcher struct {
	w       io.Writer
	midLine bool   // the bytes written so far end inside a line
	line    []byte // the start of the current line, while it may be a fatal frame
	keep    bool   // the current line is still kept in line
	msg     string // the fatal frame's message
}

const (
	fatalPrefix  = `{"error":`
	maxFatalLine = 64 << 10
)

func (f *fatalWatcher) Write(p []byte) (int, error) {
	for rest := p; len(rest) > 0; {
		if !f.midLine {
			f.midLine, f.keep, f.line = true, true, f.line[:0]
		}
		i := bytes.IndexByte(rest, '\n')
		chunk := rest
		if i >= 0 {
			chunk = rest[:i]
		}
		if f.keep {
			f.line = append(f.line, chunk...)
			n := min(len(f.line), len(fatalPrefix))
			if len(f.line) > maxFatalLine || string(f.line[:n]) != fatalPrefix[:n] {
				f.keep, f.line = false, f.line[:0]
			}
		}
		if i < 0 {
			break
		}
		if f.keep {
			var m proto.Msg
			if json.Unmarshal(f.line, &m) == nil && m.Err != nil && m.Err.Fatal {
				f.msg = m.Err.Message
			}
		}
		f.midLine = false
		rest = rest[i+1:]
	}
	return f.w.Write(p)
}

// fatal returns the message of the last fatal error frame seen, or "".
func (f *fatalWatcher) fatal() string { return f.msg }

// bufferedConn reads through the reader that took the hello.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (b *bufferedConn) Read(p []byte) (int, error) { return b.r.Read(p) }

func (b *bufferedConn) CloseWrite() error {
	if cw, ok := b.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// connectDaemon dials the daemon's socket, starting the daemon under the start lock when
// nothing answers.
func connectDaemon(ctx context.Context, o ProxyOptions) (net.Conn, error) {
	if err := privateDir(o.Dir); err != nil {
		return nil, err
	}
	sock := filepath.Join(o.Dir, o.Socket)
	if len(sock) >= 104 { // sun_path is 104 bytes on the BSDs, 108 on Linux
		return nil, fmt.Errorf("the socket path %s is too long for a Unix socket; set TMPDIR to a shorter directory on the host", sock)
	}
	if c, err := net.Dial("unix", sock); err == nil {
		return c, nil
	}
	unlock, err := lockDir(o.Dir)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if c, err := net.Dial("unix", sock); err == nil {
		return c, nil
	}
	os.Remove(sock) // stale: no daemon answers, and none can start while we hold the lock
	if err := startDaemon(ctx, o); err != nil {
		return nil, err
	}
	return net.Dial("unix", sock)
}

// ReadyFD is the file descriptor on which a daemon that [Proxy] started says it listens:
// the first of its extra files. [RunDaemon] writes its line there when given it as Ready.
const ReadyFD = 3

// startDaemon starts the daemon detached and waits for its ready line.
func startDaemon(ctx context.Context, o ProxyOptions) error {
	logPath := filepath.Join(o.Dir, "daemon.log")
	if info, err := os.Stat(logPath); err == nil && info.Size() > 1<<20 {
		os.Rename(logPath, logPath+".old")
	}
	logf, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("open the daemon log: %w", err)
	}
	defer logf.Close()
	ready, readyW, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("start the host daemon: %w", err)
	}
	defer ready.Close()
	cmd := exec.Command(o.Daemon[0], o.Daemon[1:]...)
	cmd.Stderr = logf
	cmd.ExtraFiles = []*os.File{readyW} // ReadyFD
	// A session of its own: no controlling terminal, and the ssh session's hangup does
	// not reach it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err = cmd.Start()
	readyW.Close()
	if err != nil {
		return fmt.Errorf("start the host daemon: %w", err)
	}
	// Reap it should it exit while this proxy still runs; after the proxy exits, init
	// does.
	go cmd.Wait()
	ready.SetReadDeadline(time.Now().Add(o.StartTimeout))
	stop := context.AfterFunc(ctx, func() { ready.SetReadDeadline(time.Now()) })
	defer stop()
	line, err := bufio.NewReader(ready).ReadString('\n')
	if err != nil {
		return fmt.Errorf("the host daemon did not start (see %s): %w", logPath, err)
	}
	o.Log.Info("started the host daemon", "pid", cmd.Process.Pid, "said", strings.TrimSpace(line))
	return nil
}

// privateDir creates dir with mode 0700 if needed and checks that it is a directory of
// this user that no one else can enter.
func privateDir(dir string) error {
	if err := privdir.Ensure(dir); err != nil {
		return fmt.Errorf("the host daemon's directory: %w", err)
	}
	return nil
}

// lockDir takes the start lock of the daemon's directory, waiting for it; call unlock to
// let it go.
func lockDir(dir string) (unlock func(), err error) {
	f, err := os.OpenFile(filepath.Join(dir, "start.lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open the host daemon's start lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("take the host daemon's start lock: %w", err)
	}
	return func() {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
