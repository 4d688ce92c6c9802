package hosts

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"myco.dev/internal/shquote"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// InstallPath is where [Remote.Install] puts myco on a remote, as the remote's shell
// spells it.
const InstallPath = "~/.local/bin/myco"

// InstallOptions says what [Remote.Install] copies.
type InstallOptions struct {
	// Binary is the myco binary to copy (the running one); Size is its length in bytes.
	// Install reads it twice: once for its SHA-256, once to send it.
	Binary io.ReadSeeker
	Size   int64
	// GOOS and GOARCH are the platform Binary was built for; the remote must match.
	GOOS, GOARCH string
}

// InstallResult is what [Remote.Install] did.
type InstallResult struct {
	Alias    string
	Platform string // the remote's `uname -sm`
	// OnPath reports that ~/.local/bin is on the PATH of a non-interactive ssh session on
	// the remote, so `myco` alone finds the installed binary.
	OnPath bool
}

// installScript copies stdin to ~/.local/bin/myco atomically (a temporary name in the same
// directory, chmod 755, rename) once its SHA-256, computed by sha256sum, shasum or openssl,
// whichever the remote has, is WANT; then it prints the installed size and whether the
// directory is on the PATH. A copy that does not match, or a remote with none of the
// three, prints why on one line (no-sha256-tool, or sha256-mismatch and the hash found)
// and installs nothing. It runs under `sh -c '…'` so any login shell (bash, zsh, fish)
// passes it on unchanged: it holds no single quote and no backslash.
const installScript = `d="$HOME/.local/bin"; t="$d/.myco-install-$$"; ` +
	`mkdir -p "$d" && cat > "$t" || { rm -f "$t"; exit 1; }; ` +
	`if command -v sha256sum >/dev/null 2>&1; then h=$(sha256sum < "$t"); ` +
	`elif command -v shasum >/dev/null 2>&1; then h=$(shasum -a 256 < "$t"); ` +
	`elif command -v openssl >/dev/null 2>&1; then h=$(openssl dgst -sha256 < "$t"); ` +
	`else rm -f "$t"; echo no-sha256-tool; exit 0; fi; ` +
	// sha256sum and shasum print "HASH  -", openssl "(stdin)= HASH" or "SHA2-256(stdin)= HASH".
	`h=${h##*= }; h=${h%% *}; ` +
	`if [ "$h" != WANT ]; then rm -f "$t"; echo sha256-mismatch "$h"; exit 0; fi; ` +
	`chmod 755 "$t" && mv -f "$t" "$d/myco" || { rm -f "$t"; exit 1; }; ` +
	`wc -c < "$d/myco"; case ":$PATH:" in *":$d:"*) echo on-path;; *) echo not-on-path;; esac`

