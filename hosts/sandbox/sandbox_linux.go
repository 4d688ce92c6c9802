//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// probe asks the kernel for its Landlock ABI, and whether this process can give a child
// user and mount namespaces: it starts a child in them that fails at once to execute a
// path that cannot exist (ENOTDIR says the namespaces and the user mapping were made,
// anything else that they were not). Running a program there instead, as it once did,
// cost the first sandboxed command of a session a program's start (10-30 ms under load).
func probe() Support {
	var s Support
	abi, err := ll.LandlockGetABIVersion()
	switch {
	case err != nil:
		s.Reason = "the kernel has no Landlock (" + err.Error() + ")"
	case abi < 1:
		s.Reason = "the kernel has no Landlock"
	default:
		s.ABI, s.Landlock, s.Net, s.Scoped = abi, true, abi >= 4, abi >= 6
	}
	var c exec.Cmd
	withNamespaces(&c)
	_, err = syscall.ForkExec("/dev/null/probe", []string{"probe"}, &syscall.ProcAttr{Sys: c.SysProcAttr})
	s.UserNS = errors.Is(err, syscall.ENOTDIR)
	return s
}

// withNamespaces gives cmd a user namespace (mapping the user to itself) and a mount
// namespace.
func withNamespaces(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	a := cmd.SysProcAttr
	a.Cloneflags |= syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS
	a.UidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getuid(), HostID: os.Getuid(), Size: 1}}
	a.GidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getgid(), HostID: os.Getgid(), Size: 1}}
	a.GidMappingsEnableSetgroups = false
}

// enter fences the process in as cs says and executes path with args.
func enter(cs childSpec, path string, args []string) error {
	if cs.Mounts {
		if err := mounts(cs.Spec); err != nil {
			return err
		}
	}
	if cs.RulesetFD > 0 {
		if err := apply(cs.RulesetFD, cs.Flags); err != nil {
			return err
		}
	} else if err := restrict(cs.Spec, cs.Mounts); err != nil {
		return err
	}
	if !strings.Contains(path, "/") {
		p, err := exec.LookPath(path)
		if err != nil {
			return err
		}
		path = p
	}
	return syscall.Exec(path, args, os.Environ())
}

// mounts makes the protected paths read-only and puts an empty read-only directory over
// the hidden ones, in the child's own mount namespace.
func mounts(s Spec) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make the mounts private: %w", err)
	}
	for _, h := range s.Hidden {
		fi, err := os.Stat(h)
		if err != nil || !fi.IsDir() {
			continue
		}
		// Writable paths inside the hidden one (the profile's workspace in myco's home)
		// are held open, and bound back into the empty directory that hides it.
		var keep []string
		var fds []int
		for _, w := range s.Writable {
			if strings.HasPrefix(w, h+"/") {
				fd, err := unix.Open(w, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
				if err != nil {
					continue
				}
				keep, fds = append(keep, w), append(fds, fd)
			}
		}
		const flags = unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC
		if err := unix.Mount("tmpfs", h, "tmpfs", flags, "size=64k,mode=0711"); err != nil {
			return fmt.Errorf("hide %s: %w", h, err)
		}
		for i, w := range keep {
			if err := os.MkdirAll(w, 0o711); err != nil {
				return fmt.Errorf("keep %s reachable: %w", w, err)
			}
			if err := unix.Mount(fmt.Sprintf("/proc/self/fd/%d", fds[i]), w, "", unix.MS_BIND, ""); err != nil {
				return fmt.Errorf("keep %s reachable: %w", w, err)
			}
			unix.Close(fds[i])
		}
		if err := unix.Mount("", h, "", unix.MS_REMOUNT|unix.MS_RDONLY|flags, ""); err != nil {
			return fmt.Errorf("hide %s: %w", h, err)
		}
	}
	for _, p := range s.Protected {
		if !exists(p) {
			continue
		}
		if err := readOnly(p); err != nil {
			return err
		}
	}
	return nil
}

// readOnly bind-mounts p onto itself read-only, keeping the flags the mount it is on has
// locked (nosuid, nodev, noexec, …).
func readOnly(p string) error {
	if err := unix.Mount(p, p, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind %s: %w", p, err)
	}
	var st unix.Statfs_t
	if err := unix.Statfs(p, &st); err != nil {
		return fmt.Errorf("stat the mount of %s: %w", p, err)
	}
	flags := uintptr(unix.MS_BIND | unix.MS_REMOUNT | unix.MS_RDONLY)
	for _, f := range []struct{ st, ms uintptr }{
		{unix.ST_NOSUID, unix.MS_NOSUID}, {unix.ST_NODEV, unix.MS_NODEV}, {unix.ST_NOEXEC, unix.MS_NOEXEC},
		{unix.ST_NOATIME, unix.MS_NOATIME}, {unix.ST_NODIRATIME, unix.MS_NODIRATIME}, {unix.ST_RELATIME, unix.MS_RELATIME},
	} {
		if uintptr(st.Flags)&f.st != 0 {
			flags |= f.ms
		}
	}
	if err := unix.Mount("", p, "", flags, ""); err != nil {
		return fmt.Errorf("make %s read-only: %w", p, err)
	}
	return nil
}

