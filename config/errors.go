package config

import (
	"fmt"
	"strconv"
	"strings"
)

// Error is a problem in a config or .env file. Load returns one per problem, joined with
// [errors.Join] when there are several; use [errors.As] to reach the first.
type Error struct {
	File string // the file the problem is in; always set
	Line int    // 1-based; 0 when unknown
	Key  string // the dotted TOML key, or the .env variable; empty when none applies
	Msg  string
	Err  error // the underlying error, if any
}

// Error formats the problem as "FILE:LINE: KEY: MSG", leaving out the parts that are
// unknown.
func (e *Error) Error() string {
	msg := e.Msg
	if msg == "" && e.Err != nil {
		msg = e.Err.Error()
	}
	return formatProblem(e.File, e.Line, e.Key, msg)
}

func (e *Error) Unwrap() error { return e.Err }

// Warning is a problem that does not stop startup: a .env line that was ignored, or a
// config file that others can read. The package never prints; the caller shows each
// warning on one line and goes on.
type Warning struct {
	File string // the file it is about; always set
	Line int    // 1-based; 0 when none applies
	Key  string // the .env variable or TOML key; empty when none applies
	Msg  string
}

// String formats the warning like [Error.Error]: "FILE:LINE: KEY: MSG".
func (w Warning) String() string { return formatProblem(w.File, w.Line, w.Key, w.Msg) }

func formatProblem(file string, line int, key, msg string) string {
	var b strings.Builder
	b.WriteString(file)
	if line > 0 {
		b.WriteString(":" + strconv.Itoa(line))
	}
	b.WriteString(": ")
	if key != "" {
		b.WriteString(key + ": ")
	}
	b.WriteString(msg)
	return b.String()
}

// EmptyCatalogError is returned by [Config.DefaultModel] when the config has no [models]
// entries. Myco ships no models, so this is what a first run sees; the message names the
// file and carries an entry to paste into it.
type EmptyCatalogError struct {
	File string
}

func (e *EmptyCatalogError) Error() string {
	return fmt.Sprintf("%s: no models are configured; myco ships none. Add a gateway and a model, for example:\n\n%s", e.File, ExampleEntry)
}

// UnknownModelError is returned by [Config.Resolve] for a key the catalog does not have,
// with the keys it has.
type UnknownModelError struct {
	File  string
	Key   string
	Known []string // sorted
}

func (e *UnknownModelError) Error() string {
	return fmt.Sprintf("%s: unknown model %q; configured models: %s", e.File, e.Key, strings.Join(e.Known, ", "))
}

// UnknownModel returns the key and the keys the catalog has, so that packages that do not
// import config can tell this error apart.
func (e *UnknownModelError) UnknownModel() (key string, known []string) { return e.Key, e.Known }

// ExampleEntry is the catalog entry [EmptyCatalogError] suggests: one gateway and one
// model that uses it.
const ExampleEntry = `[gateways.anthropic]
protocol = "anthropic-messages"
base_url = "https://api.anthropic.com"
auth = { source = "env", var_name = "ANTHROPIC_API_KEY" }

[models.claude-opus-4-8]
gateway = "anthropic"
context_window = 1_000_000
`
