package config

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
)

// The raw shapes of config.toml. Optional values are pointers so that an unset key keeps
// its default (or its gateway's value) while an explicit zero still reaches validation.
// Tables are toml.Primitive so that each one decodes on its own: a type error in one
// entry does not hide the problems of the others.
type (
	rawTop struct {
		Model                 toml.Primitive `toml:"model"`
		AttachTimeoutSecs     toml.Primitive `toml:"attach_timeout_secs"`
		MaxPreludeBytes       toml.Primitive `toml:"max_prelude_bytes"`
		CompactionMaxRequests toml.Primitive `toml:"compaction_max_requests"`
		MaxCost               toml.Primitive `toml:"max_cost"`
		Gateways              toml.Primitive `toml:"gateways"`
		Models                toml.Primitive `toml:"models"`
		MCPServers            toml.Primitive `toml:"mcp_servers"`
		Snapshots             toml.Primitive `toml:"snapshots"`
		Approvals             toml.Primitive `toml:"approvals"`
		Sandbox               toml.Primitive `toml:"sandbox"`
	}
	rawEndpoint struct {
		Protocol        *string        `toml:"protocol"`
		BaseURL         *string        `toml:"base_url"`
		Auth            toml.Primitive `toml:"auth"`
		Retry           *rawRetry      `toml:"retry"`
		MaxRequestBytes *int           `toml:"max_request_bytes"`
		Prices          *rawPrices     `toml:"prices"`

		ResponseHeaderTimeoutSecs *int `toml:"response_header_timeout_secs"`
		StreamIdleTimeoutSecs     *int `toml:"stream_idle_timeout_secs"`
	}
	rawModel struct {
		rawEndpoint
		Gateway             *string  `toml:"gateway"`
		APIID               *string  `toml:"api_id"`
		ContextWindow       *int     `toml:"context_window"`
		Thinking            *string  `toml:"thinking"`
		Effort              *string  `toml:"effort"`
		MaxOutputTokens     *int     `toml:"max_output_tokens"`
		MaxImageBase64Bytes *int     `toml:"max_image_base64_bytes"`
		MaxTruncatedResumes *int     `toml:"max_truncated_resumes"`
		AutoCompactAt       *float64 `toml:"auto_compact_at"`
	}
	rawRetry struct {
		MaxAttempts       *int     `toml:"max_attempts"`
		InitialBackoffMs  *int     `toml:"initial_backoff_ms"`
		MaxBackoffMs      *int     `toml:"max_backoff_ms"`
		BackoffMultiplier *float64 `toml:"backoff_multiplier"`
	}
	rawPrices struct {
		Input      *float64 `toml:"input"`
		Output     *float64 `toml:"output"`
		CacheRead  *float64 `toml:"cache_read"`
		CacheWrite *float64 `toml:"cache_write"`
	}
	rawAuth struct {
		Source  *string `toml:"source"`
		VarName *string `toml:"var_name"`
		Path    *string `toml:"path"`
	}
)

// decoder turns config.toml into a [Config], collecting every problem it finds.
type decoder struct {
	file   string
	md     toml.MetaData
	lines  lineIndex
	errs   []*Error
	broken map[string]bool // keys (toml.Key.String) of entries that failed to decode
}

// decode returns nil only when the file is not TOML at all.
func (d *decoder) decode(src string) *Config {
	var top rawTop
	md, err := toml.Decode(src, &top)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			d.errs = append(d.errs, &Error{File: d.file, Line: pe.Position.Line, Msg: pe.Message, Err: err})
		} else {
			d.errs = append(d.errs, &Error{File: d.file, Err: err})
		}
		return nil
	}
	d.md, d.lines = md, indexLines(src)

	c := defaults(d.file)
	c.lines = d.lines
	d.value(top.Model, &c.Model, "model")
	d.value(top.AttachTimeoutSecs, &c.AttachTimeoutSecs, "attach_timeout_secs")
	d.value(top.MaxPreludeBytes, &c.MaxPreludeBytes, "max_prelude_bytes")
	d.value(top.CompactionMaxRequests, &c.CompactionMaxRequests, "compaction_max_requests")
	d.snapshots(top.Snapshots, c)

	d.table(top.Approvals, &c.Approvals, "approvals")
	d.table(top.Sandbox, &c.Sandbox, "sandbox")

	d.value(top.MaxCost, &c.MaxCost, "max_cost")

	var gateways, models, servers map[string]toml.Primitive
	d.table(top.Gateways, &gateways, "gateways")
	d.table(top.Models, &models, "models")
	d.table(top.MCPServers, &servers, "mcp_servers")
	for _, name := range slices.Sorted(maps.Keys(gateways)) {
		if g, ok := d.gateway(name, gateways[name]); ok {
			c.Gateways[name] = g
		}
	}
	for _, key := range slices.Sorted(maps.Keys(models)) {
		if m, ok := d.model(c, key, models[key]); ok {
			c.Models[key] = m
		}
	}
	for _, name := range slices.Sorted(maps.Keys(servers)) {
		if s, ok := d.mcpServer(name, servers[name]); ok {
			c.MCPServers[name] = s
		}
	}
	d.undecoded()
	return c
}

