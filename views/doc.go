// Package views holds the templ components of the browser UI and the Markdown renderer;
// components take view structs, do no I/O; it must not import sessions, agent, hosts or
// config.
//
// [Markdown] is the one place that turns untrusted text (model output, workspace documents)
// into HTML, and the one place that calls templ.Raw: goldmark without raw HTML, local links
// mapped onto the workspace route at the AST level, chroma classes for code, and a
// bluemonday allow-list that admits nothing that fetches from another origin. Its
// exfiltration corpus, views/testdata/markdown/exfil/*.md, is plain Markdown that other
// tests (a real browser counting requests) can load; its README says how.
package views
