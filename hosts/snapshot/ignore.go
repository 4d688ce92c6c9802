package snapshot

import (
	"bytes"
	"crypto/sha256"
	"os"
	"path/filepath"
	"strings"
)

// The .gitignore rules, as git applies them (gitignore(5)): blank lines and # comments,
// trailing spaces unless escaped, "!" to re-include, a trailing "/" for directories only,
// a slash at the start or in the middle to anchor a pattern to its file's directory, "*",
// "?", "[...]" (with "!" or "^", ranges and [:classes:]) and "**" as git's wildmatch has
// them. A deeper .gitignore overrides a shallower one, and the last matching line of a file
// wins. The project's .git/info/exclude and the user's core.excludesFile are not read: the
// project's .git is never read, and the user's git configuration is not the project's.

// pattern is one line of a .gitignore.
type pattern struct {
	glob     string // the pattern, without "!", its leading "/" and its trailing "/"
	neg      bool
	dirOnly  bool
	anchored bool   // matched against the path relative to the file's directory
	lit      string // when not anchored: a name to compare, or the suffix after a "*"
	mode     byte   // not anchored: 'l' literal name, 's' suffix, 'g' wildmatch
}

// patternFile is a parsed .gitignore file (or the caller's extra patterns).
type patternFile struct{ pats []pattern }

func parsePatterns(text []byte) *patternFile {
	text = bytes.TrimPrefix(text, []byte("\xef\xbb\xbf"))
	pf := &patternFile{}
	lines := bytes.Split(text, []byte("\n"))
	for i, line := range lines {
		if i < len(lines)-1 {
			line = bytes.TrimSuffix(line, []byte("\r")) // as git: a CRLF file's lines
		}
		if p, ok := parsePattern(string(line)); ok {
			pf.pats = append(pf.pats, p)
		}
	}
	return pf
}

