//go:build linux

package sandbox

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// maxRequest bounds a request: the kernel takes no more than this for a command's
// arguments and environment anyway.
const maxRequest = 16 << 20

// server is the helper: it starts the commands it is asked for and tells how they end.
type server struct {
	conn *net.UnixConn

	wmu sync.Mutex // serializes answers on conn

	mu       sync.Mutex     // guards children; held from a fork to its answer
	children map[int]uint64 // the commands running: pid → request id
}

// serve is the helper of a [Runner], started with its socket as descriptor 3 and the
// ruleset as cs.RulesetFD. It fences itself in, every thread, as cs says, says it is
// ready, then starts commands until the socket ends; then it kills their process groups
// and exits. It returns only an error of its setup; it never starts a command unfenced.
func serve(cs childSpec) error {
	unix.CloseOnExec(3)
	unix.CloseOnExec(cs.RulesetFD)
	if err := fenceSelf(cs); err != nil {
		return err
	}
	sock := os.NewFile(3, "sandbox-socket")
	fc, err := net.FileConn(sock)
	sock.Close()
	if err != nil {
		return fmt.Errorf("the socket: %w", err)
	}
	s := &server{conn: fc.(*net.UnixConn), children: map[int]uint64{}}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGCHLD)
	go func() { // lives as long as the process
		for range sigs {
			s.reap()
		}
	}()
	s.send(reply{Ready: true})
	err = s.loop()
	s.shutdown()
	if err != nil {
		fmt.Fprintf(os.Stderr, "myco sandbox helper: %v\n", err)
		os.Exit(1)
	}
	os.Exit(0)
	return nil
}

// fenceSelf makes the mounts and restricts every thread of the process: the commands it
// starts inherit both. It also becomes their subreaper, to reap what they leave behind.
//
// The commands must not trace it, which would let them speak on its socket: a command
// shares the Landlock domain of the thread that started it (each thread restricting
// itself makes a domain of its own), so Landlock does not keep it out. The helper is not
// dumpable, which keeps out a process without CAP_SYS_PTRACE, and no command gets that
// capability: it is dropped from the bounding set, where a command run as root (root in
// the user namespace, with every capability there, when myco runs as root) would have it.
func fenceSelf(cs childSpec) error {
	if cs.Mounts {
		if err := mounts(cs.Spec); err != nil {
			return err
		}
	}
	if cs.RulesetFD <= 0 {
		return errors.New("no ruleset")
	}
	defer unix.Close(cs.RulesetFD)
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_CHILD_SUBREAPER): %w", err)
	}
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_DUMPABLE): %w", err)
	}
	if err := dropPtrace(); err != nil {
		return err
	}
	if err := ll.AllThreadsPrctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_NO_NEW_PRIVS) on every thread: %w", err)
	}
	if err := ll.AllThreadsLandlockRestrictSelf(cs.RulesetFD, cs.Flags); err != nil {
		return fmt.Errorf("landlock_restrict_self on every thread: %w", err)
	}
	return nil
}

// dropPtrace drops CAP_SYS_PTRACE from the bounding set of every thread. Without the
// capability to drop it (no CAP_SETPCAP: a user's helper outside a user namespace), it
// checks that the helper has no CAP_SYS_PTRACE to pass on; a command cannot gain it from
// a file either, with no new privileges.
func dropPtrace() error {
	err := ll.AllThreadsPrctl(unix.PR_CAPBSET_DROP, unix.CAP_SYS_PTRACE, 0, 0, 0)
	if err == nil || !errors.Is(err, unix.EPERM) {
		return wrapErr("prctl(PR_CAPBSET_DROP, CAP_SYS_PTRACE) on every thread", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capget: %w", err)
	}
	const bit = 1 << (unix.CAP_SYS_PTRACE % 32)
	if d := data[unix.CAP_SYS_PTRACE/32]; d.Permitted&bit != 0 || d.Inheritable&bit != 0 {
		return errors.New("CAP_SYS_PTRACE is held and cannot be dropped from the bounding set")
	}
	return nil
}

// wrapErr is err, if any, saying what failed.
func wrapErr(what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", what, err)
}

// serveFail tells the runner why the helper cannot serve, and exits.
func serveFail(err error) {
	if err == nil {
		os.Exit(0)
	}
	b, _ := json.Marshal(reply{Err: err.Error()})
	unix.Write(3, append(b, '\n'))
	fail(err)
}

// loop reads requests until the socket ends.
func (s *server) loop() error {
	oob := make([]byte, unix.CmsgSpace(maxFiles*4))
	var hdr [4]byte
	for {
		n, oobn, flags, _, err := s.conn.ReadMsgUnix(hdr[:], oob)
		if n == 0 && (err == nil || errors.Is(err, io.EOF)) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read a request: %w", err)
		}
		fds, err := rights(oob[:oobn])
		if err != nil {
			return err
		}
		err = s.request(hdr[:], n, fds, flags&unix.MSG_CTRUNC != 0)
		for _, fd := range fds {
			unix.Close(fd)
		}
		if err != nil {
			return err
		}
	}
}

