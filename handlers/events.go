package handlers

import (
	"context"
	"io"
	"net/http"
	"time"

	"github.com/a-h/templ"
	"github.com/go-chi/chi/v5"

	"myco.dev/agent/model"
	"myco.dev/internal/humanize"
	"myco.dev/internal/web"
	"myco.dev/sessions"
	"myco.dev/views"
)

// events streams a session's changes to its page as htmx partials. The cursor is the
// Last-Event-ID header of a reconnecting tab, else ?after= from the page: the tab gets
// exactly the changes it missed, or, when they are no longer kept (or the server
// restarted), one re-render of the transcript. A ping event every few seconds tells the
// page the stream is alive. Closing the stream never stops the session's work.
func (s *server) events(w http.ResponseWriter, r *http.Request) error {
	id := chi.URLParam(r, "id")
	sess, _, err := s.Sessions.Snapshot(r.Context(), id)
	if err != nil {
		return err
	}
	after := r.Header.Get("Last-Event-ID")
	if after == "" {
		after = r.URL.Query().Get("after")
	}
	if after == "" {
		after = "unknown" // a stream without a cursor starts from a re-render
	}
	sub := s.Sessions.Subscribe([]string{id}, after)
	defer sub.Close()
	defer s.streaming("page")()
	sse, err := web.StartSSE(w, r)
	if err != nil {
		return nil // the client is gone
	}
	ctx := r.Context()
	ev := &eventRenderer{s: s, id: id, cwd: sess.Cwd}
	_, ev.md = s.live(id, sess.Cwd, after) // the page shows the response up to its cursor
	for {
		us, ok := nextOrPing(ctx, sub, s.Ping, func() error { return sse.Send("", views.EventPing, "") })
		if !ok {
			return nil
		}
		if err := ev.render(ctx, sse, us, sub.IDOf); err != nil {
			s.Log.Warn("render session events", "session_id", id, "err", err)
			sse.Discard()
			d := sse.Begin(sub.Cursor(), views.EventUpdate)
			if ev.reset(ctx, d, sub.Cursor()) != nil {
				return nil
			}
			d.End()
		}
		if sse.Flush() != nil || !sse.Pace(ctx) {
			return nil
		}
	}
}

// eventRenderer turns a session's updates into the partials that bring its page up to
// date. Every swap it makes matches what a fresh render of the page shows.
type eventRenderer struct {
	s   *server
	id  string
	cwd string // the session's directory, which its links open

	// The snapshot of the batch being rendered, taken when first needed.
	sess *sessions.Session
	st   sessions.Status
	// md is the response streaming now, as the page has it: its settled parts rendered,
	// its open end as text. nil when nothing streams.
	md *views.LiveMarkdown
}

func (e *eventRenderer) snapshot(ctx context.Context) (*sessions.Session, sessions.Status, error) {
	if e.sess == nil {
		sess, st, err := e.s.Sessions.Snapshot(ctx, e.id)
		if err != nil {
			return nil, st, err
		}
		e.sess, e.st = sess, st
	}
	return e.sess, e.st, nil
}

