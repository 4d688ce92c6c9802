package tools

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
)

type workDirKey struct{}

// WithWorkDir returns a copy of ctx under which the local tools work in dir, an absolute
// path: bash's exec and start begin there, and view_image and the editor's refusal of a
// relative path resolve against it when the caller has no running bash session. The
// session runtime sets it per call to its session's directory. It rides on the call's
// context, like [WithImageLimit], and so never crosses the host protocol: a remote host's
// tools keep the directory their process started in.
func WithWorkDir(ctx context.Context, dir string) context.Context {
	if dir == "" {
		return ctx
	}
	return context.WithValue(ctx, workDirKey{}, dir)
}

// WorkDirFrom returns the directory [WithWorkDir] set in ctx; ok is false when there is
// none.
func WorkDirFrom(ctx context.Context) (dir string, ok bool) {
	dir, ok = ctx.Value(workDirKey{}).(string)
	return dir, ok && dir != ""
}

// checkWorkDir returns nil when dir is a directory that can be entered, and else an error
// that names it and says what is wrong, for a tool call that would start a process there:
// the directory of a session may be removed while the session lives.
func checkWorkDir(dir string) error {
	info, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("the session's directory %s no longer exists; nothing was run. Recreate it, or run elsewhere with an absolute path (cd /path && command)", dir)
	case err != nil:
		return fmt.Errorf("the session's directory %s cannot be used (%v); nothing was run", dir, err)
	case !info.IsDir():
		return fmt.Errorf("the session's directory %s is no longer a directory; nothing was run", dir)
	}
	return nil
}

// workDir is the directory a process started under ctx begins in: the one [WithWorkDir]
// set, checked, or "" (the host process's own) when there is none.
func workDir(ctx context.Context) (string, error) {
	dir, ok := WorkDirFrom(ctx)
	if !ok {
		return "", nil
	}
	return dir, checkWorkDir(dir)
}

// withPWD returns env (nil means the host process's) with PWD naming dir, as a shell
// started there expects; "" leaves env as it is.
func withPWD(env []string, dir string) []string {
	if dir == "" {
		return env
	}
	if env == nil {
		env = os.Environ()
	}
	out := slices.DeleteFunc(slices.Clone(env), func(kv string) bool { return strings.HasPrefix(kv, "PWD=") })
	return append(out, "PWD="+dir)
}
