package cli

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"myco.dev/hosts"
	"myco.dev/internal/humanize"
	"myco.dev/sessions"
)

// contextWindow returns the context window of catalog key, 0 when the catalog has no such
// model.
func (c *chatSession) contextWindow(key string) int {
	m, err := c.t.svc.Model(key)
	if err != nil {
		return 0
	}
	return m.ContextWindow
}

// meterReading is the context meter of the current session.
type meterReading struct {
	used, window int
	model        string
	st           sessions.Status
	title        string
	cost         string // what the session cost, as humanize.Cost says it
}

// meter reads the current session's context meter and state.
func (c *chatSession) meter(ctx context.Context) (meterReading, error) {
	sess, st, err := c.t.svc.Snapshot(ctx, c.id)
	if err != nil {
		return meterReading{}, err
	}
	cost := c.t.svc.CostOf(sess)
	return meterReading{used: sess.Latest().ContextUsed(), window: c.contextWindow(st.Model), model: st.Model, st: st, title: sess.Title,
		cost: humanize.Cost(cost.Amount, cost.Known)}, nil
}

// currentModel is the model of the next turn: the current session's, else the one new
// sessions get.
func (c *chatSession) currentModel(ctx context.Context) string {
	if c.id != "" {
		if m, err := c.meter(ctx); err == nil {
			return m.model
		}
	}
	if c.model != "" {
		return c.model
	}
	return c.t.svc.DefaultModel()
}

// modelCmd runs /model: with no key it lists the catalog, the current model marked; with
// one it makes that model the current session's (and new sessions') from the next turn.
func (c *chatSession) modelCmd(ctx context.Context, key string) {
	out := c.t.out
	infos := c.t.svc.Models()
	cur := c.currentModel(ctx)
	if key == "" {
		out.note("models (* marks the one the next turn uses):")
		width := 0
		for _, m := range infos {
			width = max(width, len(m.Key))
		}
		for _, m := range infos {
			mark := " "
			if m.Key == cur {
				mark = "*"
			}
			out.note("%s %-*s  context window %s", mark, width, m.Key, humanize.Thousands(m.ContextWindow))
		}
		return
	}
	var keys []string
	for _, m := range infos {
		keys = append(keys, m.Key)
	}
	if !slices.Contains(keys, key) {
		out.note("myco: unknown model %q; the catalog has %s (see /model)", key, strings.Join(keys, ", "))
		return
	}
	if c.id != "" {
		if err := c.t.svc.SelectModel(ctx, c.id, key); err != nil {
			out.failed(err)
			return
		}
	} else if _, err := c.t.svc.Model(key); err != nil {
		out.failed(err)
		return
	}
	c.model = key
	if key == cur {
		out.note("model %s (unchanged)", key)
		return
	}
	out.note("model %s from the next turn (was %s)", key, cur)
}

// status runs /status: the session, its model and context meter, what it is doing, the
// hosts and the MCP servers.
func (c *chatSession) status(ctx context.Context) {
	out := c.t.out
	if c.id == "" {
		out.note("no session yet: one starts with your next message")
		m := c.currentModel(ctx)
		out.note("model %s · context window %s", m, humanize.Thousands(c.contextWindow(m)))
	} else {
		m, err := c.meter(ctx)
		if err != nil {
			out.failed(err)
			return
		}
		title := m.title
		if title == "" {
			title = "untitled"
		}
		out.note("session %s · %s", c.id, title)
		out.note("model %s · %s · %s", m.model, meterText(m.used, m.window), m.cost)
		switch {
		case m.st.Stopped != nil:
			out.note("stopped: %s", oneLine(m.st.Stopped.Error()))
		case m.st.Busy:
			out.note("busy: %s", m.st.Job)
		case m.st.Elsewhere != "":
			out.note("busy in another process: %s", m.st.Elsewhere)
		default:
			out.note("idle")
		}
	}
	hostsLine := []string{"local"}
	var states []hosts.Status
	if c.o.Hosts != nil {
		states = c.o.Hosts.Statuses()
	}
	for _, h := range states {
		s := h.Alias + " " + string(h.State)
		if h.Err != "" {
			s += fmt.Sprintf(" (%s)", summarize(h.Err, 80))
		}
		hostsLine = append(hostsLine, s)
	}
	out.note("hosts: %s", strings.Join(hostsLine, " · "))
	if line := mcpStatusLine(c.o.MCP); line != "" {
		out.note("%s", line)
	}
	if c.o.Project != nil && c.o.Dir != "" {
		if line := projectStatusLine(c.o.Project.Project(c.o.Dir)); line != "" {
			out.note("%s", line)
		}
	}
}
