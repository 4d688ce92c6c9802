package snapshot

import (
	"io/fs"
	"syscall"
)

// statOf returns what the stat cache keys a file on: device, inode, mtime and ctime in ns.
func statOf(info fs.FileInfo) (dev, ino uint64, mtime, ctime int64) {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, info.ModTime().UnixNano(), 0
	}
	return uint64(st.Dev), st.Ino, st.Mtimespec.Nano(), st.Ctimespec.Nano()
}

// nlinkOf returns a file's count of hard links (1 when unknown).
func nlinkOf(info fs.FileInfo) uint64 {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}