// value decodes the primitive at key into dst if the file defines key.
func (d *decoder) value(p toml.Primitive, dst any, key ...string) bool {
	if !d.md.IsDefined(key...) {
		return false
	}
	if err := d.md.PrimitiveDecode(p, dst); err != nil {
		d.errs = append(d.errs, d.tomlError(key, err))
		d.broken[toml.Key(key).String()] = true
		return false
	}
	return true
}

// table is value for a table decoded into a map. The decoder silently leaves a map
// empty when the TOML value is not a table (gateways = 3), so check the type first.
func (d *decoder) table(p toml.Primitive, dst any, key ...string) {
	if typ := d.md.Type(key...); typ != "" && typ != "Hash" {
		d.errs = append(d.errs, d.errorAt(key, "must be a table, not "+typeName(strings.ToLower(typ))))
		d.broken[toml.Key(key).String()] = true
		return
	}
	d.value(p, dst, key...)
}

func (d *decoder) gateway(name string, p toml.Primitive) (Gateway, bool) {
	key := []string{"gateways", name}
	var raw rawEndpoint
	if !d.value(p, &raw, key...) {
		return Gateway{}, false
	}
	g := Gateway{
		Retry:                 DefaultRetry(),
		MaxRequestBytes:       DefaultMaxRequestBytes,
		ResponseHeaderTimeout: DefaultResponseHeaderTimeout,
		StreamIdleTimeout:     DefaultStreamIdleTimeout,
	}
	set(&g.Protocol, raw.Protocol)
	set(&g.BaseURL, raw.BaseURL)
	set(&g.MaxRequestBytes, raw.MaxRequestBytes)
	d.timeouts(&g.ResponseHeaderTimeout, &g.StreamIdleTimeout, &raw, key)
	g.BaseURL = strings.TrimRight(g.BaseURL, "/")
	if raw.Retry != nil {
		g.Retry = raw.Retry.apply()
	}
	g.Prices = d.prices(raw.Prices, nil, key)
	auth, ok := d.auth(raw.Auth, key)
	if !ok {
		return Gateway{}, false
	}
	if auth != nil {
		g.Auth = *auth
	}
	return g, true
}

