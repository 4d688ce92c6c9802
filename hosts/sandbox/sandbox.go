// Package sandbox fences a command in on the host that runs it: a Landlock ruleset that
// lets it write only to the directories it is given, keeps paths such as .git/hooks
// read-only and myco's home unreadable, and refuses TCP connections other than to the
// ports it names; and, where the kernel lets an unprivileged process create a user
// namespace, a mount namespace for what Landlock cannot say (read-only paths under a
// writable directory, a hidden directory under a writable one).
//
// The fence is applied in a child of the fence's executable (myco-fence, or myco itself,
// either of which calls [Main] first thing); the process that starts it is never
// restricted. [Fence.Wrap] turns one command into such a child, which restricts itself
// and then executes the command: a Go program's start, and namespaces and mounts, for
// each command. A [Runner] pays them once: its helper, that executable in a mode that
// serves, restricts all of its threads and then starts each command it is asked for,
// passed the command's descriptors over a socket, and tells its pid and later its wait
// status. hosts/tools (bash) uses both in-process, and hostd on a remote host, so both
// sides fence commands the same way.
package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// Spec is what a fenced command may do. Paths are absolute.
type Spec struct {
	// Writable are the directories the command may write beneath (the session's
	// directory, its private temporary directory, configured paths). Everything else it
	// may read, but not write.
	Writable []string `json:"writable,omitempty"`
	// Protected are paths beneath Writable that stay read-only (.git/hooks, .git/config).
	// Missing ones are skipped.
	Protected []string `json:"protected,omitempty"`
	// Hidden are paths the command may neither read nor write (myco's home).
	Hidden []string `json:"hidden,omitempty"`
	// Network lets the command connect and listen anywhere. Off, TCP connections go only
	// to Ports (the myco API, so that nested agents keep working) and it listens on none.
	Network bool     `json:"network,omitempty"`
	Ports   []uint16 `json:"ports,omitempty"`
}

// ErrUnsupported is wrapped by the error of [Fence.Wrap] and [Support.Check] when the
// kernel cannot fence a command as its spec says.
var ErrUnsupported = errors.New("sandbox: not supported here")

// Support is what this machine's kernel offers.
type Support struct {
	ABI      int    `json:"abi"`              // Landlock ABI version; 0 without Landlock
	Landlock bool   `json:"landlock"`         // filesystem rules (ABI ≥ 1; ≥ 2 for renames across directories)
	Net      bool   `json:"net"`              // TCP rules (ABI ≥ 4)
	Scoped   bool   `json:"scoped"`           // signals and abstract sockets kept inside (ABI ≥ 6)
	UserNS   bool   `json:"user_ns"`          // unprivileged user and mount namespaces
	Reason   string `json:"reason,omitempty"` // why Landlock is missing, when it is
}