// render renders a batch of updates as partials straight into the stream's events, one
// event per update, in order; id names an update's event. One update per event: htmx
// resolves every target of an event before it swaps any, so two outerHTML swaps of one
// element (a tool's finish, then its saved result) in one event would leave the first. An
// update that changes nothing on the page adds no event; on an error, the events appended
// are the caller's to discard.
func (e *eventRenderer) render(ctx context.Context, sse *web.SSE, us []sessions.Update, id func(uint64) string) error {
	e.sess = nil
	var b *web.EventData
	part := func(id string, swap views.Swap, c templ.Component) error {
		return views.Partial(id, swap, c).Render(ctx, b)
	}
	clearLive := func() error {
		e.md = nil
		return part(views.IDLive, views.SwapInner, views.Live(views.LiveView{}))
	}
	status := func() error {
		sess, st, err := e.snapshot(ctx)
		if err != nil {
			return err
		}
		if err := part(views.IDStatus, views.SwapInner, views.Status(e.s.status(sess, st))); err != nil {
			return err
		}
		if err := part(views.IDQueue, views.SwapInner, views.Queue(e.s.queue(sess, st))); err != nil {
			return err
		}
		row := views.SessionRow{ID: sess.ID, URL: e.s.sessionURL(sess.ID), Title: sess.Title, Busy: st.Busy, Current: true, State: e.s.Sessions.State(sess, st)}
		return part(views.SidebarID(sess.ID), views.SwapOuter, views.SidebarItem(row))
	}
	for _, u := range us {
		b = sse.Begin(id(u.Seq), views.EventUpdate)
		var err error
		switch u.Type {
		case sessions.UpdateReset, sessions.UpdateCompacted, sessions.UpdateRewound:
			err = e.reset(ctx, b, id(u.Seq))
		case sessions.UpdateTextDelta:
			err = e.text(b, ctx, u.Text)
		case sessions.UpdateThinkingDelta:
			err = part(views.IDLiveThinking, views.SwapAppend, views.Text(u.Text))
		case sessions.UpdateAccepted, sessions.UpdateCheckpoint:
			err = e.entries(ctx, b, u)
			if err == nil && u.Type == sessions.UpdateCheckpoint {
				err = status() // the meter counts the step just saved
			}
		case sessions.UpdateToolProgress:
			err = part(views.ToolOutputID(u.CallID), views.SwapInner, views.ToolOutput(u.Text))
		case sessions.UpdateToolFinished:
			var sess *sessions.Session
			if sess, _, err = e.snapshot(ctx); err != nil {
				break
			}
			t := toolView(e.s.base, e.id, sess.Latest().ID, model.ToolCall{ID: u.CallID, Name: u.Tool, Input: u.Input})
			setResult(&t, model.ToolResult{Text: u.Text, IsError: u.IsError, Unknown: u.Unknown, Stopped: u.Stopped})
			t.Duration = humanize.Duration(time.Duration(u.Duration * float64(time.Second)))
			err = part(views.ToolID(t.CallID), views.SwapOuter, views.ToolCard(t))
		case sessions.UpdateChanges:
			err = part(views.TurnChangesID(u.Thread, u.Index), views.SwapOuter, views.TurnChangesSlot(*e.s.turnChangesSlot(e.id, u.Thread, u.Index)))
			if err == nil {
				err = e.s.changesFollow(e.id, u.Thread, u.Index).Render(ctx, b)
			}
		case sessions.UpdateNotice, sessions.UpdateResumed:
			err = part(views.IDLiveNotes, views.SwapAppend, views.Note("notice", u.Text))
		case sessions.UpdateSaveFailed:
			err = part(views.IDLiveNotes, views.SwapAppend, views.Note("error", "A save failed, so this session's work is stopped: "+u.Error))
		case sessions.UpdateHost:
			err = part(views.IDLiveNotes, views.SwapAppend, views.Note("notice", hostNote(u)))
			if err == nil {
				err = status()
			}
		case sessions.UpdateStep, sessions.UpdateState:
			err = status()
			if err == nil && u.Type == sessions.UpdateState && u.Busy != nil && !*u.Busy {
				// A turn's Changes page that is open says the turn ended.
				var sess *sessions.Session
				if sess, _, err = e.snapshot(ctx); err == nil {
					th := sess.Latest()
					for i := len(th.Entries) - 1; i >= 0; i-- {
						if en := th.Entries[i]; (en.AcceptedAt != nil || en.Continuation) && !en.Rejected {
							err = e.s.changesFollow(e.id, th.ID, i).Render(ctx, b)
							break
						}
					}
				}
			}
		case sessions.UpdateApprovalRequested, sessions.UpdateApprovalResolved:
			if u.Child == "" {
				// The call's card says it waits for the person, then what the document
				// says of it: running, or its result (a call answered after a restart).
				var sess *sessions.Session
				var st sessions.Status
				if sess, st, err = e.snapshot(ctx); err != nil {
					break
				}
				if th := sess.Thread(u.Thread); th != nil {
					t := e.s.projector(e.id, th).state(sess, st).tool(model.ToolCall{ID: u.CallID, Name: u.Tool, Input: u.Input})
					if err = part(views.ToolID(t.CallID), views.SwapOuter, views.ToolCard(t)); err != nil {
						break
					}
				}
			}
			err = part(views.IDApprovals, views.SwapInner, views.ApprovalsLoader(e.s.sessionURL(e.id)+"approvals"))
			if err == nil {
				err = status() // the state: a pending approval needs you, in the tab's title too
			}
		case sessions.UpdateMeta:
			var sess *sessions.Session
			if sess, _, err = e.snapshot(ctx); err == nil {
				err = part(views.IDTitle, views.SwapInner, views.Title(sess.Title))
			}
			if err == nil {
				err = part(views.IDPageTitle, views.SwapInner, views.Text(views.PageTitle(sessionTitle(sess.Title))))
			}
			if err == nil {
				err = status() // the queue, and the sidebar's row with the title
			}
			if err == nil {
				err = part(views.IDApprovals, views.SwapInner, views.ApprovalsLoader(e.s.sessionURL(e.id)+"approvals")) // the mode
			}
		case sessions.UpdateDone, sessions.UpdateError, sessions.UpdateCancelled:
			err = e.end(ctx, b, u, clearLive)
		}
		switch {
		case err != nil:
			return err
		case b.Len() == 0:
			b.Discard()
		default:
			b.End()
		}
	}
	return nil
}