// devices a command may write; /dev/pts and /dev/shm as directories.
var (
	devFiles = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty", "/dev/ptmx"}
	devDirs  = []string{"/dev/pts", "/dev/shm"}
)

// apply enforces the ruleset the parent built (descriptor fd) on the calling thread, which
// then executes the command, and closes it: the command must not get it, or it could add
// rules to the ruleset that later commands are fenced with.
func apply(fd int, flags uint32) error {
	defer unix.Close(fd)
	runtime.LockOSThread() // never unlocked: the command is executed from this thread
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_NO_NEW_PRIVS): %w", err)
	}
	if err := ll.LandlockRestrictSelf(fd, flags); err != nil {
		return fmt.Errorf("landlock_restrict_self: %w", err)
	}
	return nil
}

// buildRuleset builds the Landlock ruleset of spec s (with mounted, the hidden paths are
// hidden by mounts) and returns its descriptor, close-on-exec, and flags.
func buildRuleset(s Spec, mounted bool) (int, uint32, error) {
	cfg, rules, err := rulesOf(s, mounted)
	if err != nil {
		return -1, 0, err
	}
	fd, flags, err := cfg.NewRulesetFD(rules...)
	if err != nil {
		return -1, 0, fmt.Errorf("landlock: %w", err)
	}
	if fd < 0 {
		return -1, 0, errors.New("landlock: the kernel enforces nothing")
	}
	unix.CloseOnExec(fd)
	return fd, flags, nil
}

// rulesOf is the Landlock configuration and rules of spec s.
func rulesOf(s Spec, mounted bool) (landlock.Config, []landlock.Rule, error) {
	cfg := landlock.V7.BestEffort()
	if s.Network {
		cfg = landlock.MustConfig(cfg.HandledAccessFS, landlock.ScopedSet(cfg.Scoped)).BestEffort()
	}
	var rules []landlock.Rule
	if len(s.Hidden) == 0 || mounted {
		rules = append(rules, landlock.RODirs("/"))
	} else {
		ro, err := readableExcept(s.Hidden)
		if err != nil {
			return cfg, nil, err
		}
		rules = append(rules, ro...)
	}
	if len(s.Writable) > 0 {
		rules = append(rules, landlock.RWDirs(s.Writable...).WithRefer().IgnoreIfMissing())
	}
	rules = append(rules,
		landlock.RWFiles(devFiles...).WithIoctlDev().IgnoreIfMissing(),
		landlock.RWDirs(devDirs...).WithIoctlDev().IgnoreIfMissing())
	if !s.Network {
		for _, p := range s.Ports {
			rules = append(rules, landlock.ConnectTCP(p))
		}
	}
	return cfg, rules, nil
}

// restrict applies the Landlock ruleset to the calling thread only, which [enter] locks
// and then executes the command from: execve gives the new program that thread's domain,
// and the process's other threads end with it. (Restricting every thread, as go-landlock's
// Restrict does on kernels before ABI 8, costs a stop of the world for nothing here.)
func restrict(s Spec, mounted bool) error {
	fd, flags, err := buildRuleset(s, mounted)
	if err != nil {
		return err
	}
	return apply(fd, flags)
}

// readableExcept returns rules that let everything be read and executed except the
// hidden paths: each directory on the way from / to a hidden path is left out (it cannot
// be listed), and each of its other entries is readable.
func readableExcept(hidden []string) ([]landlock.Rule, error) {
	var rules []landlock.Rule
	var walk func(dir string) error
	walk = func(dir string) error {
		ents, err := os.ReadDir(dir)
		if err != nil {
			return fmt.Errorf("list %s: %w", dir, err)
		}
		for _, e := range ents {
			p := filepath.Join(dir, e.Name())
			switch {
			case slices.Contains(hidden, p):
			case slices.ContainsFunc(hidden, func(h string) bool { return strings.HasPrefix(h, p+"/") }):
				if err := walk(p); err != nil {
					return err
				}
			case e.IsDir():
				rules = append(rules, landlock.RODirs(p).IgnoreIfMissing())
			default:
				rules = append(rules, landlock.ROFiles(p).IgnoreIfMissing())
			}
		}
		return nil
	}
	if err := walk("/"); err != nil {
		return nil, err
	}
	return rules, nil
}
