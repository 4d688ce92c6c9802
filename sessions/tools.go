package sessions

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"myco.dev/agent/model"
	"myco.dev/hosts/tools"
)

// Registry maps tool-resource owners to their runtimes, so that the root-only session
// tools, which the harness calls with an owner, find the session they act on. It is safe
// for concurrent use.
type Registry struct {
	mu sync.Mutex // guards m
	m  map[string]*runtime
}

// add registers rt under its owner; the returned func removes it.
func (g *Registry) add(rt *runtime) (remove func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.m == nil {
		g.m = map[string]*runtime{}
	}
	g.m[rt.owner] = rt
	return func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.m[rt.owner] == rt {
			delete(g.m, rt.owner)
		}
	}
}

// lookup returns the runtime of owner, or nil.
func (g *Registry) lookup(owner string) *runtime {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.m[owner]
}

// HistoryTool is the root-only session_history tool: it reads saved threads of the
// caller's session (or another session of the store) without loading them into context.
type HistoryTool struct{ reg *Registry }

// NewHistoryTool returns session_history over the runtimes in reg.
func NewHistoryTool(reg *Registry) *HistoryTool { return &HistoryTool{reg: reg} }

// Name implements tools.Tool.
func (*HistoryTool) Name() string { return "session_history" }

// Spec implements tools.Tool.
func (*HistoryTool) Spec() model.ToolSpec {
	return model.ToolSpec{Name: "session_history",
		Description: "Read this session's saved threads without loading them all into context. action threads lists threads, newest first; stats reports a thread and its predecessor; expand returns one original message by index. Omitting thread_id selects the active thread; older threads are read-only.",
		Schema: json.RawMessage(`{"type":"object","properties":{` +
			`"action":{"type":"string","enum":["threads","stats","expand"]},` +
			`"session_id":{"type":"string","description":"defaults to this session"},` +
			`"thread_id":{"type":"string","description":"defaults to the active thread"},` +
			`"index":{"type":"integer","description":"message index for expand, from 0"}},"required":["action"]}`)}
}

type historyInput struct {
	Action    string `json:"action"`
	SessionID string `json:"session_id"`
	ThreadID  string `json:"thread_id"`
	Index     *int   `json:"index"`
}

// Call implements tools.Tool.
func (h *HistoryTool) Call(ctx context.Context, owner string, input json.RawMessage) tools.Result {
	var in historyInput
	if err := json.Unmarshal(input, &in); err != nil {
		return tools.Errorf("session_history: bad input: %v", err)
	}
	var out string
	err := withSession(ctx, h.reg, owner, in.SessionID, func(s *Session) error {
		var th *Thread
		if in.Action != "threads" {
			th = s.Latest()
			if in.ThreadID != "" {
				if th = s.Thread(in.ThreadID); th == nil {
					return fmt.Errorf("session %s has no thread %q", s.ID, in.ThreadID)
				}
			}
		}
		switch in.Action {
		case "threads":
			var b strings.Builder
			fmt.Fprintf(&b, "session %s: %d threads, newest first\n", s.ID, len(s.Threads))
			for i := len(s.Threads) - 1; i >= 0; i-- {
				t := s.Threads[i]
				b.WriteString(threadLine(s, t))
			}
			out = b.String()
		case "stats":
			var b strings.Builder
			b.WriteString(threadLine(s, th))
			if p := s.Thread(th.Predecessor); p != nil {
				b.WriteString("predecessor: ")
				b.WriteString(threadLine(s, p))
			}
			out = b.String()
		case "expand":
			if in.Index == nil || *in.Index < 0 || *in.Index >= len(th.Entries) {
				return fmt.Errorf("index must be between 0 and %d for thread %s", len(th.Entries)-1, th.ID)
			}
			e := th.Entries[*in.Index]
			out = fmt.Sprintf("thread %s message %d (%s):\n%s", th.ID, *in.Index, e.Message.Role, render(e.Message))
		default:
			return fmt.Errorf("unknown action %q; use threads, stats or expand", in.Action)
		}
		return nil
	})
	if err != nil {
		return tools.Errorf("session_history: %v", err)
	}
	return tools.Result{Text: out}
}

