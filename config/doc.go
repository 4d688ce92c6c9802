// Package config owns everything myco resolves once at startup: the profile and its
// directories ([ResolvePaths]), the .env file ([LoadDotEnv]), and config.toml ([Load]) with
// its model catalog of gateways and models ([Config.Resolve], [Config.DefaultModel]) and
// their credentials ([Auth]).
//
// cmd/myco calls it once and hands each package its Options; no other package reads the
// environment or the config file. The environment is reached only through the lookup
// functions callers pass in, so nothing here depends on process state. Every config error
// names the file it came from ([Error]).
//
// The package imports only the standard library and github.com/BurntSushi/toml; it never
// imports another myco package.
package config
