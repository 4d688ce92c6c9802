package handlers

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"myco.dev/agent/model"
	"myco.dev/internal/humanize"
	"myco.dev/sessions"
	"myco.dev/views"
)

// The transcript projection: a thread's stored entries as the messages a person reads.
// Tool results are shown in the cards of the calls they answer, hidden system parts
// (runtime facts, prelude notes) are left out, and turn ends other than an answer become
// notes in place.

// outputShown bounds the tool output a card shows: the head and the tail of this many
// bytes; "show all" loads the rest.
const outputShown = 8 << 10

// projector renders the messages of one thread of one session.
type projector struct {
	s      *server
	sess   string // session id
	thread *sessions.Thread
	// results maps call ids to their results and the entry that holds them.
	results map[string]resultAt
	open    bool // the thread's last turn has not ended: unanswered calls are running
	// children are the session's child sessions: a call whose output names one links to it.
	children []string
	// retry: the thread is the session's latest, nothing runs on it and its last turn
	// ended without an answer, so its end note offers Retry.
	retry bool
	// edit: the thread is the session's active one, so a user's message offers Edit.
	edit bool
	// snapshots: the session's files are captured, so a turn's input shows its changes.
	snapshots bool
	// cwd is the session's directory: its answers' relative links and path:line
	// references open its directory viewer. "" links none.
	cwd string
	// waiting are the open calls that wait for the person's approval.
	waiting map[string]bool
}

type resultAt struct {
	res   *model.ToolResult
	entry int
	part  int
}

func (s *server) projector(sessID string, th *sessions.Thread) *projector {
	p := &projector{s: s, sess: sessID, thread: th, results: map[string]resultAt{}, open: th.Interrupted()}
	for i, e := range th.Entries {
		for j, part := range e.Message.Parts {
			if part.Kind == model.KindToolResult && part.ToolResult != nil {
				p.results[part.ToolResult.CallID] = resultAt{res: part.ToolResult, entry: i, part: j}
			}
		}
	}
	return p
}

// state sets what the projector shows of what the session does now: a turn left open shows
// its unanswered calls running while a job runs on it (here or in another process), and as
// cut off when none does; the latest thread's last turn, when it ended without an answer
// and nothing runs, offers Retry.
func (p *projector) state(sess *sessions.Session, st sessions.Status) *projector {
	busy := st.Busy || st.Elsewhere != ""
	p.open = p.thread.Interrupted() && busy
	p.edit = p.thread == sess.Latest() && !sess.Archived
	for _, a := range sess.Approvals {
		if p.waiting == nil {
			p.waiting = map[string]bool{}
		}
		p.waiting[a.ID] = true
	}
	p.snapshots = p.s.Sessions.CapturesFiles()
	switch st.LastTurn.Status {
	case sessions.TurnStopped, sessions.TurnFailed, sessions.TurnRejected, sessions.TurnInterrupted:
		p.retry = p.thread == sess.Latest() && !busy && !sess.Archived && st.Stopped == nil
	}
	return p
}

// messages renders entries [from, to) with the turn ends among them.
func (p *projector) messages(from, to int) []views.MessageView {
	ends := p.thread.Ends()
	var out []views.MessageView
	for i := from; i < to; i++ {
		if m, ok := p.message(i); ok {
			out = append(out, m)
		}
		for k, end := range ends {
			if end.After == i+1 {
				if m, ok := p.end(k, end); ok {
					out = append(out, m)
				}
			}
		}
	}
	if to == len(p.thread.Entries) && p.thread.Interrupted() && !p.open {
		out = append(out, p.interrupted())
	}
	return out
}