func threadLine(s *Session, t *Thread) string {
	state := "read-only"
	if t == s.Latest() {
		state = "active"
	}
	reason := t.Reason
	if reason == "" {
		reason = "first"
	}
	line := fmt.Sprintf("- %s (%s, %s): %d messages, created %s, prompt %d tokens", t.ID, state, reason, len(t.Entries), t.Created.Format("2006-01-02 15:04:05Z07:00"), t.Usage.Input)
	if t.Predecessor != "" {
		line += ", predecessor " + t.Predecessor
	}
	return line + "\n"
}

// render shows a message as text for the model: every part, tool results in full.
func render(m model.Message) string {
	var b strings.Builder
	for _, p := range m.Parts {
		switch p.Kind {
		case model.KindText:
			b.WriteString(p.Text + "\n")
		case model.KindSystem:
			fmt.Fprintf(&b, "[hidden %s note] %s\n", p.System, p.Text)
		case model.KindThinking:
			if p.Thinking != nil && p.Thinking.Text != "" {
				fmt.Fprintf(&b, "[thinking] %s\n", p.Thinking.Text)
			}
		case model.KindToolCall:
			fmt.Fprintf(&b, "[tool call %s %s] %s\n", p.ToolCall.ID, p.ToolCall.Name, p.ToolCall.Input)
		case model.KindToolResult:
			r := p.ToolResult
			status := "ok"
			switch {
			case r.Unknown:
				status = "outcome unknown"
			case r.IsError:
				status = "error"
			}
			fmt.Fprintf(&b, "[tool result %s, %s] %s\n", r.CallID, status, r.Text)
			if len(r.Images) > 0 {
				fmt.Fprintf(&b, "(%d images)\n", len(r.Images))
			}
		case model.KindImage:
			b.WriteString("[image]\n")
		}
	}
	return b.String()
}

// withSession calls f with the caller's session (under its document's lock) or, for another
// id, with a copy loaded from the store.
func withSession(ctx context.Context, reg *Registry, owner, id string, f func(*Session) error) error {
	rt := reg.lookup(owner)
	if rt == nil {
		return fmt.Errorf("no session is bound to this runtime")
	}
	if id == "" || id == rt.doc.id {
		var err error
		rt.View(func(s *Session) { err = f(s) })
		return err
	}
	s, err := rt.store.Load(ctx, id)
	if err != nil {
		return err
	}
	return f(s)
}

// MetaTool is the root-only session_meta tool: the session id, title, links and
// scratchpad, and a listing of the store's sessions.
type MetaTool struct{ reg *Registry }

// NewMetaTool returns session_meta over the runtimes in reg.
func NewMetaTool(reg *Registry) *MetaTool { return &MetaTool{reg: reg} }

// Name implements tools.Tool.
func (*MetaTool) Name() string { return "session_meta" }

// Spec implements tools.Tool.
func (*MetaTool) Spec() model.ToolSpec {
	return model.ToolSpec{Name: "session_meta",
		Description: "This session's metadata. get returns the id, title, links and scratchpad; set_title sets the title; edit_scratchpad replaces the scratchpad (scratchpad) or one exact passage of it (old_str, new_str); list lists the sessions of this profile, newest first (include_hidden adds hidden child sessions).",
		Schema: json.RawMessage(`{"type":"object","properties":{` +
			`"action":{"type":"string","enum":["get","set_title","edit_scratchpad","list"]},` +
			`"title":{"type":"string"},"scratchpad":{"type":"string"},"old_str":{"type":"string"},"new_str":{"type":"string"},` +
			`"include_hidden":{"type":"boolean"}},"required":["action"]}`)}
}

type metaInput struct {
	Action        string  `json:"action"`
	Title         *string `json:"title"`
	Scratchpad    *string `json:"scratchpad"`
	OldStr        *string `json:"old_str"`
	NewStr        *string `json:"new_str"`
	IncludeHidden bool    `json:"include_hidden"`
}