// remoteRun runs one shell command line on the remote over the controller's ssh
// (BatchMode, -F when needed), with stdin from in, bounded by the attach timeout (30 s
// when that is 0, and 5 minutes more for a copy). Errors name the line as what.
func (r *Remote) remoteRun(ctx context.Context, in io.Reader, what, line string) (stdout string, err error) {
	timeout := r.o.AttachTimeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	if in != nil {
		timeout += 5 * time.Minute // the copy itself; a slow link is not a hung host
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	argv := append(append([]string{r.o.SSH}, r.sshArgs()...), line)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = r.sshEnv()
	var out, errb bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = in, &out, &errb
	cmd.WaitDelay = time.Second
	err = cmd.Run()
	var ee *exec.ExitError
	switch {
	case err != nil && ctx.Err() != nil:
		return "", fmt.Errorf("ssh did not finish within %s: %w", timeout, context.Cause(ctx))
	case errors.As(err, &ee) && ee.ExitCode() == 255:
		return "", fmt.Errorf("ssh could not log in to %s without a prompt (BatchMode): %s; make `ssh -o BatchMode=yes %s true` work first", r.spec.Alias, quoteSaid(strings.TrimSpace(errb.String())), shquote.Path(r.spec.Alias))
	case err != nil:
		return "", fmt.Errorf("run %s on %s: %w; %s", what, r.spec.Alias, err, quoteSaid(strings.TrimSpace(errb.String())))
	}
	return out.String(), nil
}

// Install copies o.Binary to ~/.local/bin/myco on the remote over the controller's ssh,
// after checking with `uname -sm` that the remote runs the platform it was built for. The
// copy is atomic and checked: it takes the place of the old file only when its SHA-256 on
// the remote is the local one, so a copy cut short or changed on the way installs nothing,
// and a myco already running there keeps its old file. It does not attach. The result's
// strings that come from the remote are filtered for a terminal.
func (r *Remote) Install(ctx context.Context, o InstallOptions) (InstallResult, error) {
	res := InstallResult{Alias: r.spec.Alias}
	sum := sha256.New()
	if n, err := io.Copy(sum, o.Binary); err != nil {
		return res, fmt.Errorf("read the myco binary to install: %w", err)
	} else if n != o.Size {
		return res, fmt.Errorf("read the myco binary to install: it has %d bytes, not the %d expected; was it replaced meanwhile?", n, o.Size)
	}
	if _, err := o.Binary.Seek(0, io.SeekStart); err != nil {
		return res, fmt.Errorf("read the myco binary to install: %w", err)
	}
	want := hex.EncodeToString(sum.Sum(nil))
	goos, goarch, uname, err := r.Platform(ctx)
	res.Platform = uname
	if err != nil {
		return res, err
	}
	if goos != o.GOOS || goarch != o.GOARCH {
		return res, fmt.Errorf("%s runs %s/%s (uname -sm: %s), this myco is built for %s/%s; build one for it (GOOS=%s GOARCH=%s go build ./cmd/myco) and copy that to %s there",
			r.spec.Alias, goos, goarch, res.Platform, o.GOOS, o.GOARCH, goos, goarch, InstallPath)
	}
	script := strings.Replace(installScript, "WANT", want, 1)
	out, err := r.remoteRun(ctx, io.LimitReader(o.Binary, o.Size), "the install script (sh -c)", "sh -c '"+script+"'")
	if err != nil {
		return res, fmt.Errorf("copy myco to %s:%s: %w", r.spec.Alias, InstallPath, err)
	}
	lines := strings.Fields(out)
	switch {
	case len(lines) == 1 && lines[0] == "no-sha256-tool":
		return res, fmt.Errorf("copy myco to %s:%s: the remote has none of sha256sum, shasum and openssl to check the copy with, so nothing was installed; install one of them there (coreutils, perl, openssl) and run myco hosts install again", r.spec.Alias, InstallPath)
	case len(lines) > 0 && lines[0] == "sha256-mismatch":
		return res, fmt.Errorf("copy myco to %s:%s: the copy that arrived has SHA-256 %q, and this myco has %s: it was changed or cut short on the way, so nothing was installed; run myco hosts install again", r.spec.Alias, InstallPath, cutRemote(strings.Join(lines[1:], " ")), want)
	case len(lines) != 2:
		return res, fmt.Errorf("copy myco to %s:%s: the remote script printed %q", r.spec.Alias, InstallPath, cutRemote(out))
	}
	if n, _ := strconv.ParseInt(lines[0], 10, 64); n != o.Size {
		return res, fmt.Errorf("copy myco to %s:%s: %s bytes arrived, want %d", r.spec.Alias, InstallPath, lines[0], o.Size)
	}
	res.OnPath = lines[1] == "on-path"
	return res, nil
}

// Platform asks the remote for its platform with `uname -sm`: GOOS and GOARCH, and what
// uname said (filtered for a terminal).
func (r *Remote) Platform(ctx context.Context) (goos, goarch, uname string, err error) {
	out, err := r.remoteRun(ctx, nil, "`uname -sm`", "uname -sm")
	if err != nil {
		return "", "", "", fmt.Errorf("ask %s for its platform: %w", r.spec.Alias, err)
	}
	uname = remoteText(strings.TrimSpace(out))
	goos, goarch, ok := unamePlatform(uname)
	if !ok {
		return "", "", uname, fmt.Errorf("%s answered `uname -sm` with %q, which myco does not recognise; build myco there (go build ./cmd/myco) and put it on the non-interactive PATH", r.spec.Alias, uname)
	}
	return goos, goarch, uname, nil
}

// unamePlatform maps `uname -sm` output ("Linux x86_64") to GOOS and GOARCH.
func unamePlatform(s string) (goos, goarch string, ok bool) {
	f := strings.Fields(s)
	if len(f) != 2 {
		return "", "", false
	}
	oses := map[string]string{"Linux": "linux", "Darwin": "darwin", "FreeBSD": "freebsd", "OpenBSD": "openbsd", "NetBSD": "netbsd"}
	arches := map[string]string{
		"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64",
		"i386": "386", "i686": "386", "armv6l": "arm", "armv7l": "arm",
		"riscv64": "riscv64", "ppc64le": "ppc64le", "s390x": "s390x",
	}
	goos, ok1 := oses[f[0]]
	goarch, ok2 := arches[f[1]]
	return goos, goarch, ok1 && ok2
}

// Installed returns a controller of the same host whose remote command is the myco that
// [Remote.Install] put in place, whatever the PATH finds.
func (r *Remote) Installed() *Remote {
	spec := r.spec
	spec.Command = []string{InstallPath}
	return NewRemote(spec, r.o)
}
