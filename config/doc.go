// Package config owns everything myco resolves once at startup: the profile and its
// directories ([ResolvePaths]), config.toml ([Load]) with its model catalog of gateways
// and models ([Config.Resolve], [Config.DefaultModel]), the MCP servers whose tools the
// model may call ([MCPServer]), their credentials ([Auth]), and the .env file that may
// supply them ([LoadDotEnv], [Env]).
//
// cmd/myco calls it once and hands each package its Options; no other package reads the
// environment or the config file. The environment is reached only through the lookup
// functions callers pass in, so nothing here depends on process state, and nothing here
// changes it: a .env is held in an [Env], never set in the process. Every config error
// names the file it came from ([Error]); what does not stop startup is returned as a
// [Warning] for the caller to show, never printed here.
//
// What it reads is trusted only when no other user could have written it: the
// installation and profile directories and the config file must belong to this user or
// root and be writable by no one else, and a .env may supply only the credential
// variables the config names.
//
// The package imports only the standard library and github.com/BurntSushi/toml; it never
// imports another myco package.
package config
