package sessions

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"myco.dev/agent"
	"myco.dev/agent/model"
	"myco.dev/internal/fakemodel"
)

const summaryText = "## Goal\nShip it.\n## User constraints\n\"no new deps\"\n## Next action\nrun go test"

// workTurns is one scripted turn with a tool call and an answer.
func workTurns(id string, input int) []fakemodel.Turn {
	return []fakemodel.Turn{
		{ToolCalls: []fakemodel.ToolCall{call(id, id)}, Usage: fakemodel.Usage{Input: input}},
		{Text: "finished " + id, Usage: fakemodel.Usage{Input: input}},
	}
}

func TestCompact(t *testing.T) {
	var turns []fakemodel.Turn
	for _, id := range []string{"a", "b", "c", "d", "e", "f"} {
		turns = append(turns, workTurns(id, 100)...)
	}
	turns = append(turns, fakemodel.Turn{Text: summaryText})
	f := newFixture(t, turns...)
	if err := f.rt.Update(t.Context(), func(s *Session) { s.Title, s.Scratchpad = "Title", "notes" }); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a", "b", "c", "d", "e", "f"} {
		if _, err := f.submit(t, "please do "+id); err != nil {
			t.Fatal(err)
		}
	}
	pred := f.session().Latest()
	predLen := len(pred.Entries)
	c, err := f.runner.Compact(t.Context())
	if err != nil {
		t.Fatalf("Compact: %v", err)
	}
	// The summarising request: the agent's own system prompt, the whole history, then the
	// structured summary prompt.
	req := f.srv.Requests()[len(f.srv.Requests())-1].JSON()
	if sys, _ := req["system"].(string); !strings.Contains(sys, "You are a test agent.") {
		if !strings.Contains(string(f.srv.Requests()[len(f.srv.Requests())-1].Body), "You are a test agent.") {
			t.Errorf("summarising request has no agent system prompt: %v", req["system"])
		}
	}
	body := string(f.srv.Requests()[len(f.srv.Requests())-1].Body)
	for _, want := range []string{"quoted verbatim", "exact next action", "Files touched", "Unknown outcomes", "please do a"} {
		if !strings.Contains(body, want) {
			t.Errorf("summarising request lacks %q", want)
		}
	}
	s := loadFresh(t, f.store, f.id)
	if len(s.Threads) != 2 || s.Title != "Title" || s.Scratchpad != "notes" {
		t.Fatalf("after compaction: %d threads, title %q", len(s.Threads), s.Title)
	}
	old, cur := s.Threads[0], s.Threads[1]
	if len(old.Entries) != predLen || old.Successor != cur.ID || cur.Predecessor != old.ID || cur.Reason != "compaction" {
		t.Errorf("predecessor %d entries (want %d), links %q→%q", len(old.Entries), predLen, old.Successor, cur.Predecessor)
	}
	head := cur.Entries[0]
	if !strings.Contains(head.Message.Text(), summaryText) || !strings.Contains(head.Message.Text(), "session_history") || !strings.Contains(head.Message.Text(), `"thread_id":"t1"`) {
		t.Errorf("first message = %q, want the summary and how to read the predecessor", head.Message.Text())
	}
	if head.Facts == nil || head.Message.Parts[0].Kind != model.KindSystem {
		t.Error("the successor does not carry the runtime facts forward")
	}
	if c.Retained == 0 || c.Retained != len(cur.Entries)-1 {
		t.Errorf("retained %d, successor has %d entries", c.Retained, len(cur.Entries))
	}
	results := 0
	for _, e := range cur.Entries[1:] {
		for _, p := range e.Message.Parts {
			if p.Kind == model.KindToolResult {
				results++
			}
		}
	}
	if results == 0 || !strings.Contains(cur.Entries[len(cur.Entries)-1].Message.Text(), "finished f") {
		t.Errorf("recent context has %d tool results and ends %q; want raw recent turns", results, cur.Entries[len(cur.Entries)-1].Message.Text())
	}
	if err := cur.Executable(); err != nil {
		t.Errorf("successor: %v", err)
	}
	// The next turn runs on the successor with live tools.
	f.srv.Script(workTurns("g", 100)...)
	if _, err := f.submit(t, "please do g"); err != nil {
		t.Fatal(err)
	}
	if latest := f.session().Latest(); latest.ID != cur.ID || f.tools.count() != 7 {
		t.Errorf("after compaction the turn ran on %s with %d tool calls", latest.ID, f.tools.count())
	}
	// Compacting again within a few steps is refused.
	if _, err := f.runner.Compact(t.Context()); !errors.Is(err, ErrCompactionLoop) ||
		!regexp.MustCompile(`^thread t\d+ was compacted .*; compacting it again now would only summarise its summary\. Go on working in the session: it can be compacted after \d more model steps?$`).MatchString(err.Error()) {
		t.Errorf("second Compact = %v, want ErrCompactionLoop saying why and what to do", err)
	}
}

