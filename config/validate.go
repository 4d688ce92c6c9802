package config

import (
	"fmt"
	"maps"
	"math"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
)

// Validate checks the decoded config: ranges, protocols, base URLs, auth forms,
// gateway references, thinking modes and the default model key. [Load] calls it; it
// returns [*Error] values joined like Load's. It does not look up credentials.
func (c *Config) Validate() error {
	if errs := c.validate(nil); len(errs) > 0 {
		return joinErrors(errs)
	}
	return nil
}

// validate collects the problems of c. broken holds the keys of entries the decoder
// could not decode and has already reported; references to them are not reported again.
func (c *Config) validate(broken map[string]bool) []*Error {
	v := &validator{c: c}
	if c.AttachTimeoutSecs < 0 {
		v.errorf([]string{"attach_timeout_secs"}, "must not be negative (0 disables the timeout), got %d", c.AttachTimeoutSecs)
	}
	v.positive([]string{"max_prelude_bytes"}, c.MaxPreludeBytes)
	switch c.Approvals.Mode {
	case "", "read-only", "ask", "workspace", "full":
	default:
		v.errorf([]string{"approvals", "mode"}, "unknown mode %q: read-only, ask, workspace or full", c.Approvals.Mode)
	}
	if c.Approvals.TimeoutSecs < 0 {
		v.errorf([]string{"approvals", "timeout_secs"}, "must not be negative (0: no timeout), got %d", c.Approvals.TimeoutSecs)
	}
	v.positive([]string{"compaction_max_requests"}, c.CompactionMaxRequests)
	if !(c.MaxCost >= 0) || math.IsInf(c.MaxCost, 0) { // the negation catches NaN
		v.errorf([]string{"max_cost"}, "must be the budget of a session tree in the catalog's money, 0 or more (0 means none), got %g", c.MaxCost)
	}
	if c.Model != "" && len(c.Models) > 0 && !broken[toml.Key{"models", c.Model}.String()] {
		if _, ok := c.Models[c.Model]; !ok {
			v.errorf([]string{"model"}, "unknown model %q; configured models: %s", c.Model, c.modelKeys())
		}
	}

	for _, name := range slices.Sorted(maps.Keys(c.Gateways)) {
		g := c.Gateways[name]
		key := []string{"gateways", name}
		v.endpoint(key, g)
	}
	for _, k := range slices.Sorted(maps.Keys(c.Models)) {
		v.model(c.Models[k], broken)
	}
	for _, name := range slices.Sorted(maps.Keys(c.MCPServers)) {
		v.mcpServer(name, c.MCPServers[name])
	}
	return v.errs
}

type validator struct {
	c    *Config
	errs []*Error
}

func (v *validator) errorf(key []string, format string, args ...any) {
	v.errs = append(v.errs, &Error{
		File: v.c.File,
		Line: v.c.lines.line(key),
		Key:  toml.Key(key).String(),
		Msg:  fmt.Sprintf(format, args...),
	})
}

func (v *validator) positive(key []string, n int) {
	if n <= 0 {
		v.errorf(key, "must be a positive integer, got %d", n)
	}
}

func (v *validator) model(m Model, broken map[string]bool) {
	key := []string{"models", m.Key}
	at := func(k string) []string { return append(slices.Clip(key), k) }
	if m.Key == "" {
		v.errorf(key, "model key must not be empty")
	}

	// Inherited values were checked with their gateway; check only what the model
	// changes, so that one bad gateway is one problem.
	// Every problem of the model is reported at once: an endpoint that cannot be told
	// (an unknown or broken gateway, none at all) skips only the endpoint's checks.
	var g *Gateway
	endpoint := true
	if m.Gateway != "" {
		gw, ok := v.c.Gateways[m.Gateway]
		switch {
		case broken[toml.Key{"gateways", m.Gateway}.String()]:
			endpoint = false
		case ok:
			g = &gw
		default:
			v.errorf(at("gateway"), "unknown gateway %q; configured gateways: %s", m.Gateway, v.gatewayNames())
			endpoint = false
		}
	}
	if endpoint && g == nil && m.Protocol == "" && m.BaseURL == "" {
		v.errorf(key, "no endpoint: set gateway, or set protocol and base_url")
		endpoint = false
	}
	if endpoint {
		v.modelEndpoint(m, g)
	}
	v.modelOwn(m)
}

