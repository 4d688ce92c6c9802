package policy

import (
	"errors"
	"strings"
	"testing"
)

func TestParseCommandLine(t *testing.T) {
	for _, tc := range []struct {
		line string
		want []string // each command's String, wrappers included
	}{
		{"git status", []string{"git status"}},
		{"ls -la | grep foo && echo ok; make test || true", []string{"ls -la", "grep foo", "echo ok", "make test", "true"}},
		{"(cd sub && make) & wait", []string{"cd sub", "make", "wait"}},
		{"FOO=1 BAR='x y' go test ./...", []string{"go test ./..."}},
		{`echo "a b" 'c;d' e\ f`, []string{"echo a b c;d e f"}},
		{"sudo -u root rm -rf /tmp/x", []string{"sudo -u root rm -rf /tmp/x"}},
		{"env -i PATH=/bin timeout -s KILL 5 nice -n 3 make", []string{"env -i PATH=/bin timeout -s KILL 5 nice -n 3 make"}},
		{`sh -c "rm -rf build; echo done"`, []string{"sh -c rm -rf build; echo done rm -rf build", "sh -c rm -rf build; echo done echo done"}},
		{`bash -lc 'curl x | sh'`, []string{"bash -lc curl x | sh curl x", "bash -lc curl x | sh sh"}},
		{"find . -name '*.go' | xargs -n 1 gofmt -l", []string{"find . -name *.go", "xargs -n 1 gofmt -l"}},
		{"echo $(whoami) `id -u`", []string{"whoami", "id -u", "echo $(whoami) `id -u`"}},
		{`echo "$(rm -rf x)"`, []string{"rm -rf x", "echo $(rm -rf x)"}},
		{"diff <(sort a) <(sort b)", []string{"sort a", "sort b", "diff <(sort a) <(sort b)"}},
		{"if [ -f x ]; then make; else echo no; fi", []string{"[ -f x ]", "make", "echo no"}},
		{"for f in *.go; do gofmt -l $f; done", []string{"gofmt -l $f"}},
		{"while true; do sleep 1; done", []string{"true", "sleep 1"}},
		{"{ echo a; echo b; } > out.txt", []string{"echo a", "echo b"}},
		{"cat <<EOF\nrm -rf /\nEOF\necho after", []string{"cat", "echo after"}},
		{"# a comment\nls # trailing", []string{"ls"}},
		{"make 2>&1 | tee log", []string{"make", "tee log"}},
		{"[[ -n $x ]] && go build", []string{"[[ -n $x ]]", "go build"}},
		{"command -v go", []string{"command -v go"}},
	} {
		cmds, err := ParseCommandLine(tc.line)
		if err != nil {
			t.Errorf("ParseCommandLine(%q): %v", tc.line, err)
			continue
		}
		var got []string
		for _, c := range cmds {
			got = append(got, c.String())
		}
		if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
			t.Errorf("ParseCommandLine(%q) =\n%q\nwant\n%q", tc.line, got, tc.want)
		}
	}
}

func TestParseCommandLineRedirects(t *testing.T) {
	for line, want := range map[string]string{
		"echo hi > out.txt":          "out.txt",
		"echo hi >> /etc/passwd":     "/etc/passwd",
		"make 2>/dev/null":           "",
		"make >/dev/null 2>&1":       "",
		"cat < in.txt":               "",
		"go test &> log.txt":         "log.txt",
		"echo x 2> err.txt":          "err.txt",
		"cat <<< 'here string'":      "",
		"> truncated.txt":            "truncated.txt",
		"printf x >| forced":         "forced",
		"echo x 1>&2":                "",
		"tee a.txt < b.txt >&2":      "",
		"sh -c 'echo x > inner.txt'": "inner.txt",
	} {
		cmds, err := ParseCommandLine(line)
		if err != nil {
			t.Errorf("ParseCommandLine(%q): %v", line, err)
			continue
		}
		var got []string
		for _, c := range cmds {
			got = append(got, c.Redirects...)
		}
		if strings.Join(got, " ") != want {
			t.Errorf("redirects of %q = %q, want %q", line, got, want)
		}
	}
}

func TestParseCommandLineUnparsed(t *testing.T) {
	for _, line := range []string{
		`echo "unterminated`,
		"echo 'unterminated",
		"echo $(unclosed",
		"case $x in a) rm -rf /;; esac",
		"echo $((1+2))",
		"cat <<EOF",
		"sh -c",
		"echo `unterminated",
		strings.Repeat("echo $(", 20) + "true" + strings.Repeat(")", 20),
	} {
		if _, err := ParseCommandLine(line); !errors.Is(err, ErrUnparsed) {
			t.Errorf("ParseCommandLine(%q) = %v, want ErrUnparsed", line, err)
		}
	}
}

// FuzzParseCommandLine: any line either parses or is refused with ErrUnparsed, never
// panics, and every command it finds has at least one word.
func FuzzParseCommandLine(f *testing.F) {
	for _, s := range []string{"git status", "a | b && (c; d) || e &", `sh -c "x $(y) ` + "`z`" + `"`, "cat <<EOF\nx\nEOF\n", "echo 'a' \"b\" c\\ d", "env A=1 sudo -u x timeout 1 xargs -n1 rm", "diff <(a) >(b) 2>&1 >f"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		cmds, err := ParseCommandLine(line)
		if err != nil {
			if !errors.Is(err, ErrUnparsed) {
				t.Fatalf("error %v does not wrap ErrUnparsed", err)
			}
			return
		}
		for _, c := range cmds {
			if len(c.Args) == 0 {
				t.Fatalf("a command without words in %q: %+v", line, c)
			}
			for _, w := range c.Wrappers {
				if len(w) == 0 {
					t.Fatalf("an empty wrapper in %q", line)
				}
			}
		}
		r := Rule{Action: Allow, Tool: "bash", Command: "git status"}
		if r.Matches(Call{Tool: BashTool, Command: line}) {
			for _, c := range cmds {
				if strings.Join(c.Args, " ") != "git status" {
					t.Fatalf("bash(git status) allowed %q, which runs %q", line, c.Args)
				}
			}
		}
	})
}

// nested returns a command line of n sh -c levels, each quoting the next.
func nested(n int) string {
	line := "true"
	for range n {
		line = "sh -c '" + strings.ReplaceAll(line, "'", `'\''`) + "'"
	}
	return line
}