func (d *decoder) model(c *Config, k string, p toml.Primitive) (Model, bool) {
	key := []string{"models", k}
	var raw rawModel
	if !d.value(p, &raw, key...) {
		return Model{}, false
	}
	m := Model{
		Key:                 k,
		APIID:               k,
		Retry:               DefaultRetry(),
		MaxRequestBytes:     DefaultMaxRequestBytes,
		MaxOutputTokens:     DefaultMaxOutputTokens,
		MaxImageBase64Bytes: DefaultMaxImageBase64Bytes,
		MaxTruncatedResumes: DefaultMaxTruncatedResumes,

		ResponseHeaderTimeout: DefaultResponseHeaderTimeout,
		StreamIdleTimeout:     DefaultStreamIdleTimeout,
	}
	if raw.Gateway != nil {
		m.Gateway = *raw.Gateway
		// A broken gateway's problems are already reported: the model inherits nothing
		// from it, and the validator checks only the model's own fields.
		if g, ok := c.Gateways[m.Gateway]; ok && !d.broken[toml.Key{"gateways", m.Gateway}.String()] {
			m.Protocol, m.BaseURL, m.Auth, m.Retry, m.MaxRequestBytes = g.Protocol, g.BaseURL, g.Auth, g.Retry, g.MaxRequestBytes
			m.ResponseHeaderTimeout, m.StreamIdleTimeout = g.ResponseHeaderTimeout, g.StreamIdleTimeout
			m.Prices = g.Prices
		}
	}
	m.Prices = d.prices(raw.Prices, m.Prices, key)
	set(&m.Protocol, raw.Protocol)
	if raw.BaseURL != nil {
		m.BaseURL = strings.TrimRight(*raw.BaseURL, "/")
	}
	set(&m.MaxRequestBytes, raw.MaxRequestBytes)
	d.timeouts(&m.ResponseHeaderTimeout, &m.StreamIdleTimeout, &raw.rawEndpoint, key)
	if raw.Retry != nil {
		// A model's retry table replaces its gateway's; unset fields take the defaults.
		m.Retry = raw.Retry.apply()
	}
	// An auth that does not decode is reported; the model's other fields are still
	// checked, so that every problem of the file is said at once.
	if auth, ok := d.auth(raw.Auth, key); ok && auth != nil {
		m.Auth = *auth
	}
	set(&m.APIID, raw.APIID)
	set(&m.ContextWindow, raw.ContextWindow)
	set(&m.MaxOutputTokens, raw.MaxOutputTokens)
	set(&m.MaxImageBase64Bytes, raw.MaxImageBase64Bytes)
	set(&m.MaxTruncatedResumes, raw.MaxTruncatedResumes)
	if modes := thinkingModes(m.Protocol); modes != nil {
		m.Thinking = modes[0]
	}
	set(&m.Thinking, raw.Thinking)
	set(&m.Effort, raw.Effort)
	if m.Thinking == ThinkingEffort && m.Effort == "" {
		m.Effort = DefaultEffort // the effort mode sends an effort; none sends none
	}
	if raw.AutoCompactAt != nil {
		if *raw.AutoCompactAt == 0 {
			// 0 means disabled in [Model], so an explicit 0 would pass validation.
			d.errs = append(d.errs, d.errorAt(append(key, "auto_compact_at"),
				"must be greater than 0 and less than 1; leave it unset to disable automatic compaction"))
		}
		m.AutoCompactAt = *raw.AutoCompactAt
	}
	return m, true
}

// auth decodes an auth value, which is either the credential itself or a source table.
// It returns nil when key has no auth, and false after reporting a problem.
func (d *decoder) auth(p toml.Primitive, entry []string) (*Auth, bool) {
	return d.authAt(p, append(slices.Clip(entry), "auth"), "credential")
}

// authAt decodes the auth-shaped value at key: a string (what names it, "credential" or
// "value") or a source table. It returns nil when key is not defined, and false after
// reporting a problem.
func (d *decoder) authAt(p toml.Primitive, key []string, what string) (*Auth, bool) {
	typ := d.md.Type(key...)
	if typ == "" && d.md.IsDefined(key...) {
		typ = "Hash" // a table made implicitly by dotted keys (auth.source = …) has no type
	}
	switch typ {
	case "":
		return nil, true
	case "String":
		var s string
		if !d.value(p, &s, key...) {
			return nil, false
		}
		return &Auth{Source: AuthInline, Value: s}, true
	case "Hash":
		var raw rawAuth
		if !d.value(p, &raw, key...) {
			return nil, false
		}
		var a Auth
		set(&a.Source, raw.Source)
		set(&a.VarName, raw.VarName)
		set(&a.Path, raw.Path)
		switch {
		case raw.Source == nil:
			d.errs = append(d.errs, d.errorAt(append(key, "source"), `missing; use "env", "file" or "none"`))
		case *raw.Source == AuthInline:
			// Inline is the string form; as a table it would carry no credential.
			d.errs = append(d.errs, d.errorAt(append(key, "source"), fmt.Sprintf(`unknown auth source "inline"; write the %s itself as %s = "…", or use "env", "file" or "none"`, what, toml.Key(key[len(key)-1:]))))
			a.Source = AuthNone
		}
		return &a, true
	}
	d.errs = append(d.errs, d.errorAt(key, fmt.Sprintf(
		`must be the %s as a string or a table such as { source = "env", var_name = "API_KEY" }, not %s`,
		what, strings.ToLower(d.md.Type(key...)))))
	return nil, false
}