// request reads the rest of a request whose first n bytes of header are in hdr, and
// starts its command with fds.
func (s *server) request(hdr []byte, n int, fds []int, truncated bool) error {
	if _, err := io.ReadFull(s.conn, hdr[n:]); err != nil {
		return fmt.Errorf("read a request: %w", err)
	}
	size := binary.BigEndian.Uint32(hdr)
	if size > maxRequest {
		return fmt.Errorf("a request of %d bytes", size)
	}
	body := make([]byte, size)
	if _, err := io.ReadFull(s.conn, body); err != nil {
		return fmt.Errorf("read a request: %w", err)
	}
	var req request
	if err := json.Unmarshal(body, &req); err != nil {
		return fmt.Errorf("decode a request: %w", err)
	}
	if truncated {
		s.send(reply{ID: req.ID, Err: "sandbox: the descriptors did not all arrive"})
		return nil
	}
	s.start(req, fds)
	return nil
}

// rights returns the descriptors in the control messages of oob.
func rights(oob []byte) ([]int, error) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, fmt.Errorf("parse the descriptors: %w", err)
	}
	var fds []int
	for _, m := range msgs {
		if m.Header.Level != unix.SOL_SOCKET || m.Header.Type != unix.SCM_RIGHTS {
			continue
		}
		got, err := unix.ParseUnixRights(&m)
		if err != nil {
			return nil, fmt.Errorf("parse the descriptors: %w", err)
		}
		for _, fd := range got {
			unix.CloseOnExec(fd)
		}
		fds = append(fds, got...)
	}
	return fds, nil
}

// start starts the command of req with fds as its descriptors 0, 1, …, leading a
// process group of its own, and answers. s.mu is held from the fork to the answer, so
// that the command's exit, which the reaper reports, is told after its start.
func (s *server) start(req request, fds []int) {
	if len(req.Args) == 0 || len(fds) < 3 {
		s.send(reply{ID: req.ID, Err: "sandbox: a request without arguments or descriptors"})
		return
	}
	files := make([]uintptr, len(fds))
	for i, fd := range fds {
		files[i] = uintptr(fd)
	}
	attr := &syscall.ProcAttr{Dir: req.Dir, Env: req.Env, Files: files, Sys: &syscall.SysProcAttr{Setpgid: true}}
	s.mu.Lock()
	defer s.mu.Unlock()
	pid, err := syscall.ForkExec(req.Path, req.Args, attr)
	if err != nil {
		s.send(reply{ID: req.ID, Err: (&fs.PathError{Op: "fork/exec", Path: req.Path, Err: err}).Error()})
		return
	}
	s.children[pid] = req.ID
	s.send(reply{ID: req.ID, Pid: pid})
}

// reap reaps every child that exited: a command, whose exit it tells, or an orphan
// reparented to the helper. It reports whether children are left.
func (s *server) reap() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil || pid <= 0 {
			return err == nil
		}
		if id, ok := s.children[pid]; ok {
			delete(s.children, pid)
			s.send(reply{ID: id, Exited: true, Status: uint32(ws)})
		}
	}
}

// send writes an answer. A failed write means the runner is gone: the read loop ends.
func (s *server) send(r reply) {
	b, _ := json.Marshal(r)
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.conn.Write(append(b, '\n'))
}

// shutdown kills the process groups of the commands still running (the runner is gone:
// nothing would wait for them) and reaps them, for at most a second; then, for a moment,
// the orphans of their groups, which were reparented to the helper as they died. (An
// orphan that left its group, a daemon, is left to the helper's own reaper.)
func (s *server) shutdown() {
	s.mu.Lock()
	for pid := range s.children {
		syscall.Kill(-pid, syscall.SIGKILL)
	}
	s.mu.Unlock()
	for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		s.reap()
		s.mu.Lock()
		n := len(s.children)
		s.mu.Unlock()
		if n == 0 {
			break
		}
	}
	for deadline := time.Now().Add(100 * time.Millisecond); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if !s.reap() {
			return
		}
	}
}

// inSession reports whether process pid leads its process group in the session that
// sid leads, or is gone already. Only the helper's descendants are in its session (a
// process cannot join another's), so a pid the helper names that is not would be a
// process of someone else.
func inSession(pid, sid int) bool {
	if pid < 2 {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
		return true // exited and reaped (or being reaped): its group is gone, or goes soon
	}
	if err != nil {
		return false
	}
	// pid (comm) state ppid pgrp session …; comm may hold spaces and parentheses.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return false
	}
	f := strings.Fields(string(b[i+1:]))
	return len(f) >= 4 && f[2] == strconv.Itoa(pid) && f[3] == strconv.Itoa(sid)
}

// socketpair returns the two ends of a new stream socket, close-on-exec.
func socketpair() (ours, theirs *os.File, err error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("socketpair: %w", err)
	}
	return os.NewFile(uintptr(fds[0]), "sandbox-helper"), os.NewFile(uintptr(fds[1]), "sandbox-helper"), nil
}
