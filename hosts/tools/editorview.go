package tools

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// view shows a file's numbered lines or lists a directory. Only a successful file view
// stamps the file: a rejected one authorizes nothing.
func (e *Editor) view(owner, path string, vr []int, guard *guardPaths) Result {
	info, err := os.Stat(path)
	if err != nil {
		return Errorf("%v", err)
	}
	if info.IsDir() {
		if vr != nil {
			return Errorf("view_range applies to files, and %s is a directory", path)
		}
		return e.listDir(path, guard)
	}
	data, info, err := readRegular(path)
	if err != nil {
		return Errorf("%v", err)
	}
	if head := data[:min(len(data), 8<<10)]; bytes.IndexByte(head, 0) >= 0 {
		hint := "use bash (for example xxd | head) to inspect it"
		if SniffImage(head) != "" {
			hint = "it is an image: use view_image"
		}
		return Errorf("%s is a binary file (%d bytes); %s", path, len(data), hint)
	}
	lines := splitLines(string(data))
	start, end := 1, len(lines)
	if vr != nil {
		if len(vr) != 2 {
			return Errorf("view_range must be [start, end], not %d numbers", len(vr))
		}
		start, end = vr[0], vr[1]
		if end == -1 || end > len(lines) {
			end = len(lines)
		}
		if start < 1 || start > max(len(lines), 1) || end < start && len(lines) > 0 {
			return Errorf("view_range [%d, %d] is outside %s, which has %d lines", vr[0], vr[1], path, len(lines))
		}
	}
	// Count the whole output before keeping it, so the error can name its size.
	size := 0
	for i := start; i <= end; i++ {
		size += len(fmt.Sprintf("%6d\t", i)) + len(strings.TrimSuffix(lines[i-1], "\n")) + 1
	}
	if size > e.o.MaxView {
		longest := 0
		for _, l := range lines[start-1 : end] {
			longest = max(longest, len(l))
		}
		return Errorf("viewing %s would print %d bytes, over the %d-byte view limit (the file has %d lines, %d bytes; its longest line here is %d bytes); view a smaller view_range, or use bash with bounded output (head -c, cut -c) for long lines. Nothing was viewed.",
			path, size, e.o.MaxView, len(lines), len(data), longest)
	}
	var out strings.Builder
	out.Grow(size)
	for i := start; i <= end; i++ {
		fmt.Fprintf(&out, "%6d\t%s\n", i, strings.TrimSuffix(lines[i-1], "\n"))
	}
	e.stamp(owner, fingerprint(path, data, info))
	if len(lines) == 0 {
		return Result{Text: fmt.Sprintf("[%s is empty]", path)}
	}
	return Result{Text: out.String()}
}

// listDir lists root two levels deep, skipping hidden entries. Directories end in "/".
// It does not descend into a directory the guard refuses.
func (e *Editor) listDir(root string, guard *guardPaths) Result {
	var sb strings.Builder
	fmt.Fprintf(&sb, "%s, two levels deep, hidden entries skipped:\n", root)
	var walk func(dir, prefix string, depth int) error
	walk = func(dir, prefix string, depth int) error {
		entries, err := os.ReadDir(dir)
		if err != nil {
			return err
		}
		for _, d := range entries {
			if strings.HasPrefix(d.Name(), ".") {
				continue
			}
			name := prefix + d.Name()
			if !d.IsDir() {
				sb.WriteString(name + "\n")
				continue
			}
			sub := filepath.Join(dir, d.Name())
			if guard.check(e.Name(), sub, sub, false) != nil {
				sb.WriteString(name + "/ [not listed: myco's own files]\n")
				continue
			}
			sb.WriteString(name + "/\n")
			if depth < 2 {
				if err := walk(sub, name+"/", depth+1); err != nil {
					fmt.Fprintf(&sb, "%s/ [unreadable: %v]\n", name, err)
				}
			}
		}
		return nil
	}
	if err := walk(root, "", 1); err != nil {
		return Errorf("list %s: %v", root, err)
	}
	if sb.Len() > e.o.MaxView {
		return Errorf("the listing of %s is %d bytes, over the %d-byte view limit; list a subdirectory, or use bash (ls, find | head) with bounded output", root, sb.Len(), e.o.MaxView)
	}
	return Result{Text: sb.String()}
}
