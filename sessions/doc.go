// Package sessions owns durable sessions: the session document (metadata and ordered
// threads), its on-disk store, and the checkpoints that make a turn survive a crash.
//
// A session is stored as an append-only log, one record per line, each line carrying a
// checksum, so a checkpoint costs what it adds and never rewrites the history. A torn last
// line (the process died mid-write) was never acknowledged and is ignored on load; any other
// damage is an error that names the file and the line. See docs/session-format.md.
//
// It must not import handlers, views, templ or chi.
package sessions
