// Package workspace owns the profile's workspace/ directory as the system prompt sees it:
// the write-once prelude (its entries, the scanner that notices other agents' edits between
// model steps, and the edits the prelude tool makes), the listing of the other workspace
// files, the project guidance files (AGENTS.md, CLAUDE.md) and the exported manual.
//
// It renders text blocks and plain Go values; it imports only the standard library, so the
// agent, sessions and the tool adapter in [myco/workspace/preludetool] build on it.
package workspace
