// Package preludetool is the root-only prelude tool: the agent's one edit path for the
// profile's prelude ([workspace.Prelude]). It runs on the local worker only.
package preludetool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"myco.dev/agent/model"
	"myco.dev/hosts/tools"
	"myco.dev/workspace"
)

// Tool is the prelude tool. It is safe for concurrent use.
type Tool struct{ p *workspace.Prelude }

// New returns the prelude tool over p.
func New(p *workspace.Prelude) *Tool { return &Tool{p: p} }

// Name implements tools.Tool.
func (*Tool) Name() string { return "prelude" }

// Spec implements tools.Tool.
func (t *Tool) Spec() model.ToolSpec {
	return model.ToolSpec{Name: "prelude",
		Description: "Edit this profile's prelude, the durable memory every agent of the profile reads in its system prompt. " +
			"add writes content as a new write-once entry (label, optional, becomes part of its file name); " +
			"replace writes content as a new entry and then drops the entry named by entry; remove drops entry; " +
			"list returns every live entry with its full content (names_only: just names and sizes). " +
			"Entries are never edited in place, so concurrent agents cannot lose each other's work: two replacements of one entry leave two candidates to merge. " +
			fmt.Sprintf("The rendered prelude is capped at %d bytes (max_prelude_bytes); an edit that would cross it is refused.", t.p.Max),
		Schema: json.RawMessage(`{"type":"object","properties":{` +
			`"action":{"type":"string","enum":["add","replace","remove","list"]},` +
			`"content":{"type":"string","description":"Markdown text of the new entry (add, replace)"},` +
			`"entry":{"type":"string","description":"file name of an existing entry (replace, remove)"},` +
			`"label":{"type":"string","description":"a few words for the new entry's file name (add, replace)"},` +
			`"names_only":{"type":"boolean","description":"list: names and sizes only"}},"required":["action"]}`)}
}

type input struct {
	Action    string `json:"action"`
	Content   string `json:"content"`
	Entry     string `json:"entry"`
	Label     string `json:"label"`
	NamesOnly bool   `json:"names_only"`
}

// Call implements tools.Tool. The prelude belongs to the profile, not to one owner.
func (t *Tool) Call(ctx context.Context, owner string, raw json.RawMessage) tools.Result {
	var in input
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return tools.Errorf("prelude: bad input: %v (fields: action, content, entry, label, names_only)", err)
	}
	switch in.Action {
	case "add":
		name, err := t.p.Add(in.Content, in.Label)
		if err != nil {
			return tools.Errorf("prelude: add: %v", err)
		}
		return tools.Result{Text: fmt.Sprintf("added entry %s (%d bytes)%s", name, len(in.Content), t.size())}
	case "replace":
		if in.Entry == "" {
			return tools.Errorf("prelude: replace needs entry (the file name of the entry to replace) and content")
		}
		name, err := t.p.Replace(in.Entry, in.Content, in.Label)
		var gone *workspace.GoneError
		switch {
		case errors.As(err, &gone):
			return tools.Result{Text: fmt.Sprintf("added entry %s; note: %v%s", name, err, t.size())}
		case err != nil:
			return tools.Errorf("prelude: replace: %v", err)
		}
		return tools.Result{Text: fmt.Sprintf("replaced %s with %s (%d bytes)%s", in.Entry, name, len(in.Content), t.size())}
	case "remove":
		if in.Entry == "" {
			return tools.Errorf("prelude: remove needs entry (the file name of the entry to remove)")
		}
		if err := t.p.Remove(in.Entry); err != nil {
			return tools.Errorf("prelude: remove: %v", err)
		}
		return tools.Result{Text: "removed " + in.Entry + t.size()}
	case "list":
		entries, err := t.p.Load()
		if err != nil {
			return tools.Errorf("prelude: list: %v", err)
		}
		if len(entries) == 0 {
			return tools.Result{Text: "the prelude has no entries" + t.size()}
		}
		if !in.NamesOnly {
			return tools.Result{Text: workspace.RenderEntries(entries) + "\n" + strings.TrimPrefix(t.size(), " ")}
		}
		var b strings.Builder
		for _, e := range entries {
			fmt.Fprintf(&b, "%s (%d bytes)\n", e.Name, e.Size)
		}
		b.WriteString(strings.TrimPrefix(t.size(), " "))
		return tools.Result{Text: b.String()}
	}
	return tools.Errorf("prelude: unknown action %q; use add, replace, remove or list", in.Action)
}

// size reports the rendered prelude's size against its cap.
func (t *Tool) size() string {
	entries, err := t.p.Load()
	if err != nil {
		return ""
	}
	n := workspace.RenderedSize(entries)
	if t.p.Max > 0 {
		return fmt.Sprintf(" [prelude: %d entries, %d of %d bytes]", len(entries), n, t.p.Max)
	}
	return fmt.Sprintf(" [prelude: %d entries, %d bytes]", len(entries), n)
}
