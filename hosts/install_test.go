package hosts

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"myco.dev/internal/needs"
)

func TestUnamePlatform(t *testing.T) {
	for _, tt := range []struct {
		in, goos, goarch string
		ok               bool
	}{
		{"Linux x86_64", "linux", "amd64", true},
		{"Linux aarch64\n", "linux", "arm64", true},
		{"Darwin arm64", "darwin", "arm64", true},
		{"FreeBSD amd64", "freebsd", "amd64", true},
		{"Linux armv7l", "linux", "arm", true},
		{"SunOS i86pc", "", "", false},
		{"Linux", "", "", false},
		{"", "", "", false},
	} {
		goos, goarch, ok := unamePlatform(tt.in)
		if goos != tt.goos || goarch != tt.goarch || ok != tt.ok {
			t.Errorf("unamePlatform(%q) = %q, %q, %v, want %q, %q, %v", tt.in, goos, goarch, ok, tt.goos, tt.goarch, tt.ok)
		}
	}
}

// shellSSH writes an ssh stand-in that runs its remote words as ssh does, joined into one
// command line for sh -c, under HOME=home and PATH=path; any alias but devbox fails as
// ssh does, with a control sequence in its words.
func shellSSH(t *testing.T, home, path string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "ssh")
	script := fmt.Sprintf(`#!/bin/sh
while [ $# -gt 0 ]; do
	case "$1" in
	-o|-F) shift 2 ;;
	*) break ;;
	esac
done
alias=$1; shift
if [ "$alias" != devbox ]; then
	printf 'ssh: \033]0;pwned\007Could not resolve hostname %%s\n' "$alias" >&2
	exit 255
fi
cd %s && exec env HOME=%s PATH=%s /bin/sh -c "$*"
`, home, home, path)
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// binDir returns a directory of links to the named programs, for a PATH that holds only
// them, and the extra scripts given as name → text.
func binDir(t *testing.T, progs []string, scripts map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for _, p := range progs {
		full := needs.Program(t, p, "coreutils")
		if err := os.Symlink(full, filepath.Join(dir, p)); err != nil {
			t.Fatal(err)
		}
	}
	for name, text := range scripts {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestInstallChecksSHA256: the copy is checked with whichever of sha256sum, shasum and
// openssl the remote has (each prints the hash its own way) before it takes the place of
// ~/.local/bin/myco; a copy whose hash differs, or a remote with none of them, installs
// nothing and leaves no temporary file behind.
func TestInstallChecksSHA256(t *testing.T) {
	sum := needs.Program(t, "sha256sum", "coreutils")
	base := []string{"sh", "uname", "mkdir", "cat", "chmod", "mv", "rm", "wc"}
	hashOf := "h=$(" + sum + ")\nh=${h%% *}"
	binary := []byte("#!/bin/sh\necho a myco stand-in\n")
	for _, tt := range []struct {
		name    string
		progs   []string
		scripts map[string]string
		err     string // empty: installed
	}{
		{"sha256sum", append(base, "sha256sum"), nil, ""},
		{"shasum", base, map[string]string{"shasum": "#!/bin/sh\n[ \"$1 $2\" = '-a 256' ] || exit 9\n" + hashOf + "\necho \"$h  -\"\n"}, ""},
		{"openssl 3", base, map[string]string{"openssl": "#!/bin/sh\n[ \"$1 $2\" = 'dgst -sha256' ] || exit 9\n" + hashOf + "\necho \"SHA2-256(stdin)= $h\"\n"}, ""},
		{"openssl 1", base, map[string]string{"openssl": "#!/bin/sh\n" + hashOf + "\necho \"(stdin)= $h\"\n"}, ""},
		{"changed on the way", base, map[string]string{"sha256sum": "#!/bin/sh\ncat >/dev/null\necho '0000\x1b[2J  -'\n"}, `the copy that arrived has SHA-256 "0000\x1b[2J", and this myco has `},
		{"no hash tool", base, nil, "the remote has none of sha256sum, shasum and openssl"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			home := t.TempDir()
			o := testRemoteOptions(t)
			o.SSH = shellSSH(t, home, binDir(t, tt.progs, tt.scripts))
			r := NewRemote(RemoteSpec{Alias: "devbox"}, o)
			defer r.Close()
			res, err := r.Install(t.Context(), InstallOptions{Binary: bytes.NewReader(binary), Size: int64(len(binary)), GOOS: runtime.GOOS, GOARCH: runtime.GOARCH})
			installed := filepath.Join(home, ".local", "bin", "myco")
			got, rerr := os.ReadFile(installed)
			if tt.err == "" {
				if err != nil || rerr != nil || !bytes.Equal(got, binary) || res.OnPath {
					t.Errorf("Install = %+v, %v; installed %q, %v; want the binary installed, not on the PATH", res, err, got, rerr)
				}
			} else {
				if err == nil || !strings.Contains(err.Error(), tt.err) || !strings.Contains(err.Error(), "nothing was installed") {
					t.Errorf("Install = %v, want %q and nothing installed", err, tt.err)
				}
				if rerr == nil {
					t.Errorf("Install failed, yet %s holds %q", installed, got)
				}
			}
			if left, _ := filepath.Glob(filepath.Join(home, ".local", "bin", ".myco-install-*")); len(left) > 0 {
				t.Errorf("Install left temporary files: %v", left)
			}
		})
	}
}

// TestInstallSizeMismatch: a binary shorter than the size given is refused before
// anything is sent.
func TestInstallSizeMismatch(t *testing.T) {
	r := NewRemote(RemoteSpec{Alias: "devbox"}, testRemoteOptions(t))
	defer r.Close()
	_, err := r.Install(t.Context(), InstallOptions{Binary: strings.NewReader("short"), Size: 100, GOOS: runtime.GOOS, GOARCH: runtime.GOARCH})
	if err == nil || !strings.Contains(err.Error(), "it has 5 bytes, not the 100 expected") {
		t.Errorf("Install = %v, want a size error", err)
	}
}