// String says what the kernel offers in a line for the runtime notes.
func (s Support) String() string {
	if !s.Landlock {
		return "no sandbox: " + s.Reason
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Landlock ABI %d", s.ABI)
	if s.Net {
		b.WriteString(", TCP rules")
	} else {
		b.WriteString(", no TCP rules (needs ABI 4)")
	}
	if s.UserNS {
		b.WriteString(", user namespaces")
	} else {
		b.WriteString(", no unprivileged user namespaces")
	}
	return b.String()
}

// Check returns nil when the kernel can fence a command as spec says, and else an error
// wrapping [ErrUnsupported] that says what is missing.
func (s Support) Check(spec Spec) error {
	var missing []string
	if !s.Landlock {
		missing = append(missing, "Landlock ("+s.Reason+")")
	} else if s.ABI < 2 {
		missing = append(missing, "Landlock ABI 2 (renames across directories)")
	}
	if !spec.Network && !s.Net {
		missing = append(missing, "Landlock ABI 4 to turn the network off")
	}
	if !s.UserNS {
		for _, p := range spec.Protected {
			if exists(p) {
				missing = append(missing, "unprivileged user namespaces to keep "+p+" read-only")
				break
			}
		}
		for _, h := range spec.Hidden {
			if under(h, spec.Writable) {
				missing = append(missing, "unprivileged user namespaces to hide "+h+", which is inside a writable directory")
				break
			}
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: needs %s", ErrUnsupported, strings.Join(missing, "; "))
	}
	return nil
}

// Options configures a [Fence].
type Options struct {
	// Exe is the executable whose main calls [Main] first: myco itself. Empty means
	// os.Executable().
	Exe string
}

// Fence wraps commands in the sandbox. It is safe for concurrent use.
type Fence struct {
	exe string

	once    sync.Once // probes the kernel once
	support Support

	mu       sync.Mutex // guards rulesets
	rulesets map[string]*ruleset
}

// New returns a fence that runs its children through o.Exe.
func New(o Options) (*Fence, error) {
	exe := o.Exe
	if exe == "" {
		e, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("sandbox: find the executable: %w", err)
		}
		exe = e
	}
	return &Fence{exe: exe}, nil
}

// Support returns what the kernel offers, probed at the first call.
func (f *Fence) Support() Support {
	f.once.Do(func() { f.support = probe() })
	return f.support
}

// childArg is the first argument of a child that fences itself (see [Main]).
const childArg = "__myco-sandbox"

// childSpec is what the child is given: the spec and whether it is in namespaces of its own.
type childSpec struct {
	Spec
	Mounts bool `json:"mounts,omitempty"`
	// RulesetFD is the descriptor of the Landlock ruleset the parent built (and Flags its
	// flags): the child applies it rather than building its own.
	RulesetFD int    `json:"ruleset_fd,omitempty"`
	Flags     uint32 `json:"flags,omitempty"`
}

// rulesetTTL is how long a ruleset built for a spec is used again: the rules hold the
// directories as they were when it was built, so a directory made again later gets a
// new ruleset soon.
const rulesetTTL = 30 * time.Second

// ruleset is a Landlock ruleset the parent built for a spec.
type ruleset struct {
	file  *os.File
	flags uint32
	made  time.Time
}

// rulesetFor returns the ruleset of cs, built or taken from the cache.
func (f *Fence) rulesetFor(cs childSpec) (*ruleset, error) {
	key, _ := json.Marshal(cs)
	f.mu.Lock()
	defer f.mu.Unlock()
	if r := f.rulesets[string(key)]; r != nil && time.Since(r.made) < rulesetTTL {
		return r, nil
	}
	fd, flags, err := buildRuleset(cs.Spec, cs.Mounts)
	if err != nil {
		return nil, err
	}
	r := &ruleset{file: os.NewFile(uintptr(fd), "landlock-ruleset"), flags: flags, made: time.Now()}
	if f.rulesets == nil {
		f.rulesets = map[string]*ruleset{}
	}
	if old := f.rulesets[string(key)]; old != nil {
		old.file.Close()
	}
	if len(f.rulesets) >= 64 {
		for k, old := range f.rulesets { // make room: any will do
			old.file.Close()
			delete(f.rulesets, k)
			break
		}
	}
	f.rulesets[string(key)] = r
	return r, nil
}

// Wrap changes cmd, not yet started, so that it runs fenced in by spec: its path becomes
// the fence's executable, which restricts itself and then executes the original command
// with the same environment, directory and descriptors. cmd.SysProcAttr is kept and given
// namespaces when the spec needs them and the kernel has them.
func (f *Fence) Wrap(cmd *exec.Cmd, spec Spec) error {
	cs, err := f.childSpecOf(spec, false)
	if err != nil {
		return err
	}
	if cs.Mounts {
		withNamespaces(cmd)
	}
	// The ruleset is built here, once for a while per spec, and handed to the child, which
	// then only applies it: building it (a Landlock rule per directory entry on the way
	// to a hidden path) would cost every command its time otherwise.
	r, err := f.rulesetFor(cs)
	if err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	cmd.ExtraFiles = append(cmd.ExtraFiles, r.file)
	cs.RulesetFD, cs.Flags = 2+len(cmd.ExtraFiles), r.flags
	b, err := json.Marshal(cs)
	if err != nil {
		return fmt.Errorf("sandbox: encode the spec: %w", err)
	}
	path := cmd.Path
	if cmd.Err != nil {
		return cmd.Err
	}
	args := append([]string{f.exe, childArg, string(b), path}, cmd.Args[1:]...)
	cmd.Path, cmd.Args = f.exe, args
	return nil
}

// childSpecOf is what a child fenced in by spec is told, or an error when the kernel
// cannot fence so. It reads the spec's files as they are now: which paths resolve where,
// which exist.
//
// A child gets namespaces of its own where the spec needs mounts; with hideByMount, also
// to hide a hidden path that Landlock alone could hide. A Runner's helper asks for that:
// it pays for the namespace once, where Landlock's way grants each other entry of each
// directory on the way to the hidden path, which costs a rule per entry (a /tmp of a
// thousand entries: 12 ms) and leaves entries made later unreadable until a new ruleset.
func (f *Fence) childSpecOf(spec Spec, hideByMount bool) (childSpec, error) {
	s := f.Support()
	if err := s.Check(spec); err != nil {
		return childSpec{}, err
	}
	cs := childSpec{Spec: clean(spec)}
	hide := func(h string) bool { return under(h, cs.Writable) || hideByMount && isDir(h) }
	cs.Mounts = s.UserNS && (len(existing(cs.Protected)) > 0 || slices.ContainsFunc(cs.Hidden, hide))
	return cs, nil
}

// clean makes the spec's paths absolute and clean, and resolves the symlinks of those
// that exist, since Landlock and mounts see the real paths.
func clean(s Spec) Spec {
	fix := func(ps []string) []string {
		out := make([]string, 0, len(ps))
		for _, p := range ps {
			if p == "" {
				continue
			}
			p = filepath.Clean(p)
			if r, err := filepath.EvalSymlinks(p); err == nil {
				p = r
			}
			if !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
		return out
	}
	s.Writable, s.Protected, s.Hidden = fix(s.Writable), fix(s.Protected), fix(s.Hidden)
	return s
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// isDir reports whether p is a directory: a mount hides only those (see mounts).
func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

func existing(ps []string) []string {
	var out []string
	for _, p := range ps {
		if exists(p) {
			out = append(out, p)
		}
	}
	return out
}

// under reports whether p is one of dirs or beneath one.
func under(p string, dirs []string) bool {
	for _, d := range dirs {
		if p == d || strings.HasPrefix(p, strings.TrimSuffix(d, "/")+"/") {
			return true
		}
	}
	return false
}

// GitProtected returns the paths of the git repositories at and above dir that run
// outside the sandbox on the person's next git command: each one's .git/hooks and
// .git/config (dir's own when it is in no repository, should one be made there).
func GitProtected(dir string) []string {
	var out []string
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, ".git")); err == nil {
			out = append(out, filepath.Join(d, ".git", "hooks"), filepath.Join(d, ".git", "config"))
		}
		if d == filepath.Dir(d) {
			break
		}
	}
	if len(out) == 0 {
		out = []string{filepath.Join(dir, ".git", "hooks"), filepath.Join(dir, ".git", "config")}
	}
	return out
}

// Main fences the process in and executes the command when the process was started by
// [Fence.Wrap]; otherwise it returns at once. Call it first thing in main (and in the
// TestMain of tests that wrap commands with the test binary). It never returns in a child:
// a child that cannot fence itself exits with status 126 and says why on stderr, so that
// nothing runs unfenced.
func Main() {
	if len(os.Args) < 2 || os.Args[1] != childArg {
		return
	}
	if len(os.Args) == 3 && os.Args[2] == "probe" {
		os.Exit(0)
	}
	if len(os.Args) == 4 && os.Args[2] == serveArg {
		var cs childSpec
		if err := json.Unmarshal([]byte(os.Args[3]), &cs); err != nil {
			serveFail(fmt.Errorf("decode the spec: %w", err))
		}
		serveFail(serve(cs))
	}
	if len(os.Args) < 4 {
		fail(errors.New("no command"))
	}
	var cs childSpec
	if err := json.Unmarshal([]byte(os.Args[2]), &cs); err != nil {
		fail(fmt.Errorf("decode the spec: %w", err))
	}
	if err := enter(cs, os.Args[3], os.Args[3:]); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintf(os.Stderr, "myco sandbox: %v; nothing was run\n", err)
	os.Exit(126)
}
