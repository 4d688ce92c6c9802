// Package agent owns the run loop of one live agent: it sends model requests, streams their
// chunks out as [Event]s, runs the tool calls of each response concurrently, resumes
// responses cut off at the output token limit, and keeps the history consistent (every tool
// call answered exactly once) whatever happens: tool failures, model errors, checkpoint
// failures or cancellation. It also builds the system prompt ([SystemPrompt]) and repairs
// stored histories ([RepairHistory]).
//
// The package declares the two small interfaces it needs, [Model] (satisfied by
// *model.Client) and [Tools] (satisfied by the host harness). It imports only the standard
// library and myco.dev/agent/model; it never imports handlers, views, templ or chi, nor sessions
// or hosts.
package agent
