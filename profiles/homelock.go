package profiles

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// HomeLockError reports a MYCO_HOME that another server serves already: two servers on
// one home would each run turns on the same sessions, and each would report the other's
// running turns as not running.
type HomeLockError struct {
	Home string
	PID  int    // the server that holds it, as its lock file says (0 when unknown)
	URL  string // where it serves, likewise
}

func (e *HomeLockError) Error() string {
	who := "another myco server"
	if e.PID > 0 {
		who += " (pid " + strconv.Itoa(e.PID) + ")"
	}
	if e.URL != "" {
		who += ", serving " + e.URL + ","
	}
	return fmt.Sprintf("%s already serves MYCO_HOME %s: open that one, or stop it first (it saves its turns on SIGTERM), or give this one another MYCO_HOME. "+
		"myco -p and the chat work beside it", who, e.Home)
}

// lockName is the lock file of a MYCO_HOME, which its server holds while it runs.
const lockName = "server.lock"

// lockHome takes home's server lock: an exclusive flock of home/server.lock, which the
// kernel releases when this process ends however it ends, so that a lock is never stale.
// It is held until the file is closed; [homeLock.serving] writes in it who holds it.
func lockHome(home string) (*homeLock, error) {
	if err := os.MkdirAll(home, 0o700); err != nil {
		return nil, err
	}
	path := filepath.Join(home, lockName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open the lock of MYCO_HOME %s: %w", home, err)
	}
	if info, err := f.Stat(); err != nil || !info.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("open the lock of MYCO_HOME %s: %s is not a regular file", home, path)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		defer f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			e := &HomeLockError{Home: home}
			b := make([]byte, 512)
			n, _ := f.ReadAt(b, 0)
			if fields := strings.Fields(string(b[:n])); len(fields) == 2 {
				e.PID, _ = strconv.Atoi(fields[0])
				if strings.HasPrefix(fields[1], "http://") {
					e.URL = fields[1]
				}
			}
			return nil, e
		}
		return nil, fmt.Errorf("lock MYCO_HOME %s: %w", home, err)
	}
	return &homeLock{f: f}, nil
}

// homeLock is a MYCO_HOME's lock, held.
type homeLock struct{ f *os.File }

// serving writes who holds the lock: this process and the URL it serves.
func (l *homeLock) serving(url string) {
	l.f.Truncate(0)
	l.f.WriteAt([]byte(strconv.Itoa(os.Getpid())+" "+url+"\n"), 0)
}

// ServingURL returns the URL the server holding home's lock serves its launch profile at,
// as it wrote it, or "" when none says so.
func ServingURL(home string) string {
	b, err := os.ReadFile(filepath.Join(home, lockName))
	if err != nil {
		return ""
	}
	if f := strings.Fields(string(b)); len(f) == 2 && strings.HasPrefix(f[1], "http://") {
		return f[1]
	}
	return ""
}

// release gives the lock up.
func (l *homeLock) release() { l.f.Close() }