func TestCompactRequestCap(t *testing.T) {
	var turns []fakemodel.Turn
	turns = append(turns, workTurns("a", 10)...)
	for range 10 {
		turns = append(turns, fakemodel.Turn{Status: 529, ErrorType: "overloaded_error"})
	}
	f := newFixture(t, turns...)
	f.client.Retry = model.RetryPolicy{MaxAttempts: 10, InitialBackoff: 1, MaxBackoff: 1, Multiplier: 1}
	f.cfg.CompactionMaxRequests = 3
	if _, err := f.submit(t, "a"); err != nil {
		t.Fatal(err)
	}
	before := len(f.srv.Requests())
	_, err := f.runner.Compact(t.Context())
	if err == nil || !strings.Contains(err.Error(), "compaction_max_requests") {
		t.Fatalf("Compact = %v, want the request cap", err)
	}
	if n := len(f.srv.Requests()) - before; n != 3 {
		t.Errorf("compaction made %d requests, want 3", n)
	}
	if len(f.session().Threads) != 1 {
		t.Error("a failed compaction started a thread")
	}
}

func TestCompactTrimsOldestFirst(t *testing.T) {
	var turns []fakemodel.Turn
	for _, id := range []string{"a", "b", "c", "d"} {
		turns = append(turns, workTurns(id, 10)...)
	}
	turns = append(turns,
		fakemodel.Turn{Status: 400, ErrorType: "invalid_request_error", ErrorMessage: "prompt is too long: 300000 tokens > 200000 maximum"},
		fakemodel.Turn{Text: summaryText})
	f := newFixture(t, turns...)
	for _, id := range []string{"a", "b", "c", "d"} {
		if _, err := f.submit(t, "please do "+id); err != nil {
			t.Fatal(err)
		}
	}
	c, err := f.runner.Compact(t.Context())
	if err != nil {
		t.Fatalf("Compact: %v", err)
	}
	if c.Trimmed == 0 || c.Requests != 2 {
		t.Errorf("trimmed %d messages in %d requests, want some in 2", c.Trimmed, c.Requests)
	}
	last := string(f.srv.Requests()[len(f.srv.Requests())-1].Body)
	if strings.Contains(last, "please do a") || !strings.Contains(last, "please do d") {
		t.Error("the retry did not drop the oldest input first")
	}
}

