package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"unicode/utf8"
)

// allPages reads every page of name and checks that they tile the file: contiguous, each
// within bounds, numbered, and with the same count.
func allPages(t *testing.T, files *Files, name string) []Page {
	t.Helper()
	first, err := files.Page(name, 1)
	if err != nil {
		t.Fatalf("Page(%s, 1) = %v", name, err)
	}
	pages := []Page{first}
	for n := 2; n <= first.Count; n++ {
		p, err := files.Page(name, n)
		if err != nil {
			t.Fatalf("Page(%s, %d) = %v", name, n, err)
		}
		pages = append(pages, p)
	}
	var at int64
	for i, p := range pages {
		if p.N != i+1 || p.Count != first.Count || p.Start != at || p.End < p.Start || p.End-p.Start > PageBytes+lineSearch {
			t.Fatalf("page %d = N %d of %d, [%d, %d); want it to start at %d and hold at most %d bytes", i+1, p.N, p.Count, p.Start, p.End, at, PageBytes+lineSearch)
		}
		if p.End == p.Start && p.Size > 0 {
			t.Fatalf("page %d of %d is empty", p.N, p.Count)
		}
		at = p.End
	}
	if at != first.Size {
		t.Fatalf("the pages end at %d, the file at %d", at, first.Size)
	}
	for _, n := range []int{0, -1, first.Count + 1} {
		if _, err := files.Page(name, n); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("Page(%s, %d) = %v, want not found", name, n, err)
		}
	}
	return pages
}

func TestPageLines(t *testing.T) {
	ws := t.TempDir()
	var b strings.Builder
	for i := 0; b.Len() < 2*PageBytes+1000; i++ {
		fmt.Fprintf(&b, "line %d: %s\n", i, strings.Repeat("ü", i%70))
	}
	content := b.String()
	write(t, filepath.Join(ws, "big.log"), content)
	files, err := OpenFiles(ws)
	if err != nil {
		t.Fatal(err)
	}
	pages := allPages(t, files, "big.log")
	if len(pages) != 3 {
		t.Errorf("%d bytes in %d pages, want 3", len(content), len(pages))
	}
	var joined strings.Builder
	for _, p := range pages {
		if !strings.HasSuffix(p.Text, "\n") || !strings.HasPrefix(p.Text, "line ") {
			t.Errorf("page %d is not whole lines: starts %q, ends %q", p.N, p.Text[:10], p.Text[len(p.Text)-10:])
		}
		joined.WriteString(p.Text)
	}
	if joined.String() != content {
		t.Error("the pages joined are not the file")
	}
	// Each page knows the number of its first line ("line 0" is line 1), and PageOf finds
	// the page of any line.
	lines := strings.Count(content, "\n")
	for _, p := range pages {
		var want int
		fmt.Sscanf(p.Text, "line %d:", &want)
		if p.Line != want+1 {
			t.Errorf("page %d starts at line %d, want %d", p.N, p.Line, want+1)
		}
		last := p.Line + strings.Count(p.Text, "\n") - 1
		for _, line := range []int{p.Line, last} {
			if n, err := files.PageOf("big.log", line); err != nil || n != p.N {
				t.Errorf("PageOf(line %d) = %d, %v; want page %d", line, n, err, p.N)
			}
		}
	}
	if n, err := files.PageOf("big.log", lines+100); err != nil || n != len(pages) {
		t.Errorf("PageOf(past the end) = %d, %v; want the last page", n, err)
	}
}

// TestPageLongLine: a file that is one long line is cut at character boundaries, and no
// page is empty.
func TestPageLongLine(t *testing.T) {
	ws := t.TempDir()
	content := strings.Repeat("日本語", PageBytes/3)
	write(t, filepath.Join(ws, "min.json"), content)
	files, _ := OpenFiles(ws)
	pages := allPages(t, files, "min.json")
	var joined strings.Builder
	for _, p := range pages {
		if !utf8.ValidString(p.Text) || strings.ContainsRune(p.Text, utf8.RuneError) {
			t.Errorf("page %d was cut inside a character", p.N)
		}
		joined.WriteString(p.Text)
	}
	if len(pages) != 3 || joined.String() != content {
		t.Errorf("%d pages; joined equal: %v", len(pages), joined.String() == content)
	}
}

func TestPageEdges(t *testing.T) {
	ws := t.TempDir()
	write(t, filepath.Join(ws, "empty.txt"), "")
	write(t, filepath.Join(ws, "small.txt"), "one\ntwo\n")
	// A page and a few bytes of its last line: page 2 would start at the end, so there is one.
	write(t, filepath.Join(ws, "edge.txt"), strings.Repeat("x", PageBytes+5)+"\n")
	write(t, filepath.Join(ws, "bad.txt"), "ok \xff\xfe end")
	files, _ := OpenFiles(ws)
	if p := allPages(t, files, "empty.txt"); len(p) != 1 || p[0].Text != "" || p[0].Count != 1 {
		t.Errorf("empty file pages = %+v", p)
	}
	if p := allPages(t, files, "small.txt"); len(p) != 1 || p[0].Text != "one\ntwo\n" {
		t.Errorf("small file pages = %+v", p)
	}
	if p := allPages(t, files, "edge.txt"); len(p) != 1 || len(p[0].Text) != PageBytes+6 {
		t.Errorf("edge file: %d pages, want 1 with the whole file", len(p))
	}
	if p := allPages(t, files, "bad.txt"); p[0].Text != "ok \uFFFD end" {
		t.Errorf("bytes that are not UTF-8 = %q, want U+FFFD", p[0].Text)
	}
}

// TestPageHugeFile: a page of a 1 GiB file is read without reading the rest of it.
func TestPageHugeFile(t *testing.T) {
	ws := t.TempDir()
	f, err := os.Create(filepath.Join(ws, "huge.log"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(1 << 30); err != nil {
		t.Fatal(err)
	}
	f.Close()
	files, _ := OpenFiles(ws)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	p, err := files.Page("huge.log", 2000)
	runtime.ReadMemStats(&after)
	if err != nil || p.Count != 4096 || p.Start != 1999*PageBytes || p.End != 2000*PageBytes {
		t.Fatalf("Page(huge.log, 2000) = N %d of %d, [%d, %d), %v", p.N, p.Count, p.Start, p.End, err)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 8<<20 {
		t.Errorf("reading one page allocated %d MiB", n>>20)
	}
}
