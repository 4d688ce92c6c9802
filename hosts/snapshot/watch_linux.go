package snapshot

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
	"unsafe"
)

// inotify is the Linux notifier: one inotify instance for the store, non-blocking, read
// only when a capture starts (the kernel queues the events meanwhile; past its queue's
// size it reports an overflow, which costs the watched directories one full walk).
type inotify struct {
	fd  int
	buf []byte
}

// watchMask: every change of a directory's entries or of a file in it that a capture
// records (content, size, mode, times, links), and the directory itself moved or removed.
const watchMask = syscall.IN_CREATE | syscall.IN_DELETE | syscall.IN_MODIFY | syscall.IN_ATTRIB |
	syscall.IN_MOVED_FROM | syscall.IN_MOVED_TO | syscall.IN_DELETE_SELF | syscall.IN_MOVE_SELF |
	syscall.IN_ONLYDIR

func newNotifier() (notifier, error) {
	fd, err := syscall.InotifyInit1(syscall.IN_NONBLOCK | syscall.IN_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("inotify_init1", err)
	}
	return &inotify{fd: fd, buf: make([]byte, 64<<10)}, nil
}

// add watches the directory open as f, through /proc/self/fd so that the watch is on
// exactly what f is (not on whatever its path names by now).
func (n *inotify) add(f *os.File) (int32, error) {
	wd, err := syscall.InotifyAddWatch(n.fd, "/proc/self/fd/"+strconv.Itoa(int(f.Fd())), watchMask)
	if err != nil {
		return 0, os.NewSyscallError("inotify_add_watch", err)
	}
	return int32(wd), nil
}

func (n *inotify) remove(wd int32) {
	syscall.InotifyRmWatch(n.fd, uint32(wd)) // an error means the kernel dropped it already
}

// drain reads the events queued so far, without waiting.
func (n *inotify) drain(fn func(event)) error {
	for {
		k, err := syscall.Read(n.fd, n.buf)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if errors.Is(err, syscall.EAGAIN) {
			return nil
		}
		if err != nil {
			return os.NewSyscallError("read inotify", err)
		}
		if k <= 0 {
			return nil
		}
		for off := 0; off+syscall.SizeofInotifyEvent <= k; {
			raw := (*syscall.InotifyEvent)(unsafe.Pointer(&n.buf[off]))
			off += syscall.SizeofInotifyEvent + int(raw.Len)
			fn(event{
				wd:       raw.Wd,
				overflow: raw.Mask&syscall.IN_Q_OVERFLOW != 0,
				self:     raw.Mask&(syscall.IN_DELETE_SELF|syscall.IN_MOVE_SELF|syscall.IN_UNMOUNT) != 0,
				gone:     raw.Mask&syscall.IN_IGNORED != 0,
			})
		}
	}
}

func (n *inotify) close() { syscall.Close(n.fd) }

// maxWatches is how many directories a store may watch: a quarter of the user's limit
// (which editors and other tools share), 8,192 when it cannot be read.
func maxWatches() int {
	b, err := os.ReadFile("/proc/sys/fs/inotify/max_user_watches")
	if err != nil {
		return 8192
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || n <= 0 {
		return 8192
	}
	return max(n/4, 1)
}

// Local file systems, whose changes the kernel reports wherever they are made. A network
// or FUSE file system can change without an event (another machine's write), so its
// directories are listed at every capture.
var watchableFS = map[int64]bool{
	0xEF53:     true, // ext2, ext3, ext4
	0x58465342: true, // xfs
	0x9123683E: true, // btrfs
	0x01021994: true, // tmpfs
	0x858458F6: true, // ramfs
	0x794C7630: true, // overlayfs
	0xF2F52010: true, // f2fs
	0x2FC12FC1: true, // zfs
	0xCA451A4E: true, // bcachefs
	0x52654973: true, // reiserfs
	0x3153464A: true, // jfs
}

// watchable reports whether the directory f is on a file system whose changes the
// kernel reports.
func watchable(f *os.File) bool {
	var st syscall.Statfs_t
	if err := syscall.Fstatfs(int(f.Fd()), &st); err != nil {
		return false
	}
	return watchableFS[int64(st.Type)]
}
