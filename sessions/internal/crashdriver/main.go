// Command crashdriver runs scripted turns with tool batches on one durable session through
// the session service ([sessions.Manager], as every front end does), for the crash test, which kills it with SIGKILL at random points. It
// resumes the session it finds in -dir. After each durable checkpoint it prints
// "ckpt THREAD MESSAGES", and after each completed turn "done K". With -bash, each call runs
// a real bash command that prints a line and then sleeps, and each saved progress record
// prints "progress CALLID". With -tag NAME the inputs are "NAME turn K" and only those count
// as done, so that several drivers can share one session; notices (such as waiting for
// another process's writer gate) go to stderr. With -compact, auto-compaction is on and a
// tool round of each turn reports a prompt above the threshold, so turns compact between
// tool rounds; a turn the compaction loop guard stops counts as done.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"strings"
	"time"

	"myco.dev/agent"
	"myco.dev/agent/model"
	"myco.dev/agent/model/anthropic"
	"myco.dev/hosts/tools"
	"myco.dev/internal/fakemodel"
	"myco.dev/sessions"
)

type work struct{ bash *tools.Bash }

func (work) Specs() []model.ToolSpec {
	return []model.ToolSpec{{Name: "work", Description: "Do some work.", Schema: json.RawMessage(`{"type":"object","properties":{"what":{"type":"string"}}}`)}}
}

func (w work) Call(ctx context.Context, call model.ToolCall) model.ToolResult {
	if w.bash != nil {
		r := w.bash.Call(ctx, "crash", []byte(`{"action":"exec","command":"echo output of `+call.ID+`; sleep 2"}`))
		return model.ToolResult{CallID: call.ID, Text: r.Text, IsError: r.IsError}
	}
	select {
	case <-time.After(time.Duration(rand.IntN(8)) * time.Millisecond):
	case <-ctx.Done():
	}
	return model.ToolResult{CallID: call.ID, Text: "worked on " + string(call.Input)}
}

func main() {
	dir := flag.String("dir", "", "session directory")
	id := flag.String("session", "crash-1", "session id")
	turns := flag.Int("turns", 200, "turns to complete")
	useBash := flag.Bool("bash", false, "run a real bash command per call")
	tag := flag.String("tag", "", "prefix of this driver's inputs")
	compact := flag.Bool("compact", false, "auto-compact between tool rounds")
	flag.Parse()
	var w work
	if *useBash {
		w.bash = tools.NewBash(tools.BashOptions{})
	}
	prefix := "turn "
	if *tag != "" {
		prefix = *tag + " turn "
	}
	err := run(*dir, *id, *turns, w, prefix, *compact)
	if w.bash != nil {
		w.bash.Close()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "crashdriver:", err)
		os.Exit(1)
	}
}

func run(dir, id string, turns int, w work, prefix string, compact bool) error {
	ctx := context.Background()
	calls := fakemodel.Turn{Text: "Working.", ToolCalls: []fakemodel.ToolCall{
		{Name: "work", Args: `{"what":"a"}`}, {Name: "work", Args: `{"what":"b","host":"local"}`}, {Name: "work", Args: `{"what":"c"}`},
	}, DelayMs: 1, Usage: fakemodel.Usage{Input: 100, Output: 10}}
	answer := fakemodel.Turn{Text: "All three are done.", DelayMs: 1, Usage: fakemodel.Usage{Input: 120, Output: 8}}
	script := []fakemodel.Turn{calls, answer}
	window, at := 0, 0.0
	if compact {
		// The summarising request takes whichever turn is next; an answer makes a summary.
		big := calls
		big.Usage.Input = 90_000
		script, window, at = []fakemodel.Turn{calls, answer, calls, big, answer}, 100_000, 0.8
	}
	srv, err := fakemodel.Start(script...)
	if err != nil {
		return err
	}
	defer srv.Close()
	srv.Loop()
	store := sessions.NewStore(dir)
	sess, err := store.Load(ctx, id)
	if err != nil {
		sess = &sessions.Session{ID: id, Created: time.Now().UTC(), Model: "fake", Title: "crash test"}
		if err := store.Create(ctx, sess); err != nil {
			return err
		}
	}
	seen := map[string]bool{} // a compaction successor may repeat recent inputs
	for _, th := range sess.Threads {
		for _, e := range th.Entries {
			if e.AcceptedAt != nil && strings.HasPrefix(e.Message.Text(), prefix) {
				seen[e.Message.Text()] = true
			}
		}
	}
	done := len(seen)
	if done > 0 {
		// Turns whose input a killed predecessor made durable count as done: when that was
		// the last one, this process has nothing left to run and would otherwise report
		// nothing.
		fmt.Fprintf(os.Stdout, "done %d\n", done)
	}
	client := &model.Client{Protocol: anthropic.Protocol{}, BaseURL: srv.URL, Retry: model.RetryPolicy{MaxAttempts: 1}}
	cfg := sessions.AgentConfig{Options: agent.Options{Model: client, APIModel: "fake-1", System: "crash test", MaxOutputTokens: 100},
		ModelKey: "fake", Protocol: "anthropic-messages", ContextWindow: window, AutoCompactAt: at}
	// Wait: a session another driver works on is waited for, not refused.
	m, err := sessions.NewManager(sessions.ManagerOptions{Store: store, Models: catalog{cfg}, Tools: host{w}, Wait: true,
		Log: slog.New(slog.NewTextHandler(os.Stderr, nil))})
	if err != nil {
		return err
	}
	defer m.Close()
	// The events are printed as they come, after what they report is durable; a kill may
	// cut the last ones, which only reports less.
	sub := m.Subscribe([]string{id}, "").Exact()
	defer sub.Close()
	go func() {
		for {
			us, err := sub.Next(ctx)
			if err != nil {
				return
			}
			for _, u := range us {
				switch u.Type {
				case sessions.UpdateCheckpoint:
					fmt.Fprintf(os.Stdout, "ckpt %s %d\n", u.Thread, u.Count)
				case sessions.UpdateNotice:
					fmt.Fprintf(os.Stderr, "notice: %s\n", u.Text)
				case sessions.UpdateToolProgress:
					fmt.Fprintf(os.Stdout, "progress %s\n", u.CallID)
				}
			}
		}
	}()
	for k := done + 1; k <= turns; k++ {
		j, err := m.Submit(ctx, id, model.TextPart(fmt.Sprintf("%s%d", prefix, k)))
		if err != nil {
			return fmt.Errorf("turn %d: %w", k, err)
		}
		if _, err := j.Wait(ctx); err != nil && !errors.Is(err, sessions.ErrCompactionLoop) {
			return fmt.Errorf("turn %d: %w", k, err)
		}
		fmt.Fprintf(os.Stdout, "done %d\n", k)
	}
	return nil
}

// catalog is the one model of the driver's script.
type catalog struct{ cfg sessions.AgentConfig }

func (catalog) Default() string                                        { return "fake" }
func (c catalog) Agent(string, []string) (sessions.AgentConfig, error) { return c.cfg, nil }

// host gives every runtime the driver's tools, which hold no handles: it is neither a
// sessions.Releaser nor a sessions.Inventorier.
type host struct{ w work }

func (h host) Tools(string, string) sessions.Tools { return h.w }
