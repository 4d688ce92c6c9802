package handlers

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"myco.dev/agent/model"
	"myco.dev/internal/web"
	"myco.dev/sessions"
	"myco.dev/views"
)

// The everyday actions of a session page: rename it in place, copy a message's text, and
// export the whole session as Markdown.

// maxTitle bounds a title set from the page, in bytes.
const maxTitle = 200

// rename sets the session's title from form field title and answers the heading's new
// content; other tabs learn it from the session's stream.
func (s *server) rename(w http.ResponseWriter, r *http.Request) error {
	if err := form(w, r); err != nil {
		return err
	}
	id := chi.URLParam(r, "id")
	title := strings.Join(strings.Fields(r.PostForm.Get("title")), " ")
	if len(title) > maxTitle {
		return httpError(http.StatusBadRequest, fmt.Sprintf("A title is at most %d bytes; this one is %d.", maxTitle, len(title)))
	}
	if err := s.Sessions.SetTitle(r.Context(), id, title); err != nil {
		return err
	}
	if !htmx(r) {
		web.Redirect(w, r, s.sessionURL(id), http.StatusSeeOther)
		return nil
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	return views.Title(title).Render(r.Context(), w)
}

// rawMessage serves one message as Markdown, as the page shows it, for Copy: a user's text,
// or an answer's text with each tool call it made and what the call printed.
func (s *server) rawMessage(w http.ResponseWriter, r *http.Request) error {
	sess, _, err := s.Sessions.Snapshot(r.Context(), chi.URLParam(r, "id"))
	if err != nil {
		return err
	}
	th := sess.Thread(chi.URLParam(r, "thread"))
	i, err := strconv.Atoi(chi.URLParam(r, "entry"))
	if th == nil || err != nil || i < 0 || i >= len(th.Entries) {
		return errNotFound
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	m := th.Entries[i].Message
	text := visibleText(m)
	if m.Role == model.Assistant {
		var b strings.Builder
		answerMarkdown(&b, m, threadResults(th))
		text = strings.TrimSpace(b.String())
	}
	_, err = w.Write([]byte(text))
	return err
}

// visibleText is the text of m that a person sees: its text parts, never its hidden
// system parts.
func visibleText(m model.Message) string {
	var b strings.Builder
	for _, p := range m.Parts {
		if p.Kind == model.KindText && strings.TrimSpace(p.Text) != "" {
			if b.Len() > 0 {
				b.WriteString("\n\n")
			}
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// threadResults are the tool results of th by the id of the call they answer.
func threadResults(th *sessions.Thread) map[string]*model.ToolResult {
	out := map[string]*model.ToolResult{}
	for _, e := range th.Entries {
		for _, r := range toolResults(e.Message) {
			out[r.CallID] = r
		}
	}
	return out
}

// export serves the session as one Markdown document: its title, then each thread's
// messages in order (the user's text, the answers, each tool call with its input and
// output in a fenced block), as a download.
func (s *server) export(w http.ResponseWriter, r *http.Request) error {
	sess, _, err := s.Sessions.Snapshot(r.Context(), chi.URLParam(r, "id"))
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "text/markdown; charset=utf-8")
	w.Header().Set("Content-Disposition", `attachment; filename="myco-`+sess.ID+`.md"`)
	w.Header().Set("Cache-Control", "no-store")
	_, err = w.Write([]byte(exportMarkdown(sess)))
	return err
}

// exportMarkdown writes sess as Markdown.
func exportMarkdown(sess *sessions.Session) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n", orUntitled(sess.Title, sess.ID))
	fmt.Fprintf(&b, "Session `%s`, created %s.\n", sess.ID, sess.Created.UTC().Format(time.RFC3339))
	for _, th := range sess.Threads {
		if len(sess.Threads) > 1 {
			fmt.Fprintf(&b, "\n---\n\n## Thread %s", th.ID)
			if th.Reason != "" {
				fmt.Fprintf(&b, " (%s)", th.Reason)
			}
			b.WriteString("\n")
		}
		results := threadResults(th)
		calls := map[string]bool{}
		for i, e := range th.Entries {
			if i == 0 && th.Reason == "compaction" {
				fmt.Fprintf(&b, "\n### Summary of the earlier conversation\n\n%s\n", sessions.CompactedSummary(e.Message.Text()))
				continue
			}
			exportEntry(&b, e, results, calls)
		}
	}
	return b.String()
}

// exportEntry writes one entry: a user's text, or an answer with its tool calls, each
// followed by its result. calls gathers the calls written, whose results are then not
// written again where they were saved; a result whose call is not in the thread (a fork's
// first, say) is written there.
func exportEntry(b *strings.Builder, e sessions.Entry, results map[string]*model.ToolResult, calls map[string]bool) {
	m := e.Message
	switch m.Role {
	case model.User:
		if t := visibleText(m); t != "" {
			when := ""
			if e.AcceptedAt != nil {
				when = " · " + e.AcceptedAt.UTC().Format(time.RFC3339)
			}
			fmt.Fprintf(b, "\n### You%s\n\n%s\n", when, t)
		}
		for _, p := range m.Parts {
			if r := p.ToolResult; r != nil && !calls[r.CallID] {
				fmt.Fprintf(b, "\n%s\n", fence("result of "+r.CallID, "", r.Text))
			}
		}
	case model.Assistant:
		if visibleText(m) != "" || len(m.ToolCalls()) > 0 {
			b.WriteString("\n### myco\n")
		}
		answerMarkdown(b, m, results)
		for _, c := range m.ToolCalls() {
			calls[c.ID] = true
		}
	}
}

// answerMarkdown writes an answer's text and tool calls in order, each call with its
// result from results (when it has one).
func answerMarkdown(b *strings.Builder, m model.Message, results map[string]*model.ToolResult) {
	for _, p := range m.Parts {
		switch {
		case p.Kind == model.KindText && strings.TrimSpace(p.Text) != "":
			fmt.Fprintf(b, "\n%s\n", p.Text)
		case p.ToolCall != nil:
			fmt.Fprintf(b, "\n%s\n", toolMarkdown(*p.ToolCall, results[p.ToolCall.ID]))
		}
	}
}

// toolMarkdown is a tool call as a person reads it: a bash command as a shell block, any
// other input as JSON with its characters as written (not encoding/json's \u0026), and
// then what it printed.
func toolMarkdown(c model.ToolCall, r *model.ToolResult) string {
	var out string
	if cmd := bashCommand(c); cmd != "" {
		out = fence(c.Name+" ("+c.ID+")", "sh", cmd)
	} else {
		out = fence("tool call "+c.Name+" ("+c.ID+")", "json", prettyJSON(c.Input))
	}
	if r != nil {
		text := r.Text
		if r.Stopped {
			text = sessions.PrintedBeforeStop(text)
		}
		out += "\n\n" + fence("output", "", text)
	}
	return out
}

// fence puts text in a fenced code block of language lang whose fence no line of text can
// close, under a caption.
func fence(caption, lang, text string) string {
	marker := "```"
	for strings.Contains(text, marker) {
		marker += "`"
	}
	return "*" + caption + "*\n\n" + marker + lang + "\n" + strings.TrimRight(text, "\n") + "\n" + marker
}
