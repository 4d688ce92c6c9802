package tools

import (
	"context"
	"os"
	"slices"
	"strings"
)

type withoutEnvKey struct{}

// WithoutEnv returns a ctx under which the processes a tool call starts do not get the
// named environment variables. The controller names its model credentials this way, so
// that a command (`env`, a script the model wrote) cannot print them; see docs/security.md.
func WithoutEnv(ctx context.Context, names []string) context.Context {
	if len(names) == 0 {
		return ctx
	}
	if prev, ok := ctx.Value(withoutEnvKey{}).([]string); ok {
		names = append(slices.Clone(prev), names...)
	}
	return context.WithValue(ctx, withoutEnvKey{}, names)
}

// envFor returns the environment of a process a call under ctx starts: env (nil means the
// host process's own) without the variables [WithoutEnv] named.
func envFor(ctx context.Context, env []string) []string {
	drop, _ := ctx.Value(withoutEnvKey{}).([]string)
	if len(drop) == 0 {
		return env
	}
	if env == nil {
		env = os.Environ()
	}
	return slices.DeleteFunc(slices.Clone(env), func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		return slices.Contains(drop, name)
	})
}
