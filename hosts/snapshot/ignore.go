package snapshot

import (
	"bytes"
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

// wildmatch is git's wildmatch (wildmatch.c), which .gitignore patterns use: with pathname,
// "*", "?" and classes do not match "/", and "**" between slashes matches any number of
// directories.
func wildmatch(pat, text string, pathname bool) bool {
	return dowild(pat, 0, text, 0, pathname) == wmMatch
}

const (
	wmNoMatch = iota
	wmMatch
	wmAbortAll
	wmAbortToStarStar
)

// at returns s[i], or 0 past its end (the C string's terminator).
func at(s string, i int) byte {
	if i < len(s) {
		return s[i]
	}
	return 0
}

func isGlobSpecial(c byte) bool { return c == '*' || c == '?' || c == '[' || c == '\\' }

func dowild(pat string, p int, text string, t int, pathname bool) int {
	for ; at(pat, p) != 0; p, t = p+1, t+1 {
		pc := pat[p]
		tc := at(text, t)
		if tc == 0 && pc != '*' {
			return wmAbortAll
		}
		switch pc {
		case '\\':
			p++
			if at(pat, p) != tc {
				return wmNoMatch
			}
			continue
		default:
			if tc != pc {
				return wmNoMatch
			}
			continue
		case '?':
			if pathname && tc == '/' {
				return wmNoMatch
			}
			continue
		case '*':
			var matchSlash bool
			p++
			if at(pat, p) == '*' {
				prev := p - 2
				for p++; at(pat, p) == '*'; p++ {
				}
				if (prev < 0 || pat[prev] == '/') &&
					(at(pat, p) == 0 || at(pat, p) == '/' || (at(pat, p) == '\\' && at(pat, p+1) == '/')) {
					if at(pat, p) == '/' && dowild(pat, p+1, text, t, pathname) == wmMatch {
						return wmMatch
					}
					matchSlash = true
				} else {
					matchSlash = !pathname
				}
			} else {
				matchSlash = !pathname
			}
			if at(pat, p) == 0 {
				if !matchSlash && strings.IndexByte(text[t:], '/') >= 0 {
					return wmAbortToStarStar
				}
				return wmMatch
			} else if !matchSlash && pat[p] == '/' {
				i := strings.IndexByte(text[t:], '/')
				if i < 0 {
					return wmAbortAll
				}
				t += i
				continue // the loop consumes the slash of both
			}
			for {
				if tc == 0 {
					break
				}
				if pc := pat[p]; !isGlobSpecial(pc) {
					for tc = at(text, t); tc != 0 && (matchSlash || tc != '/'); tc = at(text, t) {
						if tc == pc {
							break
						}
						t++
					}
					if tc != pc {
						if matchSlash {
							return wmAbortAll
						}
						return wmAbortToStarStar
					}
				}
				if m := dowild(pat, p, text, t, pathname); m != wmNoMatch {
					if !matchSlash || m != wmAbortToStarStar {
						return m
					}
				} else if !matchSlash && tc == '/' {
					return wmAbortToStarStar
				}
				t++
				tc = at(text, t)
			}
			return wmAbortAll
		case '[':
			p++
			c := at(pat, p)
			if c == '^' {
				c = '!'
			}
			negated := c == '!'
			if negated {
				p++
				c = at(pat, p)
			}
			var prev byte
			matched := false
			for {
				if c == 0 {
					return wmAbortAll
				}
				if c == '\\' {
					p++
					c = at(pat, p)
					if c == 0 {
						return wmAbortAll
					}
					if tc == c {
						matched = true
					}
				} else if c == '-' && prev != 0 && at(pat, p+1) != 0 && at(pat, p+1) != ']' {
					p++
					c = at(pat, p)
					if c == '\\' {
						p++
						c = at(pat, p)
						if c == 0 {
							return wmAbortAll
						}
					}
					if tc <= c && tc >= prev {
						matched = true
					}
					c = 0 // so that prev becomes 0
				} else if c == '[' && at(pat, p+1) == ':' {
					p += 2
					s := p
					for ; at(pat, p) != 0 && pat[p] != ']'; p++ {
					}
					if at(pat, p) == 0 {
						return wmAbortAll
					}
					i := p - s - 1
					if i < 0 || pat[p-1] != ':' {
						// no ":]": a plain "[" in the set
						p = s - 2
						c = '['
						if tc == c {
							matched = true
						}
					} else {
						class, ok := charClass(pat[s:s+i], tc)
						if !ok {
							return wmAbortAll
						}
						if class {
							matched = true
						}
						c = 0
					}
				} else if tc == c {
					matched = true
				}
				prev = c
				p++
				c = at(pat, p)
				if c == ']' {
					break
				}
			}
			if matched == negated || (pathname && tc == '/') {
				return wmNoMatch
			}
			continue
		}
	}
	if at(text, t) != 0 {
		return wmNoMatch
	}
	return wmMatch
}

// charClass reports whether c is in the POSIX class name; ok is false for an unknown name.
func charClass(name string, c byte) (in, ok bool) {
	isUpper := 'A' <= c && c <= 'Z'
	isLower := 'a' <= c && c <= 'z'
	isDigit := '0' <= c && c <= '9'
	isAlpha := isUpper || isLower
	isPunct := c > ' ' && c < 0x7f && !isAlpha && !isDigit
	switch name {
	case "alnum":
		return isAlpha || isDigit, true
	case "alpha":
		return isAlpha, true
	case "blank":
		return c == ' ' || c == '\t', true
	case "cntrl":
		return c < ' ' || c == 0x7f, true
	case "digit":
		return isDigit, true
	case "graph":
		return c > ' ' && c < 0x7f, true
	case "lower":
		return isLower, true
	case "print":
		return c >= ' ' && c < 0x7f, true
	case "punct":
		return isPunct, true
	case "space":
		return c == ' ' || (c >= '\t' && c <= '\r'), true
	case "upper":
		return isUpper, true
	case "xdigit":
		return isDigit || ('a' <= c && c <= 'f') || ('A' <= c && c <= 'F'), true
	}
	return false, false
}
