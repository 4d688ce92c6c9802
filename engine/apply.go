package engine

import (
	"maps"
	"reflect"

	"myco.dev/config"
	"myco.dev/sessions/catalog"
)

// Apply puts the config of p, the same profile opened again after its config.toml
// changed, to work in e without ending anything e runs: no turn, no bash session, no MCP
// server, no host connection. What the config's change allows is in use at once:
//
//   - the catalog ([models], [gateways], model, compaction_max_requests, the credentials of
//     the working directory's .env): new sessions, model checks and every session's next
//     job use it, while a running job finishes with what it started with;
//   - the credential variables: kept from the processes that tool calls start from now on,
//     locally per call and on remote hosts for the connections made from now on.
//
// What the running harness and its tools were built with cannot change under them: the
// MCP servers, attach_timeout_secs, max_prelude_bytes (the prelude tool's cap and the
// prompt's) and the largest max_image_base64_bytes (view_image's cap on the hosts). Apply
// returns the keys of those that differ from what e was built with (see
// [HarnessChanges]); empty when nothing waits. Those take effect only with a new engine, which ends
// the tools; the caller decides when (see handlers.Reloader).
func (e *Engine) Apply(p *Profile) (pending []string) {
	cat := newCatalog(p, e.Harness, e.metrics)
	e.catalog.Store(cat)
	e.Sessions.SetModels(cat)
	e.Harness.SetWithoutEnv(p.Config.CredentialVars())
	return HarnessChanges(e.built.Config, p.Config)
}

// HarnessChanges names what differs between the configs old and cur that only a new
// harness can take: "mcp_servers", "attach_timeout_secs", "max_prelude_bytes",
// "max_image_base64_bytes" (the largest of the catalog's), in that order.
func HarnessChanges(old, cur *config.Config) []string {
	var out []string
	if !maps.EqualFunc(old.MCPServers, cur.MCPServers, func(a, b config.MCPServer) bool { return reflect.DeepEqual(a, b) }) {
		out = append(out, "mcp_servers")
	}
	if old.AttachTimeoutSecs != cur.AttachTimeoutSecs {
		out = append(out, "attach_timeout_secs")
	}
	if old.MaxPreludeBytes != cur.MaxPreludeBytes {
		out = append(out, "max_prelude_bytes")
	}
	if catalog.LargestImageCap(old) != catalog.LargestImageCap(cur) {
		out = append(out, "max_image_base64_bytes")
	}
	return out
}