// modelEndpoint checks the endpoint fields model m sets itself (g is its gateway, or nil).
func (v *validator) modelEndpoint(m Model, g *Gateway) {
	at := func(k string) []string { return []string{"models", m.Key, k} }
	var (
		protocol, baseURL = m.Protocol, m.BaseURL
		auth, retry       = m.Auth, m.Retry
		maxRequestBytes   = m.MaxRequestBytes
		skip              = Gateway{Protocol: "\x00", BaseURL: "\x00", Auth: Auth{Source: "\x00"}, MaxRequestBytes: -1,
			ResponseHeaderTimeout: -1, StreamIdleTimeout: -1} // values no file can produce
	)
	if g != nil {
		skip = *g
	}
	if protocol != skip.Protocol {
		if err := checkProtocol(protocol); err != "" {
			v.errorf(at("protocol"), "%s", err)
		}
	}
	if baseURL != skip.BaseURL {
		if err := checkBaseURL(baseURL); err != "" {
			v.errorf(at("base_url"), "%s", err)
		}
	}
	if auth != skip.Auth {
		v.auth(at("auth"), auth)
	}
	if retry != skip.Retry {
		v.retry(at("retry"), retry)
	}
	if maxRequestBytes != skip.MaxRequestBytes {
		v.positive(at("max_request_bytes"), maxRequestBytes)
	}
	if m.ResponseHeaderTimeout != skip.ResponseHeaderTimeout {
		v.timeout(at("response_header_timeout_secs"), m.ResponseHeaderTimeout)
	}
	if m.StreamIdleTimeout != skip.StreamIdleTimeout {
		v.timeout(at("stream_idle_timeout_secs"), m.StreamIdleTimeout)
	}
}

// modelOwn checks the fields that are model m's own.
func (v *validator) modelOwn(m Model) {
	at := func(k string) []string { return []string{"models", m.Key, k} }
	if m.APIID == "" {
		v.errorf(at("api_id"), "must not be empty (it defaults to the model key)")
	}
	if m.ContextWindow <= 0 {
		v.errorf(at("context_window"), "required: the model's context window in tokens, a positive integer")
	}
	if modes := thinkingModes(m.Protocol); modes != nil && !slices.Contains(modes, m.Thinking) {
		v.errorf(at("thinking"), "%q is not a thinking mode of %s; use %s", m.Thinking, m.Protocol, orList(modes))
	}
	switch {
	case m.Effort == "":
	case !slices.Contains(efforts, m.Effort):
		v.errorf(at("effort"), "%q is not an effort; use %s", m.Effort, orList(efforts))
	case m.Thinking == ThinkingNone:
		v.errorf(at("effort"), "an effort is sent only with thinking: thinking is \"none\", so leave effort out or set thinking = %q", thinkingModes(m.Protocol)[0])
	}
	v.positive(at("max_output_tokens"), m.MaxOutputTokens)
	v.positive(at("max_image_base64_bytes"), m.MaxImageBase64Bytes)
	if m.MaxTruncatedResumes < 0 {
		v.errorf(at("max_truncated_resumes"), "must not be negative (0 disables resuming), got %d", m.MaxTruncatedResumes)
	}
	if a := m.AutoCompactAt; a != 0 && !(a > 0 && a < 1) { // 0 is unset; the negation catches NaN
		v.errorf(at("auto_compact_at"), "must be greater than 0 and less than 1, got %g", m.AutoCompactAt)
	}
}

