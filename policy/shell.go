package policy

import (
	"errors"
	"fmt"
	"strings"
)

// Command is one simple command of a command line, with the wrappers it was found under
// (sudo, env, timeout, xargs, …), outermost first. Args holds the words of the command
// itself after the wrappers and variable assignments.
type Command struct {
	Args     []string
	Wrappers [][]string
	// Redirects holds the files its output is written to (> and >> targets other than
	// /dev/null and file descriptors).
	Redirects []string
}

// String returns the command's words joined by spaces, wrappers first.
func (c Command) String() string {
	var b strings.Builder
	for _, w := range c.Wrappers {
		b.WriteString(strings.Join(w, " "))
		b.WriteByte(' ')
	}
	b.WriteString(strings.Join(c.Args, " "))
	return b.String()
}

// ErrUnparsed is wrapped by the error of [ParseCommandLine] for a line it cannot take
// apart with confidence: a rule never allows such a line.
var ErrUnparsed = errors.New("policy: command line not understood")

// maxLine bounds the length of a line that is parsed.
const maxLine = 1 << 20

// maxDepth bounds the nesting of subshells, substitutions and sh -c strings.
const maxDepth = 16

// ParseCommandLine splits a bash command line into its simple commands: each command of a
// pipeline, list, subshell, brace group, command or process substitution, and of the
// string of `sh -c`, `bash -c` and the like, with wrappers looked through. Words are
// unquoted; variables are left as written ($HOME stays "$HOME"). Constructs it does not
// follow (case, select, coproc, arithmetic, unterminated quotes) are an error
// wrapping [ErrUnparsed].
func ParseCommandLine(line string) ([]Command, error) {
	return parseLine(line, 0)
}

