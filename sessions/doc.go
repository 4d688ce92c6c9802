// Package sessions owns durable sessions: the session service ([Manager]) that every front
// end calls; the session document (metadata and ordered threads), which one type in memory
// owns with its lock, and its on-disk [Store], which only reads and writes records; the
// runner, which runs durable agent turns with checkpoints that fail closed, records every
// tool call's intent before it runs, recovers interrupted turns, rewinds rejected ones and
// compacts; the runtime, which binds a session to its tools and resource owner across
// thread and agent replacement; the kinds of end of a turn ([Kinds]) and the words every
// front end tells a failure with ([Describe]); and the root-only session_history and
// session_meta tools.
// See docs/decisions.md for who owns the document and what each lock guards.
//
// A session is stored as an append-only log, one record per line, each line carrying a
// checksum, so a checkpoint costs what it adds and never rewrites the history. A torn last
// line (the process died mid-write) was never acknowledged and is ignored on load; any other
// damage is an error that names the file and the line. Schemas 2 to 4 are upgraded in
// memory. See docs/session-format.md.
//
// It must not import handlers, views, templ or chi.
package sessions
