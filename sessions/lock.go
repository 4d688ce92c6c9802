package sessions

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// lockPollMax bounds the wait between two attempts at a session lock another process holds.
const lockPollMax = 250 * time.Millisecond

// lockSession takes session id's writer gate: first the store's in-process gate, which
// serializes the runtimes of this store, then an advisory flock(2) on the hidden file
// .ID.session.lock next to the session file, which serializes processes (and stores over
// the same directory).
// When another holder has the file lock it calls waiting once with a description of the
// holder and waits, bounded by ctx. The returned func releases both.
func (s *Store) lockSession(ctx context.Context, id string, waiting func(holder string)) (unlock func(), err error) {
	g, _ := s.gates.LoadOrStore(id, make(chan struct{}, 1))
	gate := g.(chan struct{})
	select {
	case gate <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("session %s: wait for the writer gate: %w", id, context.Cause(ctx))
	}
	// O_NONBLOCK: a FIFO put there must not hang the writer.
	f, err := os.OpenFile(filepath.Join(s.dir, "."+id+fileExt+".lock"), os.O_RDWR|os.O_CREATE|syscall.O_NONBLOCK, 0o600)
	if err != nil {
		<-gate
		return nil, fmt.Errorf("lock session %s: %w", id, err)
	}
	fail := func(err error) (func(), error) {
		f.Close()
		<-gate
		return nil, err
	}
	delay, told := 10*time.Millisecond, false
	for tries := 0; ; tries++ {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return fail(fmt.Errorf("lock session %s: flock %s: %w", id, f.Name(), err))
		}
		holder := lockHolder(f)
		// The first miss may come between the holder's flock and its writing its pid.
		if !told && tries > 0 && waiting != nil {
			waiting(holder)
			told = true
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return fail(fmt.Errorf("session %s is in use by %s: %w", id, holder, context.Cause(ctx)))
		case <-t.C:
		}
		delay = min(2*delay, lockPollMax)
	}
	// Who holds it, for the message of a process that has to wait: one fixed-width write,
	// so a reader never sees a mix of two pids.
	f.WriteAt(fmt.Appendf(nil, "%20d\n", os.Getpid()), 0)
	s.held.Store(id, struct{}{})
	return func() {
		s.held.Delete(id)
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
		<-gate
	}, nil
}

// lockHolder describes the holder of the lock file f from the pid written in it.
func lockHolder(f *os.File) string {
	b := make([]byte, 32)
	n, _ := f.ReadAt(b, 0)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b[:n])))
	switch {
	case err != nil:
		return "another myco process"
	case pid == os.Getpid():
		return fmt.Sprintf("another runtime of this process (pid %d)", pid)
	default:
		return fmt.Sprintf("another myco process (pid %d)", pid)
	}
}

// changed reports whether the file of session id is no longer what was read from it or
// last written to it (f): another process wrote to it, replaced it, or a torn last write
// follows the valid records.
func (s *Store) changed(id string, f fileState) bool {
	st, err := os.Stat(s.Path(id))
	if err != nil {
		return true
	}
	return f.info == nil || !os.SameFile(f.info, st) || st.Size() != f.size
}

// reload returns session id as its file holds it now, and what it was read from, when the
// file changed since f; it returns nil when it did not. It cuts off a torn last write
// (never acknowledged) so that nothing is appended after it. Call it with the session's
// writer gate held.
func (s *Store) reload(ctx context.Context, id string, f fileState) (*Session, fileState, error) {
	if !s.changed(id, f) {
		return nil, f, nil
	}
	fresh, file, err := s.load(ctx, id)
	if err != nil {
		return nil, f, fmt.Errorf("reload session %s, which changed on disk: %w", id, err)
	}
	if fresh.Upgraded == 0 && file.info.Size() > file.size {
		if err := os.Truncate(s.Path(id), file.size); err != nil {
			return nil, f, fmt.Errorf("session %s: cut off a torn last write: %w", id, err)
		}
		if file.info, err = os.Stat(s.Path(id)); err != nil {
			return nil, f, fmt.Errorf("session %s: %w", id, err)
		}
	}
	return fresh, file, nil
}

// Holder reports whether another process holds session id's writer lock (it runs a turn or
// a compaction on it), and who. It does not wait and takes nothing. A lock this store holds
// (a metadata write of this process, a turn of one of its runtimes) is not another's: the
// in-process gate orders those.
func (s *Store) Holder(id string) (holder string, held bool) {
	if _, ok := s.held.Load(id); ok {
		return "", false
	}
	f, err := os.OpenFile(filepath.Join(s.dir, "."+id+fileExt+".lock"), os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return "", false // no lock file: nobody ever took it
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); err != nil {
		return lockHolder(f), errors.Is(err, syscall.EWOULDBLOCK)
	}
	syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return "", false
}
