// Package workspace owns the profile's workspace/ directory as the system prompt sees it:
// the write-once prelude (its entries, the scanner that notices other agents' edits between
// model steps, and the edits the prelude tool makes), the listing of the other workspace
// files, the project guidance files (AGENTS.md, CLAUDE.md) and the exported manual. It
// also holds [Files], the read-only capability through which the browser's viewer reads
// the workspace.
//
// It renders text blocks and plain Go values; it imports only the standard library, so the
// agent, sessions, the browser's handlers and the tool adapter in
// [myco.dev/workspace/preludetool] build on it. It never imports handlers, views, templ or chi.
package workspace
