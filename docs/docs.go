// Package docs embeds myco's user documentation, the Markdown files beside this one, so the
// binary can export them to each profile's manual/ on startup.
package docs

import "embed"

// FS holds the manual pages (*.md).
//
//go:embed *.md
var FS embed.FS
