package handlers

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"myco.dev/agent/model"
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
		http.Redirect(w, r, s.sessionURL(id), http.StatusSeeOther)
		return nil
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	return views.Title(title).Render(r.Context(), w)
}

// rawMessage serves the text of one message as it was written (its Markdown), for Copy.
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
	_, err = w.Write([]byte(visibleText(th.Entries[i].Message)))
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
		for i, e := range th.Entries {
			if i == 0 && th.Reason == "compaction" {
				fmt.Fprintf(&b, "\n### Summary of the earlier conversation\n\n%s\n", sessions.CompactedSummary(e.Message.Text()))
				continue
			}
			exportEntry(&b, e)
		}
	}
	return b.String()
}

func exportEntry(b *strings.Builder, e sessions.Entry) {
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
			if r := p.ToolResult; r != nil {
				fmt.Fprintf(b, "\n%s\n", fence("result of "+r.CallID, r.Text))
			}
		}
	case model.Assistant:
		wrote := false
		for _, p := range m.Parts {
			switch {
			case p.Kind == model.KindText && strings.TrimSpace(p.Text) != "":
				if !wrote {
					b.WriteString("\n### myco\n")
					wrote = true
				}
				fmt.Fprintf(b, "\n%s\n", p.Text)
			case p.ToolCall != nil:
				fmt.Fprintf(b, "\n%s\n", fence("tool call "+p.ToolCall.Name+" ("+p.ToolCall.ID+")", string(p.ToolCall.Input)))
			}
		}
	}
}

// fence puts text in a fenced code block whose fence no line of text can close, under a
// caption.
func fence(caption, text string) string {
	marker := "```"
	for strings.Contains(text, marker) {
		marker += "`"
	}
	return "*" + caption + "*\n\n" + marker + "\n" + strings.TrimRight(text, "\n") + "\n" + marker
}