func parseLine(line string, depth int) ([]Command, error) {
	if len(line) > maxLine {
		return nil, fmt.Errorf("%w: longer than %d bytes", ErrUnparsed, maxLine)
	}
	if depth > maxDepth {
		return nil, fmt.Errorf("%w: nested too deeply", ErrUnparsed)
	}
	toks, err := lex(line, depth)
	if err != nil {
		return nil, err
	}
	var out []Command
	out = append(out, toks.subs...)
	var words []token
	var redirects []string
	flush := func() error {
		if len(words) == 0 {
			if len(redirects) > 0 {
				// "> file" alone truncates a file: a command of its own.
				out = append(out, Command{Args: []string{":"}, Redirects: redirects})
			}
			redirects = nil
			return nil
		}
		cmds, err := simple(words, depth)
		words = nil
		if err != nil {
			return err
		}
		for i := range cmds {
			cmds[i].Redirects = append(cmds[i].Redirects, redirects...)
		}
		redirects = nil
		out = append(out, cmds...)
		return nil
	}
	list := toks.list
	for i := 0; i < len(list); i++ {
		t := list[i]
		if t.op == "" {
			words = append(words, t)
			continue
		}
		if redirectOps[t.op] {
			if i+1 >= len(list) || list[i+1].op != "" {
				return nil, fmt.Errorf("%w: redirection without a target", ErrUnparsed)
			}
			i++
			target := list[i].word
			if writes(t.op, target) {
				redirects = append(redirects, target)
			}
			continue
		}
		if err := flush(); err != nil {
			return nil, err
		}
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return out, nil
}

// redirectOps are the operators whose next word is a file (or descriptor).
var redirectOps = map[string]bool{"<": true, ">": true, ">>": true, ">|": true, "<>": true, "&>": true, "&>>": true, ">&": true, "<&": true, "<<<": true}

// writes reports whether the redirection op to target writes a file.
func writes(op, target string) bool {
	switch op {
	case "<", "<&", "<<<":
		return false
	case ">&":
		if target == "-" || allDigits(target) {
			return false
		}
	}
	return target != "/dev/null" && target != "/dev/stderr" && target != "/dev/stdout"
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// token is a word (op == "") or an operator.
type token struct {
	word   string
	quoted bool // the word begins with a quote or an escape: never a keyword or an assignment
	op     string
}

type lexed struct {
	list []token
	subs []Command // the commands of substitutions met inside words
}

// lex splits line into words and operators, following quotes, escapes, comments, here
// documents and $( ) / ` ` / <( ) substitutions (whose commands it parses).
func lex(line string, depth int) (lexed, error) {
	var l lexed
	var cur strings.Builder
	inWord, quoted := false, false
	quote := func() { // a quote or escape begins here
		if !inWord {
			quoted = true
		}
		inWord = true
	}
	var heredocs []string // delimiters of here documents whose bodies start at the next newline
	end := func() {
		if inWord {
			l.list = append(l.list, token{word: cur.String(), quoted: quoted})
		}
		cur.Reset()
		inWord, quoted = false, false
	}
	sub := func(inner string) error {
		cmds, err := parseLine(inner, depth+1)
		if err != nil {
			return err
		}
		l.subs = append(l.subs, cmds...)
		return nil
	}
	i := 0
	for i < len(line) {
		c := line[i]
		switch {
		case c == '\\':
			if i+1 < len(line) {
				if line[i+1] != '\n' {
					quote()
					cur.WriteByte(line[i+1])
				}
				i += 2
				continue
			}
			i++
		case c == '\'':
			j := strings.IndexByte(line[i+1:], '\'')
			if j < 0 {
				return l, fmt.Errorf("%w: unterminated single quote", ErrUnparsed)
			}
			quote()
			cur.WriteString(line[i+1 : i+1+j])
			i += j + 2
		case c == '"':
			quote()
			j, err := dquote(line, i+1, &cur, sub)
			if err != nil {
				return l, err
			}
			i = j
		case c == '$' && strings.HasPrefix(line[i:], "$(("):
			return l, fmt.Errorf("%w: arithmetic expansion", ErrUnparsed)
		case c == '$' && strings.HasPrefix(line[i:], "$("), (c == '<' || c == '>') && i+1 < len(line) && line[i+1] == '(':
			j, err := closing(line, i+2)
			if err != nil {
				return l, err
			}
			if err := sub(line[i+2 : j]); err != nil {
				return l, err
			}
			cur.WriteString(line[i : j+1])
			inWord = true
			i = j + 1
		case c == '`':
			j := strings.IndexByte(line[i+1:], '`')
			if j < 0 {
				return l, fmt.Errorf("%w: unterminated backquote", ErrUnparsed)
			}
			if err := sub(line[i+1 : i+1+j]); err != nil {
				return l, err
			}
			cur.WriteString(line[i : i+2+j])
			inWord = true
			i += j + 2
		case c == '#' && !inWord:
			for i < len(line) && line[i] != '\n' {
				i++
			}
		case c == ' ' || c == '\t':
			end()
			i++
		case c == '\n':
			end()
			l.list = append(l.list, token{op: ";"})
			i++
			for _, d := range heredocs {
				i = skipHeredoc(line, i, d)
			}
			heredocs = nil
		case strings.ContainsRune("|&;()<>", rune(c)):
			if (c == '<' || c == '>') && inWord && !quoted && allDigits(cur.String()) {
				cur.Reset() // a descriptor number: 2>file
				inWord = false
			}
			end()
			op := operator(line[i:])
			if op == "<<" || op == "<<-" {
				j := i + len(op)
				for j < len(line) && (line[j] == ' ' || line[j] == '\t') {
					j++
				}
				k := j
				for k < len(line) && !strings.ContainsRune(" \t\n;|&<>()", rune(line[k])) {
					k++
				}
				d := strings.Trim(line[j:k], `'"\`)
				if d == "" {
					return l, fmt.Errorf("%w: here document without a delimiter", ErrUnparsed)
				}
				heredocs = append(heredocs, d)
				i = k
				continue
			}
			l.list = append(l.list, token{op: op})
			i += len(op)
		default:
			cur.WriteByte(c)
			inWord = true
			i++
		}
	}
	end()
	if len(heredocs) > 0 {
		return l, fmt.Errorf("%w: here document without a body", ErrUnparsed)
	}
	return l, nil
}

// operators, longest first.
var operators = []string{"&&", "||", ";;", "|&", "&>>", "&>", ">>", ">|", "<<<", "<<-", "<<", "<>", ">&", "<&", "|", "&", ";", "(", ")", "<", ">"}

func operator(s string) string {
	for _, op := range operators {
		if strings.HasPrefix(s, op) {
			return op
		}
	}
	return s[:1]
}

// dquote reads a double-quoted string starting after its quote at i and returns the index
// after the closing quote.
func dquote(line string, i int, cur *strings.Builder, sub func(string) error) (int, error) {
	for i < len(line) {
		c := line[i]
		switch {
		case c == '"':
			return i + 1, nil
		case c == '\\' && i+1 < len(line) && strings.ContainsRune("$`\"\\\n", rune(line[i+1])):
			cur.WriteByte(line[i+1])
			i += 2
		case c == '$' && strings.HasPrefix(line[i:], "$(("):
			return 0, fmt.Errorf("%w: arithmetic expansion", ErrUnparsed)
		case c == '$' && strings.HasPrefix(line[i:], "$("):
			j, err := closing(line, i+2)
			if err != nil {
				return 0, err
			}
			if err := sub(line[i+2 : j]); err != nil {
				return 0, err
			}
			cur.WriteString(line[i : j+1])
			i = j + 1
		case c == '`':
			j := strings.IndexByte(line[i+1:], '`')
			if j < 0 {
				return 0, fmt.Errorf("%w: unterminated backquote", ErrUnparsed)
			}
			if err := sub(line[i+1 : i+1+j]); err != nil {
				return 0, err
			}
			cur.WriteString(line[i : i+2+j])
			i += j + 2
		default:
			cur.WriteByte(c)
			i++
		}
	}
	return 0, fmt.Errorf("%w: unterminated double quote", ErrUnparsed)
}

// closing returns the index of the parenthesis that closes the one opened before i,
// following quotes and nested parentheses.
func closing(line string, i int) (int, error) {
	depth := 1
	for i < len(line) {
		switch c := line[i]; c {
		case '\\':
			i += 2
			continue
		case '\'':
			j := strings.IndexByte(line[i+1:], '\'')
			if j < 0 {
				return 0, fmt.Errorf("%w: unterminated single quote", ErrUnparsed)
			}
			i += j + 2
			continue
		case '"':
			var discard strings.Builder
			j, err := dquote(line, i+1, &discard, func(string) error { return nil })
			if err != nil {
				return 0, err
			}
			i = j
			continue
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return i, nil
			}
		}
		i++
	}
	return 0, fmt.Errorf("%w: unclosed parenthesis", ErrUnparsed)
}

// skipHeredoc returns the index after the line that ends the here document delimited by d,
// which begins at i.
func skipHeredoc(line string, i int, d string) int {
	for i < len(line) {
		j := strings.IndexByte(line[i:], '\n')
		var l string
		if j < 0 {
			l, j = line[i:], len(line)-i
		} else {
			l = line[i : i+j]
		}
		i += j + 1
		if strings.TrimLeft(l, "\t") == d {
			return min(i, len(line))
		}
	}
	return len(line)
}

// keywords that may start a simple command and are dropped; blockers end parsing.
var (
	dropped  = map[string]bool{"if": true, "then": true, "elif": true, "else": true, "fi": true, "do": true, "done": true, "while": true, "until": true, "!": true, "{": true, "}": true, "time": true}
	blockers = map[string]bool{"case": true, "esac": true, "function": true, "select": true, "coproc": true}
)

// simple turns the words of one simple command (between operators) into commands.
func simple(words []token, depth int) ([]Command, error) {
	for len(words) > 0 && !words[0].quoted && dropped[words[0].word] {
		words = words[1:]
	}
	if len(words) == 0 {
		return nil, nil
	}
	if !words[0].quoted && blockers[words[0].word] {
		return nil, fmt.Errorf("%w: %s", ErrUnparsed, words[0].word)
	}
	if !words[0].quoted && words[0].word == "for" {
		return nil, nil // "for x in a b c": the loop's body follows after "do"
	}
	args := make([]string, 0, len(words))
	assigning := true
	for _, w := range words {
		if assigning && !w.quoted && isAssignment(w.word) {
			continue
		}
		assigning = false
		args = append(args, w.word)
	}
	if len(args) == 0 {
		return nil, nil
	}
	return unwrap(Command{Args: args}, depth)
}

func isAssignment(w string) bool {
	eq := strings.IndexByte(w, '=')
	if eq <= 0 {
		return false
	}
	for i, r := range w[:eq] {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// shells whose -c string is parsed as a command line.
var shells = map[string]bool{"sh": true, "bash": true, "dash": true, "zsh": true, "ksh": true}

// unwrap looks through the wrapper at the front of c, if any, recursively.
func unwrap(c Command, depth int) ([]Command, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("%w: nested too deeply", ErrUnparsed)
	}
	name := program(c.Args[0])
	a := c.Args
	inner := -1 // index in a of the wrapped command
	switch name {
	case "sudo", "doas":
		inner = skipOptions(a, 1, map[string]bool{"-u": true, "-g": true, "-C": true, "-D": true, "-h": true, "-p": true, "-r": true, "-t": true, "-U": true, "--user": true, "--group": true})
	case "env":
		i := skipOptions(a, 1, map[string]bool{"-u": true, "--unset": true, "-C": true, "--chdir": true, "-S": true, "--split-string": true})
		for i < len(a) && isAssignment(a[i]) {
			i++
		}
		inner = i
	case "timeout":
		i := skipOptions(a, 1, map[string]bool{"-s": true, "--signal": true, "-k": true, "--kill-after": true})
		inner = i + 1 // the duration
	case "nice":
		inner = skipOptions(a, 1, map[string]bool{"-n": true, "--adjustment": true})
	case "nohup", "command", "exec", "builtin", "setsid", "chronic":
		inner = skipOptions(a, 1, nil)
	case "stdbuf":
		inner = skipOptions(a, 1, map[string]bool{"-i": true, "-o": true, "-e": true})
	case "xargs":
		inner = skipOptions(a, 1, map[string]bool{"-a": true, "-d": true, "-E": true, "-I": true, "-L": true, "-n": true, "-P": true, "-s": true, "--arg-file": true, "--delimiter": true, "--max-args": true, "--max-procs": true, "--max-lines": true, "--max-chars": true, "--replace": true})
		if inner >= len(a) {
			// xargs alone runs echo.
			return []Command{{Args: []string{"echo"}, Wrappers: append(c.Wrappers, a)}}, nil
		}
	default:
		if shells[name] {
			for i := 1; i < len(a); i++ {
				if a[i] == "-c" || strings.HasPrefix(a[i], "-") && !strings.HasPrefix(a[i], "--") && strings.Contains(a[i], "c") {
					if i+1 >= len(a) {
						return nil, fmt.Errorf("%w: %s -c without a string", ErrUnparsed, name)
					}
					cmds, err := parseLine(a[i+1], depth+1)
					if err != nil {
						return nil, err
					}
					for j := range cmds {
						cmds[j].Wrappers = append(append(append([][]string(nil), c.Wrappers...), a[:i+2]), cmds[j].Wrappers...)
					}
					return cmds, nil
				}
				if !strings.HasPrefix(a[i], "-") {
					break // a script file: the shell itself is the command
				}
			}
		}
		return []Command{c}, nil
	}
	if inner >= len(a) || inner < 1 {
		return []Command{c}, nil // the wrapper alone (sudo -v, env): itself the command
	}
	w := append(append([][]string(nil), c.Wrappers...), a[:inner])
	return unwrap(Command{Args: a[inner:], Wrappers: w}, depth+1)
}

// skipOptions returns the index of the first word at or after i that is not an option;
// withArg names the options that take the next word as their argument.
func skipOptions(a []string, i int, withArg map[string]bool) int {
	for i < len(a) {
		w := a[i]
		switch {
		case w == "--":
			return i + 1
		case !strings.HasPrefix(w, "-") || w == "-":
			return i
		case withArg[w]:
			i += 2
		default:
			i++
		}
	}
	return i
}
