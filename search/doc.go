// Package search is the derived full-text index of a profile's sessions: what people wrote,
// what the model answered, tool inputs and outputs and the paths a session touched, in
// every thread, archived sessions included. It is never the truth: it is built from the
// session files (package sessions reads them), kept up to date after checkpoints off the
// turn's path, and rebuilt in the background when it is missing, damaged or of an older
// format, while searches answer from what it holds and say they are incomplete.
//
// The index is a SQLite database with an FTS5 table, through the pure-Go driver
// modernc.org/sqlite (see docs/dev/decisions.md for why not bleve). Only the server opens
// it: myco -p and the chat never import this package's work into their start-up.
//
// It imports sessions and the standard library (and the driver); never handlers, views,
// templ or chi.
package search
