package hosts

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"myco.dev/internal/shquote"
	"os/exec"
	"strings"
	"time"

	"myco.dev/hosts/proto"
	"myco.dev/internal/termtext"
)

// CheckResult is what [Remote.Check] found, for `myco hosts check ALIAS`.
type CheckResult struct {
	Alias   string
	Check   string      // the non-interactive check that was run
	Path    string      // where a non-interactive shell on the host finds myco; empty if it does not
	Version string      // what that myco's --version printed
	Hello   proto.Hello // the host's hello, when the handshake succeeded
	// Problems says what is wrong, each in words a user can act on; none means the host
	// is ready.
	Problems []string
	// Warnings says what works but less well than it should: a host that serves without
	// its daemon, so its bash sessions end when the connection drops.
	Warnings []string
}

// Check runs the non-interactive check (command -v myco; myco --version) over ssh, then
// the attach and hello handshake, bounded by AttachTimeout (30 s when that is 0). It does
// not change the controller's state: the handshake uses a connection of its own. Every
// string of the result is fit for a terminal: what the remote said is filtered with
// [termtext.Safe], and the commands it suggests are quoted for a POSIX shell.
func (r *Remote) Check(ctx context.Context) (res CheckResult) {
	res = CheckResult{Alias: r.spec.Alias, Check: termtext.Safe(r.CheckCommand())}
	alias := shquote.Path(r.spec.Alias)
	defer func() {
		if len(res.Problems) > 0 && r.spec.Note != "" {
			res.Problems = append(res.Problems, "note: "+r.spec.Note)
		}
		for i, p := range res.Problems {
			res.Problems[i] = termtext.Safe(p)
		}
	}()
	timeout := r.o.AttachTimeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	argv := r.CheckArgv()
	cmd := exec.CommandContext(cctx, argv[0], argv[1:]...)
	cmd.Env = r.sshEnv()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	said := strings.TrimSpace(stderr.String())
	var ee *exec.ExitError
	switch {
	case cctx.Err() != nil && ctx.Err() == nil:
		res.Problems = append(res.Problems, fmt.Sprintf("ssh did not finish within %s (attach_timeout_secs): the host may be unreachable, or ssh is waiting for something; run `%s` yourself to see", timeout, res.Check))
		return res
	case errors.As(err, &ee) && ee.ExitCode() == 255:
		res.Problems = append(res.Problems, fmt.Sprintf("ssh could not log in to %s without a prompt (BatchMode): %s. Make `ssh -o BatchMode=yes %s true` work: a key loaded in ssh-agent or named by IdentityFile, and the host key already in known_hosts (connect once interactively with `ssh %s`)",
			r.spec.Alias, quoteSaid(said), alias, alias))
		return res
	case err != nil && !errors.As(err, &ee):
		res.Problems = append(res.Problems, fmt.Sprintf("run ssh: %v", err))
		return res
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if len(lines) > 0 && strings.HasPrefix(lines[0], "/") {
		res.Path = remoteText(strings.TrimSpace(lines[0]))
		if len(lines) > 1 {
			res.Version = remoteText(strings.TrimSpace(lines[len(lines)-1]))
		}
	}
	if res.Path == "" {
		res.Problems = append(res.Problems, fmt.Sprintf("%s is not on the PATH of a non-interactive ssh session on %s (an interactive login may find a different one). Run `myco hosts install %s` to copy this myco to %s there, or install myco into a directory on that PATH yourself (see it with `ssh %s 'echo $PATH'`)",
			r.command()[0], r.spec.Alias, alias, InstallPath, alias))
		return res
	}
	if res.Version == "" || err != nil {
		res.Problems = append(res.Problems, fmt.Sprintf("%s --version failed on %s: %s", res.Path, r.spec.Alias, quoteSaid(said)))
		return res
	}

	probe := NewRemote(r.spec, r.o)
	defer probe.Close()
	hello, err := probe.Attach(ctx)
	if err != nil {
		var mm *proto.Mismatch
		if errors.As(err, &mm) {
			res.Problems = append(res.Problems, fmt.Sprintf("%v. The host runs %s (%s); `myco hosts install %s` copies this myco to %s there", mm, res.Path, res.Version, alias, InstallPath))
		} else {
			res.Problems = append(res.Problems, err.Error())
		}
		return res
	}
	res.Hello = hello
	if w := NoDaemonWarning(hello); w != "" {
		res.Warnings = append(res.Warnings, w)
	}
	return res
}

// quoteSaid quotes what a remote printed on stderr, cut to maxRemoteString bytes; %q
// writes control characters out visibly.
func quoteSaid(s string) string {
	if s == "" {
		return "it printed nothing on stderr"
	}
	if len(s) > maxRemoteString {
		s = s[len(s)-maxRemoteString:] // the end says what went wrong
	}
	return fmt.Sprintf("it said %q", s)
}