// entries renders the entries an accepted input or a checkpoint made durable: a new
// message goes at the end of the transcript; tool results re-render the cards of the
// calls they answer. The live region, whose text is now saved, is emptied.
func (e *eventRenderer) entries(ctx context.Context, b io.Writer, u sessions.Update) error {
	sess, st, err := e.snapshot(ctx)
	if err != nil {
		return err
	}
	th := sess.Latest()
	if th.ID != u.Thread {
		return nil // an earlier thread: the page moved on with a reset
	}
	p := e.s.projector(sess.ID, th).state(sess, st)
	p.children, p.cwd = e.s.childIDs(ctx, sess.ID), e.cwd
	if e.md != nil {
		// The saved answer is the streamed one: its HTML is the parts already rendered.
		e.s.md.put(e.md.Text(), e.s.mdOptionsFor(e.id, e.cwd), e.md.Whole())
	}
	for i := u.Index; i < u.Count && i < len(th.Entries); i++ {
		msg := th.Entries[i].Message
		if results := toolResults(msg); len(results) > 0 {
			for _, r := range results {
				if call, ok := findCall(th, i, r.CallID); ok {
					t := p.tool(call)
					if err := views.Partial(views.ToolID(t.CallID), views.SwapOuter, views.ToolCard(t)).Render(ctx, b); err != nil {
						return err
					}
				}
			}
			continue
		}
		if m, ok := p.message(i); ok {
			if err := appendMessage(ctx, b, m); err != nil {
				return err
			}
		}
	}
	e.md = nil
	return views.Partial(views.IDLive, views.SwapInner, views.Live(views.LiveView{})).Render(ctx, b)
}

// text renders a text delta: the parts of the response that settle with it are rendered
// once and appended, and the open end shown grows (its text, or the code of the code block
// it begins), or is replaced by what is still open after them. A window's fragment is as
// large as what settled in it, never the answer.
func (e *eventRenderer) text(b io.Writer, ctx context.Context, delta string) error {
	if e.md == nil {
		e.md = views.NewLiveMarkdown(e.s.mdOptionsFor(e.id, e.cwd))
	}
	u := e.md.Delta(delta)
	if u.Settled.String() != "" {
		if err := views.Partial(views.IDLiveMarkdown, views.SwapAppend, u.Settled).Render(ctx, b); err != nil {
			return err
		}
	}
	switch {
	case u.Tail != nil:
		return views.Partial(views.IDLiveTail, views.SwapOuter, views.LiveTail(*u.Tail)).Render(ctx, b)
	case u.Code != "":
		return views.Partial(views.IDLiveCode, views.SwapAppend, views.Text(u.Code)).Render(ctx, b)
	case u.Text != "":
		return views.Partial(views.IDLiveTail, views.SwapAppend, views.Text(u.Text)).Render(ctx, b)
	}
	return nil
}

