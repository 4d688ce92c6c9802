package workspace

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"myco.dev/internal/atomicfile"
)

// ExportManual writes the Markdown files of manual (the embedded docs/) into dir, replacing
// what an earlier start exported: each file is written atomically, and .md files that are
// no longer part of the manual are removed. Other files in dir are left alone.
func ExportManual(manual fs.FS, dir string) error {
	names, err := fs.Glob(manual, "*.md")
	if err != nil {
		return fmt.Errorf("export the manual: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("export the manual: %w", err)
	}
	keep := map[string]bool{}
	var bufs [2][]byte
	for _, name := range names {
		dst := filepath.Join(dir, name)
		if same(manual, name, dst, &bufs) {
			keep[name] = true
			continue
		}
		data, err := fs.ReadFile(manual, name)
		if err != nil {
			return fmt.Errorf("export the manual: %w", err)
		}
		if err := atomicfile.Write(dst, data, 0o644); err != nil {
			return fmt.Errorf("export the manual: %w", err)
		}
		keep[name] = true
	}
	des, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("export the manual: %w", err)
	}
	for _, de := range des {
		if n := de.Name(); strings.HasSuffix(n, ".md") && !keep[n] && de.Type().IsRegular() {
			if err := os.Remove(filepath.Join(dir, n)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("export the manual: remove the stale %s: %w", n, err)
			}
		}
	}
	return nil
}

// same reports whether file dst holds what name holds in manual, compared a piece at a time
// in bufs (made on first use): every start of myco exports the manual, and reading both
// whole would allocate twice its size, a collection's worth, before the first request.
func same(manual fs.FS, name, dst string, bufs *[2][]byte) bool {
	want, err := manual.Open(name)
	if err != nil {
		return false
	}
	defer want.Close()
	// O_NONBLOCK: a FIFO in manual/ (bash can write there) must not hang every start; it
	// is not regular, so it is replaced below.
	got, err := os.OpenFile(dst, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return false
	}
	defer got.Close()
	wi, err1 := want.Stat()
	gi, err2 := got.Stat()
	if err1 != nil || err2 != nil || !gi.Mode().IsRegular() || wi.Size() != gi.Size() {
		return false
	}
	if bufs[0] == nil {
		bufs[0], bufs[1] = make([]byte, 16<<10), make([]byte, 16<<10)
	}
	for { // the sizes are equal: the pieces end together
		n, err := io.ReadFull(want, bufs[0])
		if n > 0 {
			if _, err := io.ReadFull(got, bufs[1][:n]); err != nil || !bytes.Equal(bufs[0][:n], bufs[1][:n]) {
				return false
			}
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return true
		}
		if err != nil {
			return false
		}
	}
}

// ManualBlock renders the # Manual section: where the exported manual is and what each
// page covers (its first heading).
func ManualBlock(manual fs.FS, dir string) string {
	names, _ := fs.Glob(manual, "*.md")
	sort.Strings(names)
	var b strings.Builder
	b.WriteString("# Manual\n\n")
	fmt.Fprintf(&b, "myco's own user manual is exported to %s on every start. Read it with the editor when you need myco's configuration, its host operations (remote hosts, the non-interactive ssh check), the command line or the session format, instead of guessing:\n\n", dir)
	for _, n := range names {
		line := "- " + filepath.Join(dir, n)
		if t := title(manual, n); t != "" {
			line += ": " + t
		}
		b.WriteString(line + "\n")
	}
	return b.String()
}
