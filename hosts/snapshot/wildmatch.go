package snapshot

import "strings"

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