func parsePattern(line string) (pattern, bool) {
	if line == "" || line[0] == '#' {
		return pattern{}, false
	}
	line = trimTrailingSpaces(line)
	var p pattern
	if strings.HasPrefix(line, "!") {
		p.neg, line = true, line[1:]
	}
	if strings.HasSuffix(line, "/") {
		p.dirOnly, line = true, line[:len(line)-1]
	}
	if line == "" {
		return pattern{}, false
	}
	if strings.IndexByte(line, '/') >= 0 {
		p.anchored = true
		line = strings.TrimPrefix(line, "/")
		// "**/name" matches name at any depth, as an unanchored name does.
		if rest, ok := strings.CutPrefix(line, "**/"); ok && !strings.ContainsAny(rest, "/") && !strings.Contains(rest, "**") {
			p.anchored, line = false, rest
		}
	}
	p.glob = line
	if !p.anchored {
		switch {
		case !strings.ContainsAny(line, `*?[\`):
			p.mode, p.lit = 'l', line
		case line[0] == '*' && !strings.ContainsAny(line[1:], `*?[\`):
			p.mode, p.lit = 's', line[1:]
		default:
			p.mode = 'g'
		}
	}
	return p, true
}

// trimTrailingSpaces drops trailing spaces that a backslash does not escape.
func trimTrailingSpaces(s string) string {
	last := -1
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case ' ':
			if last < 0 {
				last = i
			}
		case '\\':
			i++
			if i >= len(s) {
				return s
			}
			last = -1
		default:
			last = -1
		}
	}
	if last >= 0 {
		return s[:last]
	}
	return s
}

// match reports whether the pattern matches a file whose path relative to the pattern's
// directory is rel and whose base name is name.
func (p *pattern) match(rel, name string, isDir bool) bool {
	if p.dirOnly && !isDir {
		return false
	}
	if p.anchored {
		return wildmatch(p.glob, rel, true)
	}
	switch p.mode {
	case 'l':
		return name == p.lit
	case 's':
		return strings.HasSuffix(name, p.lit)
	}
	return wildmatch(p.glob, name, false)
}

// rules is the set of .gitignore files that apply in one directory: a chain from the
// deepest file to the shallowest, then the caller's extra patterns. Immutable, so a
// directory's walkers share their parent's.
type rules struct {
	up     *rules
	base   string // the file's directory, relative to the captured one ("" for it)
	prefix string // for a file above the captured directory: the captured one relative to it
	pf     *patternFile
}

// with returns r with the patterns of the .gitignore in directory base added on top.
func (r *rules) with(base string, pf *patternFile) *rules {
	if pf == nil || len(pf.pats) == 0 {
		return r
	}
	return &rules{up: r, base: base, pf: pf}
}

// ignored reports whether the file at rel (relative to the captured directory) is ignored
// by the rules, not counting its directories (the walk does not enter an ignored one).
func (r *rules) ignored(rel string, isDir bool) bool {
	name := rel[strings.LastIndexByte(rel, '/')+1:]
	for l := r; l != nil; l = l.up {
		sub := rel
		switch {
		case l.prefix != "":
			sub = l.prefix + "/" + rel
		case l.base != "":
			sub = rel[len(l.base)+1:]
		}
		pats := l.pf.pats
		for i := len(pats) - 1; i >= 0; i-- {
			if pats[i].match(sub, name, isDir) {
				return !pats[i].neg
			}
		}
	}
	return false
}

// matcher answers, for a snapshot, whether a path was outside what its capture saw
// (ignored, or in a directory it could not read): its state there is unknown.
type matcher struct {
	layers map[string]*patternFile // by base, relative ("" for the top)
	above  *rules                  // the files above the directory, and the extra patterns
}

// ignoredPath reports whether rel or one of its directories is ignored.
func (m *matcher) ignoredPath(rel string, isDir bool) bool {
	r := m.above
	if pf := m.layers[""]; pf != nil {
		r = r.with("", pf)
	}
	start := 0
	for {
		i := strings.IndexByte(rel[start:], '/')
		if i < 0 {
			return r.ignored(rel, isDir)
		}
		dir := rel[:start+i]
		if r.ignored(dir, true) {
			return true
		}
		if pf := m.layers[dir]; pf != nil {
			r = r.with(dir, pf)
		}
		start += i + 1
	}
}

// aboveRules builds the rules of .gitignore files above dir, given as (their directory,
// their patterns) from the top down, under the caller's extra patterns.
func aboveRules(dir string, extra *patternFile, files []abovePatterns) *rules {
	var r *rules
	if extra != nil && len(extra.pats) > 0 {
		r = &rules{pf: extra}
	}
	for _, f := range files {
		rel, err := filepath.Rel(f.dir, dir)
		if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
			continue
		}
		if len(f.pf.pats) > 0 {
			r = &rules{up: r, prefix: filepath.ToSlash(rel), pf: f.pf}
		}
	}
	return r
}

type abovePatterns struct {
	dir string
	pf  *patternFile
}

// patterns returns the parsed .gitignore with blob h: from the parsed ones, from data when
// given, else from the store.
func (s *Store) patterns(h sum, data []byte) (*patternFile, error) {
	s.mu.Lock()
	pf := s.rules[h]
	s.mu.Unlock()
	if pf != nil {
		return pf, nil
	}
	if data == nil {
		var err error
		if data, err = s.object(h); err != nil {
			return nil, err
		}
	}
	pf = parsePatterns(data)
	s.mu.Lock()
	s.rules[h] = pf
	s.mu.Unlock()
	return pf, nil
}

// aboveRules reads the .gitignore files of dir's parents up to the top of the repository
// that holds dir (the nearest parent with a .git), if any, and adds them and the caller's
// patterns to rec.
func (w *walker) aboveRules(dir string, exclude []string, rec *record) (*rules, error) {
	var extra *patternFile
	if len(exclude) > 0 {
		extra = parsePatterns([]byte(strings.Join(exclude, "\n")))
	}
	if w.noGitignore {
		return aboveRules(dir, extra, nil), nil
	}
	var chain []string // dir's parents, nearest first
	top := ""
	for d := dir; ; {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			top = d
			break
		}
		up := filepath.Dir(d)
		if up == d {
			break
		}
		d = up
		chain = append(chain, d)
	}
	var files []abovePatterns
	if top != "" && top != dir {
		for i := len(chain) - 1; i >= 0; i-- {
			d := chain[i]
			if len(d) < len(top) {
				continue
			}
			pr, err := os.OpenRoot(d)
			if err != nil {
				continue
			}
			data, err := readRegular(pr, ".gitignore", nil, w.max)
			pr.Close()
			if err != nil {
				continue
			}
			h := sha256.Sum256(data)
			if !w.s.has(h) {
				if err := w.pw.add(objBlob, h, data); err != nil {
					return nil, err
				}
			}
			pf, err := w.s.patterns(h, data)
			if err != nil {
				return nil, err
			}
			rec.rules = append(rec.rules, rule{base: d, blob: h})
			files = append(files, abovePatterns{dir: d, pf: pf})
		}
	}
	return aboveRules(dir, extra, files), nil
}
