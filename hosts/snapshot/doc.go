// Package snapshot captures, diffs and restores the files of a session's directory, on the
// host that holds them: in-process for the local worker, inside the host daemon for a
// remote one. The session service records the snapshot ids in each turn's checkpoint and
// drives the Changes view, undo, redo and the revert of a file through them.
//
// A [Store] is a directory of the host's own (never inside a project, and never the
// project's .git): a content-addressed object store (files, trees and snapshot records by
// SHA-256, in pack files), the owners' references, and a stat cache per captured directory
// that makes the capture of an unchanged tree a walk without reads or writes. [Store.Capture]
// records a directory, [Store.Diff] compares two snapshots (added, modified, deleted,
// renamed; line counts and bounded unified diffs), [Store.Restore] puts files back as one
// snapshot has them where they are still as another has them, listing the conflicts, and
// [Store.Prune] drops what an owner no longer keeps. Git is not needed on the host; the
// choice and its costs are in docs/dev/decisions.md.
//
// It imports only the standard library and internal/atomicfile: no session, handler or view
// package, so that the local worker and the host daemon can both use it.
package snapshot
