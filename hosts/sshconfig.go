package hosts

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/kevinburke/ssh_config"
)

// SSHConfigOptions says which ssh config to read and how ssh itself would read it.
type SSHConfigOptions struct {
	// Path is the config file, usually $HOME/.ssh/config.
	Path string
	// Home is the home directory that "~/" and relative Include paths resolve against
	// (relative ones in ~/.ssh); default: the directory above Path's directory.
	Home string
	// Default is the file ssh reads without -F: the passwd home's ~/.ssh/config (os/user,
	// not $HOME). When Path is another file, remotes get -F Path so that ssh sees the
	// hosts myco listed. Empty means Path is the default.
	Default string
}

// maxIncludeDepth matches the depth OpenSSH allows.
const maxIncludeDepth = 16

// LoadSSHConfig returns the remote hosts of the ssh config at o.Path, in file order with
// Include directives followed. A missing file means no remotes (local only).
func LoadSSHConfig(o SSHConfigOptions) ([]RemoteSpec, error) {
	b, err := os.ReadFile(o.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read ssh config: %w", err)
	}
	return DecodeSSHConfig(bytes.NewReader(b), o)
}

// DecodeSSHConfig returns the remote hosts of the config read from r, which holds the
// contents of o.Path. Each concrete Host alias is a host; wildcard (*, ?) and negated (!)
// patterns, Match blocks and the reserved alias "local" are skipped, and so is an alias
// that ssh would read as an option. The first file to name an alias is its Source.
func DecodeSSHConfig(r io.Reader, o SSHConfigOptions) ([]RemoteSpec, error) {
	if o.Home == "" {
		o.Home = filepath.Dir(filepath.Dir(o.Path))
	}
	configFile := ""
	if o.Default != "" && filepath.Clean(o.Default) != filepath.Clean(o.Path) {
		configFile = o.Path
	}
	d := &sshDecoder{o: o, seen: map[string]bool{}, configFile: configFile}
	if err := d.decode(r, o.Path, "", 0); err != nil {
		return nil, err
	}
	return d.out, nil
}

type sshDecoder struct {
	o          SSHConfigOptions
	configFile string
	seen       map[string]bool
	out        []RemoteSpec
}

// decode reads one file. Include lines are taken out before the file reaches
// ssh_config.Decode, which would resolve them against the process's own home; they are
// followed here, in place, against o.Home.
//
// via is the first relative Include on the way to this file, if any: under -F, ssh
// resolves it against the passwd home instead, so the hosts it yields get a Note.
func (d *sshDecoder) decode(r io.Reader, name, via string, depth int) error {
	if depth > maxIncludeDepth {
		return fmt.Errorf("ssh config %s: Include nested more than %d deep", name, maxIncludeDepth)
	}
	var chunk bytes.Buffer
	flush := func() error {
		if chunk.Len() == 0 {
			return nil
		}
		cfg, err := ssh_config.Decode(bytes.NewReader(chunk.Bytes()))
		if err != nil {
			return fmt.Errorf("ssh config %s: %w", name, err)
		}
		chunk.Reset()
		d.collect(cfg, name, via)
		return nil
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		pats, ok := includeLine(line)
		if !ok {
			chunk.WriteString(line)
			chunk.WriteByte('\n')
			continue
		}
		if err := flush(); err != nil {
			return err
		}
		for _, p := range pats {
			if err := d.include(p, name, via, depth); err != nil {
				return err
			}
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read ssh config %s: %w", name, err)
	}
	return flush()
}

// include follows one Include pattern, as ssh does: "~/" is the home, and a relative
// path is in ~/.ssh. Glob patterns expand in lexical order; no match is not an error.
func (d *sshDecoder) include(pat, from, via string, depth int) error {
	if via == "" && !filepath.IsAbs(pat) {
		via = pat
	}
	switch {
	case strings.HasPrefix(pat, "~/"):
		pat = filepath.Join(d.o.Home, pat[2:])
	case !filepath.IsAbs(pat):
		pat = filepath.Join(d.o.Home, ".ssh", pat)
	}
	files, err := filepath.Glob(pat)
	if err != nil {
		return fmt.Errorf("ssh config %s: Include %s: %w", from, pat, err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return fmt.Errorf("ssh config %s: Include: %w", from, err)
		}
		if err := d.decode(bytes.NewReader(b), f, via, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// collect adds the concrete Host aliases of cfg.
func (d *sshDecoder) collect(cfg *ssh_config.Config, name, via string) {
	note := ""
	if via != "" && d.configFile != "" {
		note = fmt.Sprintf("this alias comes through the relative Include %q, which ssh -F %s resolves in the passwd home's ~/.ssh rather than in %s; write that Include as an absolute path so ssh finds the alias",
			via, d.configFile, filepath.Join(d.o.Home, ".ssh"))
	}
	for _, h := range cfg.Hosts {
		kw, _, _ := strings.Cut(strings.TrimSpace(h.String()), " ")
		if !strings.EqualFold(strings.TrimRight(kw, "="), "Host") {
			continue // the implicit leading block, or a Match block
		}
		for _, p := range h.Patterns {
			alias := strings.Trim(p.String(), `"`)
			if alias == "" || alias == Local || strings.ContainsAny(alias, "*?!") || strings.HasPrefix(alias, "-") || d.seen[alias] {
				continue
			}
			d.seen[alias] = true
			d.out = append(d.out, RemoteSpec{Alias: alias, Source: name, ConfigFile: d.configFile, Note: note})
		}
	}
}

// includeLine reports whether line is an Include directive and returns its patterns.
func includeLine(line string) ([]string, bool) {
	s := strings.TrimLeft(line, " \t")
	if len(s) < len("include") || !strings.EqualFold(s[:len("include")], "include") {
		return nil, false
	}
	rest := s[len("include"):]
	if rest == "" || !strings.ContainsRune(" \t=", rune(rest[0])) {
		return nil, false
	}
	rest = strings.TrimLeft(rest, " \t")
	rest = strings.TrimPrefix(rest, "=")
	if i := strings.Index(rest, "#"); i >= 0 {
		rest = rest[:i]
	}
	var pats []string
	for f := range strings.FieldsSeq(rest) {
		pats = append(pats, strings.Trim(f, `"`))
	}
	return pats, true
}
