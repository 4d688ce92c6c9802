package workspace

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"unicode/utf8"
)

// PageBytes is the nominal size of one page of a large text file.
const PageBytes = 256 << 10

// lineSearch is how far past a page's nominal start a line start is looked for; a line
// longer than that is cut at a character boundary instead.
const lineSearch = 16 << 10

// Page is one page of a text file: a byte range that starts and ends on line boundaries
// (or, inside a line longer than 16 KiB, on character boundaries), so that consecutive
// pages cover the file exactly once.
type Page struct {
	N, Count   int   // this page's number, from 1, and the number of pages
	Start, End int64 // the byte range [Start, End) of the file
	Size       int64 // the file's size when it was opened
	Text       string
	// Line is the number of the line the page starts in, from 1 (found by counting the
	// line breaks before Start).
	Line int
}

// Page reads page n, from 1, of the regular file name (see [Files.Stat] for the names it
// refuses) without reading the rest of the file: about [PageBytes], so a file has about
// size/PageBytes pages and at least one. Bytes that are not UTF-8 become U+FFFD. A page
// number out of range is not found, like a missing file. It works on any regular file; the
// viewer uses it for [KindText] (and may for [KindMarkdown]).
func (f *Files) Page(name string, n int) (Page, error) {
	fh, err := f.Open(name)
	if err != nil {
		return Page{}, err
	}
	defer fh.Close()
	p, err := readPage(fh, fh.Info.Size, n)
	if err != nil {
		return Page{}, fmt.Errorf("page %d of workspace file %s: %w", n, oneLine(name), err)
	}
	return p, nil
}

// readPage reads page n of the first size bytes of r.
func readPage(r io.ReaderAt, size int64, n int) (Page, error) {
	count := max(1, int((size+PageBytes-1)/PageBytes))
	if count > 1 {
		// Only the last page can come out empty: when the line start after its nominal
		// start is the end of the file.
		last, err := pageStart(r, size, count-1)
		if err != nil {
			return Page{}, err
		}
		if last >= size {
			count--
		}
	}
	if n < 1 || n > count {
		return Page{}, fmt.Errorf("there are %d pages: %w", count, fs.ErrNotExist)
	}
	start, err := pageStart(r, size, n-1)
	if err != nil {
		return Page{}, err
	}
	end, err := pageStart(r, size, n)
	if err != nil {
		return Page{}, err
	}
	buf := make([]byte, end-start)
	m, err := r.ReadAt(buf, start)
	if err != nil && !errors.Is(err, io.EOF) {
		return Page{}, err
	}
	lines, err := countLines(r, start)
	if err != nil {
		return Page{}, err
	}
	return Page{N: n, Count: count, Start: start, End: start + int64(m), Size: size, Line: lines + 1,
		Text: strings.ToValidUTF8(string(buf[:m]), "\uFFFD")}, nil
}

// countLines counts the line breaks in the first n bytes of r, reading them in blocks.
func countLines(r io.ReaderAt, n int64) (int, error) {
	buf := make([]byte, 64<<10)
	lines := 0
	for off := int64(0); off < n; {
		m, err := r.ReadAt(buf[:min(int64(len(buf)), n-off)], off)
		lines += bytes.Count(buf[:m], []byte{'\n'})
		off += int64(m)
		if err != nil && !errors.Is(err, io.EOF) {
			return 0, err
		}
		if m == 0 {
			break
		}
	}
	return lines, nil
}

// PageOf returns the number of the page of the regular file name (see [Files.Page]) that
// holds line, from 1: the last page for a line past the end.
func (f *Files) PageOf(name string, line int) (int, error) {
	fh, err := f.Open(name)
	if err != nil {
		return 0, err
	}
	defer fh.Close()
	size := fh.Info.Size
	// The offset where line starts, found by counting line breaks.
	buf := make([]byte, 64<<10)
	off, seen := int64(0), 1
scan:
	for off < size && seen < line {
		m, err := fh.ReadAt(buf[:min(int64(len(buf)), size-off)], off)
		for i := range m {
			if buf[i] != '\n' {
				continue
			}
			if seen++; seen == line {
				off += int64(i + 1)
				break scan
			}
		}
		off += int64(m)
		if err != nil && !errors.Is(err, io.EOF) {
			return 0, fmt.Errorf("find line %d of workspace file %s: %w", line, oneLine(name), err)
		}
		if m == 0 {
			break
		}
	}
	count := max(1, int((size+PageBytes-1)/PageBytes))
	k := min(int(off/PageBytes), count-1)
	for k > 0 {
		start, err := pageStart(fh, size, k)
		if err != nil {
			return 0, err
		}
		if start <= off {
			break
		}
		k--
	}
	for k+1 < count {
		next, err := pageStart(fh, size, k+1)
		if err != nil {
			return 0, err
		}
		if next > off || next >= size {
			break
		}
		k++
	}
	return k + 1, nil
}

// pageStart returns where page k, from 0, starts: the first line start at or after
// k*PageBytes and within lineSearch of it, else the character boundary at or before
// k*PageBytes. It reads at most lineSearch+4 bytes.
func pageStart(r io.ReaderAt, size int64, k int) (int64, error) {
	off := int64(k) * PageBytes
	if k == 0 {
		return 0, nil
	}
	if off >= size {
		return size, nil
	}
	base := off - (utf8.UTFMax - 1) // off >= PageBytes: never negative
	buf := make([]byte, lineSearch+utf8.UTFMax)
	m, err := r.ReadAt(buf, base)
	if err != nil && !errors.Is(err, io.EOF) {
		return 0, err
	}
	buf = buf[:m]
	if m < utf8.UTFMax { // the file shrank since its stat
		return min(off, base+int64(m)), nil
	}
	// A '\n' at off-1 means a line starts at off.
	if i := bytes.IndexByte(buf[utf8.UTFMax-2:], '\n'); i >= 0 {
		return min(base+int64(utf8.UTFMax-2+i+1), size), nil
	}
	s := off
	for s > base && !utf8.RuneStart(buf[s-base]) {
		s--
	}
	return s, nil
}