// Call implements tools.Tool.
func (m *MetaTool) Call(ctx context.Context, owner string, input json.RawMessage) tools.Result {
	var in metaInput
	if err := json.Unmarshal(input, &in); err != nil {
		return tools.Errorf("session_meta: bad input: %v", err)
	}
	rt := m.reg.lookup(owner)
	if rt == nil {
		return tools.Errorf("session_meta: no session is bound to this runtime")
	}
	switch in.Action {
	case "get":
		var out []byte
		rt.View(func(s *Session) {
			out, _ = json.MarshalIndent(map[string]any{"session_id": s.ID, "title": s.Title, "links": s.Links, "scratchpad": s.Scratchpad,
				"parent_session": s.Parent, "archived": s.Archived, "active_thread": s.Latest().ID, "cwd": rt.dir}, "", "  ")
		})
		return tools.Result{Text: string(out)}
	case "set_title":
		if in.Title == nil || strings.TrimSpace(*in.Title) == "" {
			return tools.Errorf("session_meta: set_title needs a non-empty title")
		}
		title := Title(*in.Title)
		if title == "" {
			return tools.Errorf("session_meta: set_title needs a non-empty title")
		}
		if err := rt.Update(ctx, func(s *Session) { s.Title = title }); err != nil {
			return tools.Errorf("session_meta: %v", err)
		}
		return tools.Result{Text: "title set to " + title}
	case "edit_scratchpad":
		var editErr error
		err := rt.Update(ctx, func(s *Session) {
			switch {
			case in.Scratchpad != nil:
				s.Scratchpad = *in.Scratchpad
			case in.OldStr != nil && in.NewStr != nil:
				if n := strings.Count(s.Scratchpad, *in.OldStr); n != 1 || *in.OldStr == "" {
					editErr = fmt.Errorf("old_str occurs %d times in the scratchpad; it must occur exactly once", n)
					return
				}
				s.Scratchpad = strings.Replace(s.Scratchpad, *in.OldStr, *in.NewStr, 1)
			default:
				editErr = fmt.Errorf("edit_scratchpad needs scratchpad, or old_str and new_str")
			}
		})
		if editErr != nil {
			return tools.Errorf("session_meta: %v", editErr)
		}
		if err != nil {
			return tools.Errorf("session_meta: %v", err)
		}
		return tools.Result{Text: "scratchpad saved"}
	case "list":
		list, err := rt.store.List(ctx)
		if err != nil {
			return tools.Errorf("session_meta: %v", err)
		}
		var b strings.Builder
		for _, s := range list {
			if s.Hidden && !in.IncludeHidden {
				continue
			}
			fmt.Fprintf(&b, "- %s %q created %s", s.ID, s.Title, s.Created.Format("2006-01-02 15:04Z07:00"))
			if s.Hidden {
				b.WriteString(" hidden")
			}
			if s.Archived {
				b.WriteString(" archived")
			}
			if s.Parent != "" {
				b.WriteString(" parent " + s.Parent)
			}
			b.WriteString("\n")
		}
		if b.Len() == 0 {
			return tools.Result{Text: "no sessions"}
		}
		return tools.Result{Text: b.String()}
	}
	return tools.Errorf("session_meta: unknown action %q; use get, set_title, edit_scratchpad or list", in.Action)
}

// The result of a call whose run was stopped while it ran: its outcome is unknown, and
// what it printed until then is kept, for the model and for the person who saw it.
const (
	stoppedText = "the call was cancelled while running; it may have taken effect, so inspect its effects before retrying"
	printedMark = ". Its output until then:\n"
)

func stoppedResult(callID, printed string) model.ToolResult {
	res := model.ToolResult{CallID: callID, Unknown: true, Stopped: true, Text: stoppedText}
	if strings.TrimSpace(printed) != "" {
		res.Text += printedMark + printed
	}
	return res
}

// PrintedBeforeStop returns what a stopped call ([model.ToolResult.Stopped]) printed
// before the stop, from its result's text; "" when it printed nothing.
func PrintedBeforeStop(text string) string {
	_, printed, _ := strings.Cut(text, printedMark)
	return printed
}