// appendMessage renders m at the end of the transcript, in place of the same message if
// the page has it already. A page takes its events' cursor before its snapshot, so a save
// that lands between the two is both in the page and replayed by its stream: without the
// delete it showed twice. (A missing target is no error: the partial is skipped.)
func appendMessage(ctx context.Context, b io.Writer, m views.MessageView) error {
	if err := views.Partial(m.DOMID, views.SwapDelete, templ.NopComponent).Render(ctx, b); err != nil {
		return err
	}
	return views.Partial(views.IDMessages, views.SwapAppend, views.Message(m)).Render(ctx, b)
}

// toolResults returns the tool results of a message.
func toolResults(m model.Message) []*model.ToolResult {
	var out []*model.ToolResult
	for _, p := range m.Parts {
		if p.Kind == model.KindToolResult && p.ToolResult != nil {
			out = append(out, p.ToolResult)
		}
	}
	return out
}

// findCall finds call id among the entries of th before entry i, newest first.
func findCall(th *sessions.Thread, i int, id string) (model.ToolCall, bool) {
	for j := i - 1; j >= 0; j-- {
		for _, c := range th.Entries[j].Message.ToolCalls() {
			if c.ID == id {
				return c, true
			}
		}
	}
	return model.ToolCall{}, false
}

// end renders how a job ended: the turn's end note, as a fresh render places it, or, for
// a job that ended before a turn began, a note in the live region.
func (e *eventRenderer) end(ctx context.Context, b io.Writer, u sessions.Update, clearLive func() error) error {
	sess, st, err := e.snapshot(ctx)
	if err != nil {
		return err
	}
	th := sess.Latest()
	p := e.s.projector(sess.ID, th).state(sess, st)
	ends := th.Ends()
	if u.Type != sessions.UpdateDone && len(ends) > 0 && ends[len(ends)-1].After == len(th.Entries) && u.Job == sessions.JobTurn {
		if err := clearLive(); err != nil {
			return err
		}
		if m, ok := p.end(len(ends)-1, ends[len(ends)-1]); ok {
			return appendMessage(ctx, b, m)
		}
		return nil
	}
	if err := clearLive(); err != nil {
		return err
	}
	switch {
	case u.Type == sessions.UpdateError:
		return views.Partial(views.IDLiveNotes, views.SwapAppend, views.Note("error", jobName(u.Job)+" failed. "+sentence(u.Error))).Render(ctx, b)
	case u.Type == sessions.UpdateCancelled && u.Job == sessions.JobCompact:
		return views.Partial(views.IDLiveNotes, views.SwapAppend, views.Note("cancelled", "The compaction was stopped.")).Render(ctx, b)
	}
	return nil
}

func jobName(job string) string {
	if job == sessions.JobCompact {
		return "The compaction"
	}
	return "The turn"
}

func hostNote(u sessions.Update) string {
	switch {
	case u.State == "attached" && u.Attaches > 1:
		return "host " + u.Host + ": re-attached"
	case u.State == "attached":
		return "host " + u.Host + ": attached (" + u.Text + ")"
	}
	return "host " + u.Host + ": " + u.State + ": " + oneLine(u.Error, 300)
}

// reset re-renders the whole transcript, the head and the status: what a tab gets when it
// missed more than the server keeps, after a server restart, or when the active thread
// changed. It writes them to w.
func (e *eventRenderer) reset(ctx context.Context, w io.Writer, cursor string) error {
	e.sess = nil
	sess, st, err := e.snapshot(ctx)
	if err != nil {
		return err
	}
	v, err := e.s.sessionView(ctx, sess, st, "")
	if err != nil {
		return err
	}
	e.md = e.s.withLive(&v, e.cwd, cursor)
	for _, p := range []templ.Component{
		views.Partial(views.IDTranscript, views.SwapInner, views.Transcript(v)),
		views.Partial(views.IDSessionHead, views.SwapOuter, views.SessionHead(v)),
		views.Partial(views.IDStatus, views.SwapInner, views.Status(v.Status)),
		views.Partial(views.IDApprovals, views.SwapInner, views.ApprovalsLoader(e.s.sessionURL(e.id)+"approvals")),
	} {
		if err := p.Render(ctx, w); err != nil {
			return err
		}
	}
	return nil
}