func (v *validator) endpoint(key []string, g Gateway) {
	at := func(k string) []string { return append(slices.Clip(key), k) }
	if err := checkProtocol(g.Protocol); err != "" {
		v.errorf(at("protocol"), "%s", err)
	}
	if err := checkBaseURL(g.BaseURL); err != "" {
		v.errorf(at("base_url"), "%s", err)
	}
	v.auth(at("auth"), g.Auth)
	v.retry(at("retry"), g.Retry)
	v.positive(at("max_request_bytes"), g.MaxRequestBytes)
	v.timeout(at("response_header_timeout_secs"), g.ResponseHeaderTimeout)
	v.timeout(at("stream_idle_timeout_secs"), g.StreamIdleTimeout)
}

func (v *validator) timeout(key []string, d time.Duration) {
	if d < 0 {
		v.errorf(key, "must not be negative (0 disables the timeout), got %d", d/time.Second)
	}
}

func checkProtocol(p string) string {
	if p == "" {
		return "required: " + orList(protocols)
	}
	if !slices.Contains(protocols, p) {
		return fmt.Sprintf("unknown protocol %q; use %s", p, orList(protocols))
	}
	return ""
}

func checkBaseURL(s string) string {
	if s == "" {
		return "must not be empty"
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Sprintf("%q is not an http or https URL", s)
	}
	return ""
}

func (v *validator) auth(key []string, a Auth) {
	at := func(k string) []string { return append(slices.Clip(key), k) }
	switch a.Source {
	case "", AuthNone:
	case AuthInline:
		if a.Value == "" {
			v.errorf(key, `empty credential; omit auth or use { source = "none" } to send none`)
		}
	case AuthEnv:
		switch {
		case a.VarName == "":
			v.errorf(at("var_name"), `required with source = "env": the environment variable that holds the credential`)
		case !isEnvName(a.VarName):
			v.errorf(at("var_name"), "invalid variable name %q: use letters, digits and '_', not starting with a digit", a.VarName)
		case strings.HasPrefix(a.VarName, "MYCO_"):
			// MYCO_ variables configure myco and its tool processes; a credential
			// among them would be stripped from the tools or supplied by a .env.
			v.errorf(at("var_name"), "%q: MYCO_ variables configure myco itself and cannot hold a credential; choose another name", a.VarName)
		}
	case AuthFile:
		if a.Path == "" {
			v.errorf(at("path"), `required with source = "file": the file that holds the credential`)
		}
	default:
		v.errorf(at("source"), `unknown auth source %q; use "env", "file" or "none"`, a.Source)
	}
}

func (v *validator) retry(key []string, r Retry) {
	at := func(k string) []string { return append(slices.Clip(key), k) }
	if r.MaxAttempts < 1 {
		v.errorf(at("max_attempts"), "must be at least 1 (1 disables retry), got %d", r.MaxAttempts)
	}
	if r.InitialBackoffMs < 0 {
		v.errorf(at("initial_backoff_ms"), "must not be negative, got %d", r.InitialBackoffMs)
	}
	if r.MaxBackoffMs < 0 {
		v.errorf(at("max_backoff_ms"), "must not be negative, got %d", r.MaxBackoffMs)
	}
	if !(r.BackoffMultiplier >= 1) || math.IsInf(r.BackoffMultiplier, 1) {
		v.errorf(at("backoff_multiplier"), "must be a finite number of at least 1, got %g", r.BackoffMultiplier)
	}
}

func (v *validator) gatewayNames() string {
	if len(v.c.Gateways) == 0 {
		return "none"
	}
	return strings.Join(slices.Sorted(maps.Keys(v.c.Gateways)), ", ")
}

func orList(s []string) string {
	q := make([]string, len(s))
	for i, x := range s {
		q[i] = fmt.Sprintf("%q", x)
	}
	if len(q) <= 1 {
		return strings.Join(q, "")
	}
	return strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
}