func TestCompactSuccessorTooLarge(t *testing.T) {
	f := newFixture(t, fakemodel.Turn{Text: "short"}, fakemodel.Turn{Text: strings.Repeat("summary ", 500)})
	f.cfg.ContextWindow = 1000
	if _, err := f.submit(t, "x"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.runner.Compact(t.Context()); !errors.Is(err, ErrCompactionLoop) || !strings.Contains(err.Error(), "too full to work in; nothing was changed") {
		t.Errorf("Compact = %v, want ErrCompactionLoop for a successor above half the window", err)
	}
	if len(f.session().Threads) != 1 {
		t.Error("an oversized successor was committed")
	}
}

func TestAutoCompaction(t *testing.T) {
	t.Run("compact and continue once", func(t *testing.T) {
		f := newFixture(t,
			fakemodel.Turn{Text: "big answer", Usage: fakemodel.Usage{Input: 900}},
			fakemodel.Turn{Text: summaryText},
			fakemodel.Turn{Text: "continued", Usage: fakemodel.Usage{Input: 100}},
			fakemodel.Turn{Text: "next", Usage: fakemodel.Usage{Input: 200}},
		)
		f.cfg.ContextWindow, f.cfg.AutoCompactAt = 1000, 0.8
		res, err := f.submit(t, "work")
		if err != nil {
			t.Fatalf("Submit: %v", err)
		}
		if res.Answer != "continued" || len(f.session().Threads) != 2 {
			t.Fatalf("answer %q, %d threads; want a compaction and a continuation", res.Answer, len(f.session().Threads))
		}
		th := loadFresh(t, f.store, f.id).Latest()
		var resumption *Entry
		for i := range th.Entries {
			if strings.HasPrefix(th.Entries[i].Message.Text(), "# Resumption") {
				resumption = &th.Entries[i]
			}
		}
		if resumption == nil || resumption.AcceptedAt != nil || !resumption.Continuation {
			t.Errorf("resumption entry = %+v, want one without an acceptance time", resumption)
		}
		if _, err := f.submit(t, "more"); err != nil || len(f.session().Threads) != 2 {
			t.Errorf("a turn below the threshold compacted: %v, %d threads", err, len(f.session().Threads))
		}
	})
	t.Run("still above threshold turns it off", func(t *testing.T) {
		f := newFixture(t,
			fakemodel.Turn{Text: "big", Usage: fakemodel.Usage{Input: 900}},
			fakemodel.Turn{Text: summaryText},
			fakemodel.Turn{Text: "still big", Usage: fakemodel.Usage{Input: 950}},
			fakemodel.Turn{Text: "big again", Usage: fakemodel.Usage{Input: 960}},
		)
		f.cfg.ContextWindow, f.cfg.AutoCompactAt = 1000, 0.8
		if _, err := f.submit(t, "work"); err != nil {
			t.Fatal(err)
		}
		if f.srv.Served() != 3 {
			t.Fatalf("served %d turns, want 3: one compact-and-continue per submission", f.srv.Served())
		}
		if _, err := f.submit(t, "again"); err != nil {
			t.Fatal(err)
		}
		if f.srv.Served() != 4 || len(f.session().Threads) != 2 {
			t.Errorf("auto-compaction ran again after staying above the threshold (%d threads)", len(f.session().Threads))
		}
	})
	t.Run("failure turns it off until manual compaction", func(t *testing.T) {
		f := newFixture(t,
			fakemodel.Turn{Text: "big", Usage: fakemodel.Usage{Input: 900}},
			fakemodel.Turn{Status: 400, ErrorType: "invalid_request_error", ErrorMessage: "bad"},
			fakemodel.Turn{Text: "big", Usage: fakemodel.Usage{Input: 900}},
			fakemodel.Turn{Text: summaryText},
			fakemodel.Turn{Text: "s", Usage: fakemodel.Usage{Input: 10}},
		)
		f.cfg.ContextWindow, f.cfg.AutoCompactAt = 1000, 0.8
		f.cfg.CompactionMaxRequests = 1
		if _, err := f.submit(t, "work"); err != nil {
			t.Fatalf("a failed auto-compaction failed the turn: %v", err)
		}
		if _, err := f.submit(t, "again"); err != nil {
			t.Fatal(err)
		}
		if f.srv.Served() != 3 || len(f.session().Threads) != 1 {
			t.Fatalf("served %d, %d threads: auto-compaction must stay off after a failure", f.srv.Served(), len(f.session().Threads))
		}
		if _, err := f.runner.Compact(t.Context()); err != nil {
			t.Fatalf("manual Compact: %v", err)
		}
		if f.rt.autoCompactOff() {
			t.Error("a successful manual compaction did not turn auto-compaction back on")
		}
	})
	t.Run("no continuation after a refusal", func(t *testing.T) {
		f := newFixture(t, fakemodel.Turn{Text: "no", Stop: "refusal", Usage: fakemodel.Usage{Input: 900}})
		f.cfg.ContextWindow, f.cfg.AutoCompactAt = 1000, 0.8
		if _, err := f.submit(t, "work"); err != nil {
			t.Fatal(err)
		}
		if f.srv.Served() != 1 || len(f.session().Threads) != 1 {
			t.Error("a refusal started auto-compaction")
		}
	})
}

// A long tool loop that crosses the threshold between tool rounds is compacted there: the
// same run goes on in the successor, which holds the turn, its intents and checkpoints.
func TestAutoCompactionBetweenToolRounds(t *testing.T) {
	t.Run("the run continues on the successor", func(t *testing.T) {
		f := newFixture(t,
			fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{call("a", "a")}, Usage: fakemodel.Usage{Input: 300}},
			fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{call("b", "b")}, Usage: fakemodel.Usage{Input: 500}},
			fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{call("c", "c")}, Usage: fakemodel.Usage{Input: 850}},
			fakemodel.Turn{Text: summaryText},
			fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{call("d", "d")}, Usage: fakemodel.Usage{Input: 200}},
			fakemodel.Turn{Text: "all done", Usage: fakemodel.Usage{Input: 250}},
		)
		f.cfg.ContextWindow, f.cfg.AutoCompactAt = 1000, 0.8
		var during *Session
		f.tools.run = func(ctx context.Context, c model.ToolCall) model.ToolResult {
			if c.ID == "d" { // a crash here must leave the turn resumable on the successor
				during = loadFresh(t, f.store, f.id)
			}
			return model.ToolResult{Text: "did " + c.ID}
		}
		res, err := f.submit(t, "do a long job")
		if err != nil {
			t.Fatalf("Submit: %v", err)
		}
		if res.Answer != "all done" || res.Steps != 5 || f.tools.count() != 4 {
			t.Errorf("answer %q after %d steps and %d calls, want all done after 5 and 4", res.Answer, res.Steps, f.tools.count())
		}
		if res.Usage.Input != 300+500+850+200+250 {
			t.Errorf("run usage input %d: the successor must keep the run's accounting", res.Usage.Input)
		}
		s := loadFresh(t, f.store, f.id)
		if len(s.Threads) != 2 {
			t.Fatalf("%d threads, want 2", len(s.Threads))
		}
		pred, cur := s.Threads[0], s.Threads[1]
		if len(pred.Entries) != 7 || pred.LastTurn() != TurnCompacted || pred.Interrupted() {
			t.Errorf("predecessor: %d entries, last turn %q; want all 7 kept and the turn moved", len(pred.Entries), pred.LastTurn())
		}
		if cur.LastTurn() != TurnDone || cur.Interrupted() || cur.Reason != "compaction" {
			t.Errorf("successor: last turn %q, reason %q", cur.LastTurn(), cur.Reason)
		}
		var resumption, tail = -1, cur.Entries[len(cur.Entries)-3:]
		for i, e := range cur.Entries {
			if e.Continuation && strings.HasPrefix(e.Message.Text(), "# Resumption") && e.AcceptedAt == nil {
				resumption = i
			}
		}
		if resumption < 0 || tail[0].Message.ToolCalls()[0].ID != "d" || tail[2].Message.Text() != "all done" {
			t.Errorf("successor entries: resumption at %d, tail %+v", resumption, tail)
		}
		if err := cur.Executable(); err != nil {
			t.Error(err)
		}
		data, _ := os.ReadFile(f.store.Path(f.id))
		if !bytes.Contains(data, []byte(`"intent":{"thread":"t2","call":{"id":"d"`)) || !bytes.Contains(data, []byte(`"intent":{"thread":"t1","call":{"id":"c"`)) {
			t.Error("the intents of the calls after the compaction are not recorded in the successor")
		}
		if during == nil || during.Latest().ID != cur.ID || !during.Latest().Interrupted() {
			t.Error("during the successor's tool round the saved turn is not resumable on the successor")
		}
		// The request after the compaction is the successor's: summary and resumption, and
		// the next one carries what the run added on it.
		after := string(f.srv.Requests()[4].Body)
		if !strings.Contains(after, "Ship it.") || !strings.Contains(after, "# Resumption") {
			t.Error("the first request after the compaction does not carry the summary and the resumption")
		}
		if last := string(f.srv.Requests()[5].Body); !strings.Contains(last, "did d") || !strings.Contains(last, "Ship it.") {
			t.Error("the run did not go on from the successor's history")
		}
		// A checkpoint of the old thread's turn is stale.
		var t1 *Thread
		f.rt.doc.view(func(s *Session) { t1 = s.Threads[0] })
		old := &turn{r: f.runner, th: t1, saved: 7}
		if err := old.checkpoint(t.Context(), append(f.rt.doc.copyOf(t1).Messages(), user("x").Message)); !errors.Is(err, ErrStaleCheckpoint) {
			t.Errorf("checkpoint on the predecessor = %v, want ErrStaleCheckpoint", err)
		}
	})
	t.Run("compacting again within a few steps stops the run", func(t *testing.T) {
		f := newFixture(t,
			fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{call("a", "a")}, Usage: fakemodel.Usage{Input: 900}},
			fakemodel.Turn{Text: summaryText},
			fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{call("b", "b")}, Usage: fakemodel.Usage{Input: 950}},
			fakemodel.Turn{Text: "never asked"},
		)
		f.cfg.ContextWindow, f.cfg.AutoCompactAt = 1000, 0.8
		_, err := f.submit(t, "do a long job")
		if !errors.Is(err, ErrCompactionLoop) || !strings.Contains(err.Error(), "in this turn, and its context is near the window again; compacting it again would loop, so the turn stops here") {
			t.Fatalf("Submit = %v, want ErrCompactionLoop saying the run stops", err)
		}
		if f.srv.Served() != 3 || f.tools.count() != 2 || len(f.session().Threads) != 2 || !f.rt.autoCompactOff() {
			t.Errorf("served %d, %d calls, %d threads, auto off %v; want the run stopped after b's results", f.srv.Served(), f.tools.count(), len(f.session().Threads), f.rt.autoCompactOff())
		}
		cur := loadFresh(t, f.store, f.id).Latest()
		if cur.LastTurn() != TurnFailed || cur.Entries[len(cur.Entries)-1].Message.Parts[0].ToolResult == nil {
			t.Errorf("successor last turn %q; want failed with b's result saved", cur.LastTurn())
		}
	})
	t.Run("a successor above half the window stops the run", func(t *testing.T) {
		f := newFixture(t,
			fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{call("a", "a")}, Usage: fakemodel.Usage{Input: 900}},
			fakemodel.Turn{Text: strings.Repeat("summary ", 500)},
			fakemodel.Turn{Text: "never asked"},
		)
		f.cfg.ContextWindow, f.cfg.AutoCompactAt = 1000, 0.8
		if _, err := f.submit(t, "do a long job"); !errors.Is(err, ErrCompactionLoop) {
			t.Fatalf("Submit = %v, want ErrCompactionLoop", err)
		}
		if f.srv.Served() != 2 || len(f.session().Threads) != 1 || !f.rt.autoCompactOff() {
			t.Errorf("served %d, %d threads, auto off %v; want no successor and the run stopped", f.srv.Served(), len(f.session().Threads), f.rt.autoCompactOff())
		}
	})
	t.Run("a cancel while compacting ends the turn cancelled", func(t *testing.T) {
		f := newFixture(t,
			fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{call("a", "a")}, Usage: fakemodel.Usage{Input: 900}},
			fakemodel.Turn{Text: summaryText, HangMs: 5000},
		)
		f.cfg.ContextWindow, f.cfg.AutoCompactAt = 1000, 0.8
		ctx, cancel := context.WithCancelCause(t.Context())
		f.sink = func(ev event) {
			if c, ok := ev.(checkpointed); ok && c.Messages == 3 { // the tool batch is saved
				cancel(errors.New("stopped by user"))
			}
		}
		f.bind(t, "owner-1", nil)
		if _, err := f.runner.Submit(ctx, model.TextPart("go")); !errors.Is(err, context.Canceled) {
			t.Fatalf("Submit = %v, want cancelled", err)
		}
		th := loadFresh(t, f.store, f.id).Latest()
		if len(f.session().Threads) != 1 || th.LastTurn() != TurnCancelled || len(th.Entries) != 3 || f.rt.autoCompactOff() {
			t.Errorf("%d threads, last turn %q, %d entries, auto off %v; want the turn cancelled with its results and no successor",
				len(f.session().Threads), th.LastTurn(), len(th.Entries), f.rt.autoCompactOff())
		}
	})
	t.Run("a failed summary goes on uncompacted", func(t *testing.T) {
		f := newFixture(t,
			fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{call("a", "a")}, Usage: fakemodel.Usage{Input: 900}},
			fakemodel.Turn{Status: 400, ErrorType: "invalid_request_error", ErrorMessage: "bad"},
			fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{call("b", "b")}, Usage: fakemodel.Usage{Input: 950}},
			fakemodel.Turn{Text: "done", Usage: fakemodel.Usage{Input: 960}},
		)
		f.cfg.ContextWindow, f.cfg.AutoCompactAt = 1000, 0.8
		f.cfg.CompactionMaxRequests = 1
		res, err := f.submit(t, "do a long job")
		if err != nil || res.Answer != "done" {
			t.Fatalf("Submit = %q, %v; want the run to finish", res.Answer, err)
		}
		if f.srv.Served() != 4 || len(f.session().Threads) != 1 || !f.rt.autoCompactOff() {
			t.Errorf("served %d, %d threads, auto off %v; want one failed summary and no other", f.srv.Served(), len(f.session().Threads), f.rt.autoCompactOff())
		}
	})
}