// message renders entry i, or reports false for an entry that shows as nothing of its own
// (tool results, which show in their calls' cards).
func (p *projector) message(i int) (views.MessageView, bool) {
	e := p.thread.Entries[i]
	m := views.MessageView{DOMID: views.MessageID(p.thread.ID, i), Role: string(e.Message.Role)}
	if e.AcceptedAt != nil {
		m.Time, m.ISO = e.AcceptedAt.Local().Format("Jan 2 15:04"), e.AcceptedAt.Format(time.RFC3339)
	}
	switch {
	case e.Message.Role == model.User && i == 0 && p.thread.Reason == "compaction":
		m.Role = "summary"
		m.Blocks = append(m.Blocks, views.Block{Note: "The conversation so far was compacted; this thread starts from its summary.", NoteKind: "notice"})
		if t := sessions.CompactedSummary(e.Message.Text()); t != "" {
			m.Blocks = append(m.Blocks, views.Block{Markdown: p.markdown(t)})
		}
		return m, true
	case e.Continuation:
		m.Role = "notice"
		m.Blocks = append(m.Blocks, views.Block{Note: continuationNote(e.Message.Text()), NoteKind: "notice"})
		return m, true
	}
	for j, part := range e.Message.Parts {
		switch part.Kind {
		case model.KindText:
			switch {
			case strings.TrimSpace(part.Text) == "":
			case e.Message.Role == model.User && part.Name != "":
				m.Blocks = append(m.Blocks, views.Block{Attached: &views.AttachedView{Name: part.Name,
					Size: byteSize(len(part.Text)), Text: attachedText(part.Text)}})
			case e.Message.Role == model.User:
				// What the user typed, as typed: its line breaks, and its Markdown as text.
				m.Blocks = append(m.Blocks, views.Block{Plain: part.Text})
			default:
				m.Blocks = append(m.Blocks, views.Block{Markdown: p.markdown(part.Text)})
			}
		case model.KindThinking:
			if part.Thinking != nil && part.Thinking.Text != "" {
				m.Blocks = append(m.Blocks, views.Block{Thinking: p.markdown(part.Thinking.Text)})
			}
		case model.KindImage:
			img := &views.ImageView{URL: p.imageURL(i, j, 0), Alt: "attached image"}
			if part.Name != "" {
				img.Alt = "attached image " + part.Name
				m.Blocks = append(m.Blocks, views.Block{Attached: &views.AttachedView{Name: part.Name, Image: img}})
				continue
			}
			m.Blocks = append(m.Blocks, views.Block{Image: img})
		case model.KindToolCall:
			if part.ToolCall != nil {
				t := p.tool(*part.ToolCall)
				m.Blocks = append(m.Blocks, views.Block{Tool: &t})
			}
		}
	}
	if len(m.Blocks) == 0 {
		return m, false
	}
	if note := partialNote(e.Partial); note != "" {
		m.Blocks = append(m.Blocks, views.Block{Note: note, NoteKind: "partial"})
	}
	if p.edit && e.AcceptedAt != nil && e.Message.Role == model.User {
		m.EditURL = fmt.Sprintf("%s/s/%s/edit/%s/%d", p.s.base, p.sess, p.thread.ID, i)
		m.EditText = typed(e.Message)
		if p.snapshots {
			m.Changes = p.s.turnChangesSlot(p.sess, p.thread.ID, i)
		}
	}
	if e.Message.Role == model.Assistant && visibleText(e.Message) != "" {
		m.CopyURL = fmt.Sprintf("%s/s/%s/raw/%s/%d", p.s.base, p.sess, p.thread.ID, i)
	}
	return m, true
}