// timeouts sets the endpoint's timeouts that raw defines. A value too large for a
// [time.Duration] is reported here and leaves dst alone; a negative one is converted, for
// [Config.Validate] to report.
func (d *decoder) timeouts(header, idle *time.Duration, raw *rawEndpoint, entry []string) {
	for _, t := range []struct {
		dst  *time.Duration
		secs *int
		key  string
	}{
		{header, raw.ResponseHeaderTimeoutSecs, "response_header_timeout_secs"},
		{idle, raw.StreamIdleTimeoutSecs, "stream_idle_timeout_secs"},
	} {
		switch {
		case t.secs == nil:
		case int64(*t.secs) > maxTimeoutSecs || int64(*t.secs) < -maxTimeoutSecs:
			d.errs = append(d.errs, d.errorAt(append(slices.Clip(entry), t.key),
				fmt.Sprintf("must be from 0 to %d seconds (0 disables the timeout), got %d", maxTimeoutSecs, *t.secs)))
		default:
			*t.dst = time.Duration(*t.secs) * time.Second
		}
	}
}

// prices returns the prices of the entry at entry: the fields raw sets over base (its
// gateway's, or nil), or base when raw is nil. It reports a price that is negative or not
// a number, and prices without input and output, which every cost needs.
func (d *decoder) prices(raw *rawPrices, base *Prices, entry []string) *Prices {
	if raw == nil {
		return base
	}
	var p Prices
	if base != nil {
		p = *base
	}
	key := append(slices.Clip(entry), "prices")
	ok := true
	for _, f := range []struct {
		name string
		dst  *float64
		v    *float64
	}{
		{"input", &p.Input, raw.Input},
		{"output", &p.Output, raw.Output},
		{"cache_read", &p.CacheRead, raw.CacheRead},
		{"cache_write", &p.CacheWrite, raw.CacheWrite},
	} {
		if f.v == nil {
			continue
		}
		if !(*f.v >= 0) || math.IsInf(*f.v, 0) { // the negation catches NaN
			d.errs = append(d.errs, d.errorAt(append(slices.Clip(key), f.name),
				fmt.Sprintf("must be a price per million tokens, 0 or more, got %g", *f.v)))
			ok = false
			continue
		}
		*f.dst = *f.v
		switch f.name {
		case "input":
			p.setInput = true
		case "output":
			p.setOutput = true
		case "cache_read":
			p.setCacheRead = true
		case "cache_write":
			p.setCacheWrite = true
		}
	}
	if !ok {
		return nil
	}
	for _, f := range []struct {
		name string
		set  bool
	}{{"input", p.setInput}, {"output", p.setOutput}} {
		if !f.set {
			d.errs = append(d.errs, d.errorAt(key, fmt.Sprintf(
				"missing %s: prices need at least input and output, in money per million tokens, such as { input = 3, output = 15 }", f.name)))
			ok = false
		}
	}
	if !ok {
		return nil
	}
	// Cache prices the entry leaves unset are the input price: a cached token costs what
	// any prompt token does unless the catalog says less (or more).
	if !p.setCacheRead {
		p.CacheRead = p.Input
	}
	if !p.setCacheWrite {
		p.CacheWrite = p.Input
	}
	return &p
}

func (r *rawRetry) apply() Retry {
	rt := DefaultRetry()
	set(&rt.MaxAttempts, r.MaxAttempts)
	set(&rt.InitialBackoffMs, r.InitialBackoffMs)
	set(&rt.MaxBackoffMs, r.MaxBackoffMs)
	set(&rt.BackoffMultiplier, r.BackoffMultiplier)
	return rt
}

func set[T any](dst *T, v *T) {
	if v != nil {
		*dst = *v
	}
}

// undecoded reports every key the file defines that myco does not know, outermost
// first: an unknown table is one problem, not one per key inside it.
func (d *decoder) undecoded() {
	reported := map[string]bool{}
	for _, k := range d.md.Undecoded() {
		skip := false
		for j := 1; j <= len(k); j++ {
			p := k[:j].String()
			if reported[p] || d.broken[p] {
				skip = true
				break
			}
		}
		if skip {
			continue
		}
		reported[k.String()] = true
		msg := "unknown key"
		if hint, ok := codexOnly[k[len(k)-1]]; ok && len(k) == 3 && k[0] == "mcp_servers" {
			msg += "; " + hint
		}
		if len(k) > 1 && slices.Contains(topLevelKeys, k[len(k)-1]) {
			msg += fmt.Sprintf("; %s is a top-level key, and top-level keys must come before the first [table]", k[len(k)-1])
		}
		d.errs = append(d.errs, d.errorAt(k, msg))
	}
}

