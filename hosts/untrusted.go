package hosts

import (
	"unicode/utf8"

	"myco.dev/hosts/proto"
	"myco.dev/internal/termtext"
)

// What a remote says reaches a user's terminal: its hello in [Status] and [CheckResult],
// its error messages and stderr in Status.Err and in the problems `myco hosts check`
// lists. This package filters those strings where it takes them in, with [termtext.Safe]
// (control characters and bidirectional overrides are written out visibly) and a length
// bound, so a caller may print them as they are. Tool results are not filtered: they go
// to the model, and whoever prints them filters them.

// maxRemoteString bounds one string from a remote kept for display.
const maxRemoteString = 4 << 10

// remoteText returns s, from a remote, fit for a terminal: control characters written out
// visibly and cut to maxRemoteString bytes.
func remoteText(s string) string { return termtext.Safe(cutRemote(s)) }

// cutRemote cuts s to maxRemoteString bytes, at a UTF-8 boundary.
func cutRemote(s string) string {
	if len(s) <= maxRemoteString {
		return s
	}
	cut := maxRemoteString
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// safeHello returns a remote's hello with every string fit for a terminal.
func safeHello(h proto.Hello) proto.Hello {
	for _, s := range []*string{&h.Version, &h.OS, &h.Arch, &h.Shell, &h.Dir, &h.Instance, &h.NoDaemon} {
		*s = remoteText(*s)
	}
	if h.WithoutEnv != nil {
		env := make([]string, len(h.WithoutEnv))
		for i, name := range h.WithoutEnv {
			env[i] = remoteText(name)
		}
		h.WithoutEnv = env
	}
	return h
}