// typed is the text a user typed of message m: its text parts without attachments.
func typed(m model.Message) string {
	var b strings.Builder
	for _, p := range m.Parts {
		if p.Kind == model.KindText && p.Name == "" {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// partialNote says where an answer that streamed in part (see [sessions.Entry.Partial])
// ended; "" for a whole one.
func partialNote(how string) string {
	switch how {
	case "":
		return ""
	case sessions.PartialStopped:
		return "Stopped here: the rest of this answer was not written."
	case sessions.PartialInterrupted:
		return "The answer broke off here: the process writing it stopped."
	}
	return "The answer broke off here."
}

func continuationNote(text string) string {
	switch {
	case strings.HasPrefix(text, "# Resumption"):
		return "The conversation was compacted automatically; the agent continues from the summary."
	case strings.HasPrefix(text, sessions.RetryPrompt):
		return "Retried: the agent goes on from where the turn stopped."
	}
	first, _, _ := strings.Cut(strings.TrimSpace(text), "\n")
	return "Continued: " + first
}

// end renders the k-th turn end of the thread when it is worth a note: a stop, a failure or
// a rejected request; an answer is its own note. The note says in plain words what happened
// and what to do (the words every front end shows, [sessions.Describe]); the technical
// chain is folded under it. The thread's last end, when it is the session's last turn,
// nothing runs and sending it again can help ([sessions.Retryable]), has a Retry button.
func (p *projector) end(k int, e sessions.TurnEnd) (views.MessageView, bool) {
	m := views.MessageView{DOMID: views.EndID(p.thread.ID, k), Role: "end",
		Time: e.At.Local().Format("15:04:05"), ISO: e.At.Format(time.RFC3339)}
	var b views.Block
	var hint string
	switch e.Status {
	case sessions.TurnCancelled:
		b = views.Block{Note: p.stopNote(e), NoteKind: "cancelled"}
	case sessions.TurnFailed:
		b = views.Block{Note: sentence(e.Error), NoteKind: "error", Detail: e.Detail}
		hint = "Retry sends the turn again."
	case sessions.TurnRejected:
		b = views.Block{Note: sentence(e.Error), NoteKind: "error", Detail: e.Detail}
		hint = "Retry sends the message again as it was."
	default:
		return m, false
	}
	m.Blocks = []views.Block{b}
	last := p.retry && k == len(p.thread.Ends())-1 && e.After >= len(p.thread.Entries)-1
	switch {
	case last && e.Code == "budget_reached":
		// Sending it again as it is stops again at once: the retry raises the budget first.
		m.RetryURL, m.RetryHint, m.RetryBudget = p.s.sessionURL(p.sess)+"retry", "Retry with a higher budget for this session and its children:", true
	case last && sessions.Retryable(e.Code):
		m.RetryURL, m.RetryHint = p.s.sessionURL(p.sess)+"retry", hint
	}
	return m, true
}

// stopNote says how turn end e, a stop, left the turn: a call that was running when it
// stopped may have taken effect; an answer that was streaming was cut off.
func (p *projector) stopNote(e sessions.TurnEnd) string {
	what, where := "Stopped.", "where you stopped it"
	if e.Code == "shutdown" {
		what, where = "The server stopped while this turn ran.", "there"
	}
	if e.After < 1 || e.After > len(p.thread.Entries) {
		return what
	}
	last := p.thread.Entries[e.After-1]
	for _, part := range last.Message.Parts {
		if r := part.ToolResult; part.Kind == model.KindToolResult && r != nil && (r.Stopped || r.Unknown) {
			return what + " A call that was running may have taken effect: check before running it again."
		}
	}
	if last.Partial != "" && last.Message.Role == model.Assistant {
		return what + " The answer above was cut off " + where + "."
	}
	return what
}

// sentence is s as a note starts it: with a capital letter (turn ends saved by older
// versions start lowercase).
func sentence(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	if r == utf8.RuneError {
		return s
	}
	return string(unicode.ToUpper(r)) + s[n:]
}

// interrupted renders the note of a turn the process running it never ended (it crashed,
// or was killed): its running calls have unknown outcomes, and Retry resumes it.
func (p *projector) interrupted() views.MessageView {
	m := views.MessageView{DOMID: views.EndID(p.thread.ID, len(p.thread.Ends())), Role: "end",
		Blocks: []views.Block{{Note: "This turn was cut off: the process running it stopped before it ended. A call that was running may have taken effect: check before running it again.", NoteKind: "error"}}}
	if p.retry {
		m.RetryURL = p.s.sessionURL(p.sess) + "retry"
	}
	return m
}

func (p *projector) markdown(src string) views.MarkdownHTML {
	return p.s.md.render(src, p.s.mdOptionsFor(p.sess, p.cwd))
}

func (p *projector) imageURL(entry, part, n int) string {
	return fmt.Sprintf("%s/s/%s/image/%s/%d/%d/%d", p.s.base, p.sess, p.thread.ID, entry, part, n)
}

// tool renders a call with its result, if it has one.
func (p *projector) tool(c model.ToolCall) views.ToolView {
	t := toolView(p.s.base, p.sess, p.thread.ID, c)
	info, _ := p.thread.Call(c.ID)
	if t.Host == "" {
		t.Host = info.Host
	}
	r, ok := p.results[c.ID]
	switch {
	case !ok && p.open && p.waiting[c.ID]:
		t.Status = "waiting"
	case !ok && p.open:
		t.Status = "running"
	case !ok:
		t.Status = "unknown"
	default:
		setResult(&t, *r.res)
		for n := range r.res.Images {
			t.Images = append(t.Images, views.ImageView{URL: p.imageURL(r.entry, r.part, n), Alt: c.Name + " image"})
		}
		for _, kid := range p.children {
			if strings.Contains(r.res.Text, kid) {
				t.Links = append(t.Links, views.Link{Title: "child session " + kid, URL: p.s.sessionURL(kid)})
			}
		}
	}
	if !info.Started.IsZero() && !info.Finished.IsZero() {
		t.Duration = humanize.Duration(info.Finished.Sub(info.Started))
	}
	return t
}

// toolView is the card of call c without its result.
func toolView(base, sess, thread string, c model.ToolCall) views.ToolView {
	var in map[string]any
	_ = json.Unmarshal(c.Input, &in)
	t := views.ToolView{CallID: c.ID, Name: c.Name, Status: "running",
		FullURL: fmt.Sprintf("%s/s/%s/tool/%s/%s", base, sess, thread, c.ID)}
	t.Host, _ = in["host"].(string)
	str := func(k string) string { v, _ := in[k].(string); return v }
	switch c.Name {
	case "bash":
		// A command reads as a command, not as JSON.
		switch a := str("action"); a {
		case "", "exec":
			t.Summary, t.Command = str("command"), str("command")
		case "start":
			t.Summary, t.Command = "start: "+str("command"), str("command")
		case "write":
			t.Summary = strings.TrimSpace("write to " + str("session_id") + ": " + str("input"))
			t.Input = str("input")
		default:
			t.Summary = strings.TrimSpace(a + " " + str("session_id"))
		}
	case "str_replace_based_edit_tool":
		t.Summary = strings.TrimSpace(str("command") + " " + str("path"))
		t.Diff = editDiff(str("command"), str("path"), in)
	case "view_image":
		t.Summary = str("path")
	default:
		if rest, ok := strings.CutPrefix(c.Name, "mcp__"); ok {
			if server, tool, ok := strings.Cut(rest, "__"); ok {
				t.Name = "mcp " + server + "/" + tool // a tool of an MCP server
			}
		}
		t.Summary = compactJSON(c.Input)
	}
	t.Summary = oneLine(t.Summary, 160)
	if t.Diff == nil && t.Command == "" && t.Input == "" && c.Name != "bash" {
		t.Input = prettyJSON(c.Input)
	}
	return t
}

// setResult puts a result's text and status on a card, as [sessions.ToolOutcome] reads
// them: the head and tail of a long output, with "show all" for the rest. An edit that was
// refused shows the refusal and no diff: only what was applied is a diff.
func setResult(t *views.ToolView, r model.ToolResult) {
	o := sessions.ToolOutcome(t.Name, r)
	t.Status, t.StatusText = o.Status, o.Words
	if t.Status != "ok" {
		t.Diff = nil
	}
	t.Output, t.Cut = headTail(o.Output, outputShown)
}

// withoutBashEnd is a bash call's output without the line that says how it ended (see
// [sessions.BashEndLine]), which the card shows apart: what the command printed.
func withoutBashEnd(text string) string {
	if sessions.BashEndLine(text) == "" {
		return text
	}
	text = strings.TrimRight(text, "\n")
	return text[:strings.LastIndexByte(text, '\n')+1]
}

func headTail(s string, n int) (string, bool) {
	if len(s) <= n {
		return s, false
	}
	head, tail := s[:n/2], s[len(s)-n/2:]
	for len(head) > 0 && !validStart(head[len(head)-1]) {
		head = head[:len(head)-1]
	}
	for len(tail) > 0 && !validStart(tail[0]) {
		tail = tail[1:]
	}
	return fmt.Sprintf("%s\n… %d bytes left out; show all …\n%s", head, len(s)-len(head)-len(tail), tail), true
}

// validStart reports whether byte c can start a UTF-8 sequence.
func validStart(c byte) bool { return c < 0x80 || c >= 0xC0 }

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

func compactJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return unescapeHTML(b.String())
}

func prettyJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if len(raw) == 0 || json.Indent(&b, raw, "", "  ") != nil {
		return string(raw)
	}
	return unescapeHTML(b.String())
}

// unescapeHTML undoes what encoding/json does to &, < and > in the strings of a JSON text
// it wrote (\u0026, \u003c, \u003e), so that a person reads them as the model wrote them.
// An escaped backslash before them ("\\u0026") is left as it is.
func unescapeHTML(s string) string {
	if !strings.Contains(s, `\u00`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		if s[i+1] == 'u' && i+6 <= len(s) {
			if c, ok := htmlEscapes[strings.ToLower(s[i+2:i+6])]; ok {
				b.WriteByte(c)
				i += 5
				continue
			}
		}
		b.WriteString(s[i : i+2]) // an escape of its own, \\ among them
		i++
	}
	return b.String()
}

var htmlEscapes = map[string]byte{"0026": '&', "003c": '<', "003e": '>'}

// bashCommand is the command of a bash call that runs one (exec, start); "" for any other
// call.
func bashCommand(c model.ToolCall) string {
	if c.Name != "bash" {
		return ""
	}
	var in struct{ Action, Command string }
	if json.Unmarshal(c.Input, &in) != nil || in.Action != "" && in.Action != "exec" && in.Action != "start" {
		return ""
	}
	return in.Command
}

// editDiff shows an editor edit as a unified diff: str_replace's old and new text, an
// insert's new lines, a create's whole file.
func editDiff(command, path string, in map[string]any) *views.DiffView {
	str := func(k string) string { v, _ := in[k].(string); return v }
	switch command {
	case "str_replace":
		return views.Diff(path, str("old_str"), str("new_str"))
	case "insert":
		return views.Diff(path, "", str("new_str"))
	case "create":
		return views.Diff(path, "", str("file_text"))
	}
	return nil
}

// attachedText is the file's text of an attached text part: what is inside its fence.
func attachedText(text string) string {
	_, rest, ok := strings.Cut(text, "]\n")
	if !ok {
		return text
	}
	fence := rest[:strings.IndexByte(rest+"\n", '\n')]
	body := strings.TrimPrefix(rest, fence+"\n")
	return strings.TrimSuffix(strings.TrimSuffix(body, fence), "\n")
}

// byteSize says n bytes for a person: 512 B, 1.2 KB, 3.4 MB.
func byteSize(n int) string {
	switch {
	case n < 1000:
		return fmt.Sprintf("%d B", n)
	case n < 1_000_000:
		return fmt.Sprintf("%.1f KB", float64(n)/1000)
	default:
		return fmt.Sprintf("%.1f MB", float64(n)/1_000_000)
	}
}
