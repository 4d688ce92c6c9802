package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"time"

	"myco/agent"
	"myco/agent/model"
	"myco/hosts"
	"myco/hosts/tools"
	"myco/sessions"
	"myco/workspace"
	"myco/workspace/preludetool"
)

// durable is one session bound to a sessions.Runner for the life of the process: a new
// session, or a saved one for --resume and --compact. Live tools of an earlier process are
// not restored; the runtime facts tell the model so.
type durable struct {
	store  *sessions.Store
	rt     *sessions.Runtime
	runner *sessions.Runner
	tools  *toolset
	remove func()
}

// openDurable creates a session (id empty) or loads session id. A session that cannot be
// loaded is refused with an error naming the file; its file is left as it was.
func openDurable(ctx context.Context, p *profile, out *printer, id string) (*durable, error) {
	store := sessions.NewStore(p.paths.SessionDir())
	var sess *sessions.Session
	if id == "" {
		now := time.Now().UTC()
		sess = &sessions.Session{ID: sessions.NewID(now), Created: now, Model: p.model.Key}
		if err := store.Create(ctx, sess); err != nil {
			return nil, err
		}
	} else {
		s, err := store.Load(ctx, id)
		if err != nil {
			return nil, err
		}
		sess = s
	}
	owner := fmt.Sprintf("%s/rt-%d", sess.ID, os.Getpid())
	reg := &sessions.Registry{}
	std := hostTools(p.model.MaxImageBase64Bytes)
	remotes, ro, err := p.remotes()
	if err != nil {
		return nil, err
	}
	ro.OnState = out.hostState
	watcher := workspace.NewWatcher(p.paths.PreludeDir())
	snap, err := watcher.Prompt()
	if err != nil {
		return nil, err
	}
	prelude := preludetool.New(&workspace.Prelude{Dir: p.paths.PreludeDir(), Max: p.cfg.MaxPreludeBytes})
	h, err := hosts.NewHarness(hosts.Options{Tools: std, Root: []tools.Tool{sessions.NewHistoryTool(reg), sessions.NewMetaTool(reg), prelude},
		Remotes: remotes, Remote: ro})
	if err != nil {
		return nil, fmt.Errorf("build the harness: %w", err)
	}
	ts := &toolset{harness: h, exec: h.For(owner), std: std, blocks: promptBlocks(p.paths, snap)}
	rt, err := sessions.NewRuntime(sessions.RuntimeOptions{
		Store: store, Session: sess, Tools: ts.exec, Owner: owner,
		Inventory: func(context.Context) ([]string, error) { return inventory(std, owner), nil },
	})
	if err != nil {
		ts.close()
		return nil, err
	}
	m := p.model
	runner, err := sessions.NewRunner(sessions.Options{
		Runtime: rt,
		Prelude: watcher,
		Agent: func() sessions.AgentConfig {
			return sessions.AgentConfig{
				Options: agent.Options{
					Model: p.client, APIModel: m.APIID, MaxOutputTokens: m.MaxOutputTokens, Thinking: m.Thinking,
					System: ts.systemPrompt(m), MaxTruncatedResumes: m.MaxTruncatedResumes,
					ContextWindow: m.ContextWindow,
				},
				ModelKey: m.Key, Protocol: m.Protocol, ContextWindow: m.ContextWindow, AutoCompactAt: m.AutoCompactAt,
				CompactionMaxRequests: p.cfg.CompactionMaxRequests,
			}
		},
		Sink: func(ev sessions.Event) {
			switch ev := ev.(type) {
			case sessions.AgentEvent:
				out.event(ev.Event)
			case sessions.Notice:
				out.note("%s", ev.Text)
			case sessions.Compacted:
				out.note("compacted thread %s into %s", ev.From, ev.To)
			}
		},
	})
	if err != nil {
		ts.close()
		return nil, err
	}
	return &durable{store: store, rt: rt, runner: runner, tools: ts, remove: reg.Add(rt)}, nil
}

func (d *durable) close() {
	d.remove()
	d.tools.close()
}

// id returns the session id.
func (d *durable) id() string { return d.rt.Session().ID }

// turn submits text as a user turn, titling an untitled session after it.
func (d *durable) turn(ctx context.Context, text string) (agent.Result, error) {
	var untitled bool
	d.rt.View(func(s *sessions.Session) { untitled = s.Title == "" })
	if untitled {
		if err := d.rt.Update(ctx, func(s *sessions.Session) { s.Title = title(text) }); err != nil {
			return agent.Result{}, err
		}
	}
	res, err := d.runner.Submit(ctx, model.TextPart(text))
	if errors.Is(err, sessions.ErrRewound) {
		return res, fmt.Errorf("%w; the session was rewound to its last completed turn", err)
	}
	return res, err
}

// inventory lists owner's handles on the local tools: bash sessions and editor read
// stamps, one line each.
func inventory(std []tools.Tool, owner string) []string {
	var out []string
	for _, t := range std {
		inv, ok := t.(interface{ Inventory(string) any })
		if !ok {
			continue
		}
		switch v := inv.Inventory(owner).(type) {
		case []tools.BashSessionInfo:
			for _, s := range v {
				out = append(out, fmt.Sprintf("local bash session %s (%s): %s", s.ID, s.State, s.Command))
			}
		case []tools.Fingerprint:
			for _, fp := range v {
				out = append(out, fmt.Sprintf("local editor read stamp %s (%d bytes, sha256 %.12s)", fp.Path, fp.Size, fp.SHA256))
			}
		}
	}
	sort.Strings(out)
	return out
}

// compactCmd runs myco --compact ID: summarise the session's active thread into a
// successor thread, from the shell.
func (a *app) compactCmd(o options) int {
	return a.withSession(o, o.compact, func(ctx context.Context, d *durable, out *printer) int {
		c, err := d.runner.Compact(ctx)
		if errors.Is(err, errInterrupted) {
			out.interrupted()
			return exitInterrupt
		}
		if err != nil {
			return a.fail(err)
		}
		fmt.Fprintf(a.stdout, "compacted thread %s into %s\n", c.From, c.To)
		return exitOK
	})
}

// withSession resolves the profile, opens session id (a new one when id is empty) under a
// context that Ctrl-C cancels, announces it on stderr, and runs f.
func (a *app) withSession(o options, id string, f func(ctx context.Context, d *durable, out *printer) int) int {
	p, err := a.setup(o)
	if err != nil {
		return a.fail(err)
	}
	ctx, cancel := interruptible()
	defer cancel(nil)
	out := newPrinter(a.stdout, a.stderr, o.json)
	d, err := openDurable(ctx, p, out, id)
	if err != nil {
		return a.fail(err)
	}
	defer d.close()
	out.session(d.id())
	return f(ctx, d, out)
}