// A latest turn too large to keep whole (a long tool loop) keeps its input and its newest
// rounds in the successor rather than nothing.
func TestRecentKeepsNewestRounds(t *testing.T) {
	th := &Thread{ID: "t1", Entries: []Entry{user("earlier"), {Message: model.Message{Role: model.Assistant, Parts: []model.Part{model.TextPart("ok")}}}, user("long job")}}
	for i := range 10 {
		id := fmt.Sprintf("c%d", i)
		th.Entries = append(th.Entries,
			Entry{Message: model.Message{Role: model.Assistant, Parts: []model.Part{{Kind: model.KindToolCall, ToolCall: &model.ToolCall{ID: id, Name: "work", Input: []byte(`{}`)}}}}},
			Entry{Message: model.Message{Role: model.User, Parts: []model.Part{{Kind: model.KindToolResult, ToolResult: &model.ToolResult{CallID: id, Text: id + strings.Repeat(" output", 100)}}}}})
	}
	got := recentEntries(th, 4000) // 1,000 tokens of recent context: about two rounds
	if len(got) < 3 || got[0].Message.Text() == "" || !strings.HasPrefix(got[0].Message.Parts[0].Text, "long job") || got[0].AcceptedAt == nil {
		t.Fatalf("recent = %d entries starting %+v, want the turn's input first", len(got), got)
	}
	if !strings.Contains(got[0].Message.Text(), "left out") {
		t.Error("the input does not say that rounds were left out")
	}
	if last := got[len(got)-1].Message.Parts[0].ToolResult; last == nil || last.CallID != "c9" {
		t.Errorf("recent ends with %+v, want the newest round's results", got[len(got)-1].Message)
	}
	if _, changed := agent.RepairHistory(messagesOf(got)); changed {
		t.Error("the kept rounds are not a valid history")
	}
	if estimate(messagesOf(got)) > 1000 || len(got) >= 21 {
		t.Errorf("kept %d entries, %d tokens; want a bounded tail", len(got), estimate(messagesOf(got)))
	}
}