// codexOnly are the keys of Codex's [mcp_servers.NAME] tables that myco does not take,
// because it has no such setting or its own means something else, each with what to
// write instead. Codex's keys that mean what myco's do are taken (see [rawMCP]).
var codexOnly = map[string]string{
	"env_vars": `env_vars is Codex's list of variables passed on when they are set; myco names each one: ` +
		`env = { NAME = { source = "env", var_name = "NAME" } }, which counts NAME as a credential (the bash tool does not get it) and makes the server unavailable when it is not set`,
	"env_http_headers": `env_http_headers is Codex's; myco writes headers = { NAME = { source = "env", var_name = "VAR" } }, and the server is unavailable when VAR is not set`,
	"bearer_token_env_var": `bearer_token_env_var is Codex's; myco sends the variable's value as it is: ` +
		`headers = { Authorization = { source = "env", var_name = "VAR" } } with VAR holding "Bearer TOKEN"`,
	"bearer_token":   `write headers = { Authorization = "Bearer …" }, or better a source: { source = "file", path = "~/.config/token" }`,
	"enabled_tools":  "enabled_tools is Codex's; myco offers every tool of a server and has no list of tools to keep",
	"disabled_tools": "disabled_tools is Codex's; myco offers every tool of a server and has no list of tools to leave out",
	"required":       "required is Codex's; a server that fails in myco never stops it, and myco mcp list exits 1",
	"scopes":         "scopes is for Codex's OAuth login, which myco does not do; send a token in headers",
	"oauth_resource": "oauth_resource is for Codex's OAuth login, which myco does not do; send a token in headers",
}

var topLevelKeys = []string{"model", "attach_timeout_secs", "max_prelude_bytes", "compaction_max_requests", "max_cost"}

func (d *decoder) errorAt(key []string, msg string) *Error {
	return &Error{File: d.file, Line: d.lines.line(key), Key: toml.Key(key).String(), Msg: msg}
}

var (
	// The decoder reports type errors as "toml: line N (last key "K"): MSG".
	tomlErrorRE   = regexp.MustCompile(`(?s)^toml: (?:line (\d+) )?\(last key ("(?:[^"\\]|\\.)*")\): (.*)$`)
	badTypeRE     = regexp.MustCompile(`^incompatible types: TOML value has type (\S+); destination has type (.+)$`)
	notTableRE    = regexp.MustCompile(`^type mismatch for \S+: expected table but found (\S+)$`)
	tomlTypeNames = map[string]string{
		"int64": "an integer", "float64": "a float", "string": "a string", "bool": "a boolean",
		"integer": "an integer", "float": "a float", "boolean": "a boolean", "map": "a table",
		"map[string]any": "a table", "array": "an array", "arrayhash": "an array of tables", "datetime": "a datetime", "[]any": "an array", "[]map[string]any": "an array of tables",
	}
)

// tomlError turns a decode error for the value at key into an [*Error] with the line
// and key the decoder knows, in words a user reads.
func (d *decoder) tomlError(key []string, err error) *Error {
	e := &Error{File: d.file, Key: toml.Key(key).String(), Line: d.lines.line(key), Err: err}
	var pe toml.ParseError
	if errors.As(err, &pe) { // range errors
		e.Msg = pe.Message
		if pe.LastKey != "" {
			e.Key = pe.LastKey
		}
		if pe.Position.Line > 0 {
			e.Line = pe.Position.Line
		}
		return e
	}
	m := tomlErrorRE.FindStringSubmatch(err.Error())
	if m == nil {
		e.Msg = err.Error()
		return e
	}
	if n, err := strconv.Atoi(m[1]); err == nil && n > 0 {
		e.Line = n
	}
	if k, err := strconv.Unquote(m[2]); err == nil && k != "" {
		e.Key = k
	}
	e.Msg = m[3]
	if t := badTypeRE.FindStringSubmatch(e.Msg); t != nil {
		e.Msg = fmt.Sprintf("must be %s, not %s", typeName(t[2]), typeName(t[1]))
	} else if t := notTableRE.FindStringSubmatch(e.Msg); t != nil {
		e.Msg = fmt.Sprintf("must be a table, not %s", typeName(t[1]))
	}
	return e
}

func typeName(goType string) string {
	if n, ok := tomlTypeNames[goType]; ok {
		return n
	}
	return goType
}
