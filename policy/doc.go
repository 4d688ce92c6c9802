// Package policy decides, without I/O, whether a tool call may run: the approval modes
// (read-only, ask, workspace, full), the allow / ask / deny rules a person writes, and the
// parsed command line a bash rule matches. The sessions package asks [Decide] before each
// tool call and records a pending approval when the answer is [Ask]; the hosts apply what
// it decides (the sandbox of hosts/sandbox).
package policy
