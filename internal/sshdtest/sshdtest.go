// Package sshdtest starts a real OpenSSH sshd on 127.0.0.1 for tests, with throwaway keys
// and a temporary HOME whose ~/.ssh/config names it, so that a test reaches a "remote"
// host through the real ssh client without touching the user's own keys, config or home.
// The hosts suite and the binary's end-to-end tests share it.
//
// It imports only the standard library.
package sshdtest

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"myco.dev/internal/needs"
)

// SSHD is the server binary the fixture runs.
const SSHD = "/usr/sbin/sshd"

// Server is a running sshd and the temporary world around it. Both sides of a connection
// see Home as HOME: sshd sets it, with a PATH that starts with Home/.local/bin and a
// TMPDIR of its own, for the remote side (SetEnv). Home/.ssh/config names two hosts:
// "devbox" (this sshd, from an Include of Home/.ssh/conf.d/devbox.conf) and "refused" (a
// port nothing listens on); a wildcard block holds the user, the throwaway client key and
// no host key checking. Further hosts can be added as Home/.ssh/conf.d/NAME.conf.
type Server struct {
	Dir        string // the fixture's temporary directory: keys, sshd_config, TmpDir
	Home       string // the temporary HOME, Dir/home
	Config     string // Home/.ssh/config
	Port       int    // sshd's port on 127.0.0.1
	ClosedPort int    // a port on 127.0.0.1 that refuses connections (host "refused")
	TmpDir     string // the remote side's TMPDIR, Dir/tmp
}

// Start starts sshd for the test and stops it, and every myco host daemon started in
// its TmpDir, when the test ends. When sshd, ssh or ssh-keygen is missing it skips the
// test, except when the environment variable CI is set: there it fails, since CI installs
// them (see package needs).
func Start(t testing.TB) *Server { return StartIn(t, "") }

// StartIn is Start whose remote side starts its commands in dir (the login directory of
// a user whose home is dir), instead of the real user's home; "" is Start.
func StartIn(t testing.TB, dir string) *Server {
	t.Helper()
	for _, p := range []string{SSHD, "ssh", "ssh-keygen"} {
		needs.Program(t, p, "apt-get install -y openssh-server openssh-client")
	}
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Dir: t.TempDir()}
	s.Home = filepath.Join(s.Dir, "home")
	s.Config = filepath.Join(s.Home, ".ssh", "config")
	s.TmpDir = filepath.Join(s.Dir, "tmp")
	keygen := func(name string) string {
		p := filepath.Join(s.Dir, name)
		if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", name, "-f", p).CombinedOutput(); err != nil {
			t.Fatalf("ssh-keygen: %v\n%s", err, out)
		}
		return p
	}
	hostKey, userKey := keygen("hostkey"), keygen("userkey")
	pub, err := os.ReadFile(userKey + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	WriteFile(t, filepath.Join(s.Dir, "authorized_keys"), string(pub))
	if os.Geteuid() == 0 {
		os.MkdirAll("/run/sshd", 0o755) // sshd's privilege separation directory
	}
	s.Port = FreePort(t)
	s.ClosedPort = FreePort(t)
	cfg := filepath.Join(s.Dir, "sshd_config")
	WriteFile(t, cfg, fmt.Sprintf(`Port %d
ListenAddress 127.0.0.1
HostKey %s
AuthorizedKeysFile %s
PidFile %s
StrictModes no
UsePAM no
PasswordAuthentication no
KbdInteractiveAuthentication no
PubkeyAuthentication yes
PermitRootLogin prohibit-password
AllowUsers %s
LogLevel ERROR
SetEnv HOME=%s PATH=%s/.local/bin:/usr/local/bin:/usr/bin:/bin TMPDIR=%s
`, s.Port, hostKey, filepath.Join(s.Dir, "authorized_keys"), filepath.Join(s.Dir, "sshd.pid"), u.Username, s.Home, s.Home, s.TmpDir)+chdir(dir))
	var log bytes.Buffer
	cmd := exec.Command(SSHD, "-D", "-e", "-f", cfg)
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", s.Port))
		if err == nil {
			c.Close()
			break
		}
		select {
		case <-exited:
			t.Fatalf("sshd exited: %s", log.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("sshd does not listen on %d: %s", s.Port, log.String())
		}
		time.Sleep(20 * time.Millisecond)
	}

	// devbox comes from an Include, the common settings from a wildcard block.
	WriteFile(t, s.Config, fmt.Sprintf(`Include %s/.ssh/conf.d/*.conf
Host refused
	HostName 127.0.0.1
	Port %d
Host *
	User %s
	IdentityFile %s
	IdentitiesOnly yes
	StrictHostKeyChecking no
	UserKnownHostsFile /dev/null
	LogLevel ERROR
`, s.Home, s.ClosedPort, u.Username, userKey))
	WriteFile(t, filepath.Join(s.Home, ".ssh", "conf.d", "devbox.conf"), fmt.Sprintf("Host devbox\n\tHostName 127.0.0.1\n\tPort %d\n", s.Port))
	if err := os.Mkdir(s.TmpDir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { StopDaemons(t, s.DaemonDir()) })
	return s
}

// chdir is the sshd_config line that starts every command in dir.
func chdir(dir string) string {
	if dir == "" {
		return ""
	}
	return fmt.Sprintf("ForceCommand cd '%s' && exec /bin/sh -c \"$SSH_ORIGINAL_COMMAND\"\n", dir)
}

// DaemonDir is where the remote side's myco host daemons keep their sockets and pid
// files: myco-UID in TmpDir.
func (s *Server) DaemonDir() string {
	return filepath.Join(s.TmpDir, fmt.Sprintf("myco-%d", os.Getuid()))
}

// DaemonPIDs returns the process ids of the host daemons whose pid files are in dir.
func DaemonPIDs(dir string) []int {
	files, _ := filepath.Glob(filepath.Join(dir, "*.pid"))
	var out []int
	for _, f := range files {
		b, _ := os.ReadFile(f)
		if pid, _ := strconv.Atoi(strings.TrimSpace(string(b))); pid > 0 {
			out = append(out, pid)
		}
	}
	return out
}

// StopDaemons sends SIGTERM to the host daemons whose pid files are in dir (a daemon ends
// every process it started) and waits for them to go; one that does not go within 5 s
// fails t and is killed.
func StopDaemons(t testing.TB, dir string) {
	for _, pid := range DaemonPIDs(dir) {
		syscall.Kill(pid, syscall.SIGTERM)
		deadline := time.Now().Add(5 * time.Second)
		for !Gone(pid) {
			if time.Now().After(deadline) {
				t.Errorf("the host daemon %d did not end after SIGTERM", pid)
				syscall.Kill(pid, syscall.SIGKILL)
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// Gone reports whether pid has exited (a zombie no one reaps counts as exited).
func Gone(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return true
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	// pid (comm) STATE ...
	st := string(b)
	if i := strings.LastIndexByte(st, ')'); i >= 0 && i+2 < len(st) {
		return st[i+2] == 'Z'
	}
	return false
}

// FreePort returns a port on 127.0.0.1 that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// WriteFile writes text to path, creating its parent directories.
func WriteFile(t testing.TB, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}
