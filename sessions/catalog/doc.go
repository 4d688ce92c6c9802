// Package catalog is what a profile's config makes of the agents its session service runs:
// the model catalog ([Catalog]: a config model becomes the agent's options, with one model
// client per key and the system prompt assembled from the tools, the hosts and the
// prompt's blocks), the blocks themselves ([Prompt]: the manual's index, project guidance,
// the prelude, the workspace listing), and the local host's tools ([LocalTools]), whose
// processes get the profile's variables and never the credentials the catalog names.
//
// The session service ([sessions.Manager]) calls it through [sessions.Models]; package
// sessions itself stays free of the config and the wire protocols, which the HTTP
// handlers above it must not import. It must not import handlers, views, templ, chi, cli
// or profiles.
package catalog
