package sessions

import (
	"errors"
	"strings"
	"testing"

	"myco/agent/model"
	"myco/internal/fakemodel"
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
	pred := f.sess.Latest()
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
	s := loadFresh(t, f.store, f.sess.ID)
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
	if f.sess.Latest().ID != cur.ID || f.tools.count() != 7 {
		t.Errorf("after compaction the turn ran on %s with %d tool calls", f.sess.Latest().ID, f.tools.count())
	}
	// Compacting again within a few steps is refused.
	if _, err := f.runner.Compact(t.Context()); !errors.Is(err, ErrCompactionLoop) {
		t.Errorf("second Compact = %v, want ErrCompactionLoop", err)
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
	if len(f.sess.Threads) != 1 {
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
	if _, err := f.runner.Compact(t.Context()); !errors.Is(err, ErrCompactionLoop) {
		t.Errorf("Compact = %v, want ErrCompactionLoop for a successor above half the window", err)
	}
	if len(f.sess.Threads) != 1 {
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
		if res.Answer != "continued" || len(f.sess.Threads) != 2 {
			t.Fatalf("answer %q, %d threads; want a compaction and a continuation", res.Answer, len(f.sess.Threads))
		}
		th := loadFresh(t, f.store, f.sess.ID).Latest()
		var resumption *Entry
		for i := range th.Entries {
			if strings.HasPrefix(th.Entries[i].Message.Text(), "# Resumption") {
				resumption = &th.Entries[i]
			}
		}
		if resumption == nil || resumption.AcceptedAt != nil || !resumption.Continuation {
			t.Errorf("resumption entry = %+v, want one without an acceptance time", resumption)
		}
		if _, err := f.submit(t, "more"); err != nil || len(f.sess.Threads) != 2 {
			t.Errorf("a turn below the threshold compacted: %v, %d threads", err, len(f.sess.Threads))
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
		if f.srv.Served() != 4 || len(f.sess.Threads) != 2 {
			t.Errorf("auto-compaction ran again after staying above the threshold (%d threads)", len(f.sess.Threads))
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
		if f.srv.Served() != 3 || len(f.sess.Threads) != 1 {
			t.Fatalf("served %d, %d threads: auto-compaction must stay off after a failure", f.srv.Served(), len(f.sess.Threads))
		}
		if _, err := f.runner.Compact(t.Context()); err != nil {
			t.Fatalf("manual Compact: %v", err)
		}
		f.rt.mu.Lock()
		off := f.rt.autoOff
		f.rt.mu.Unlock()
		if off {
			t.Error("a successful manual compaction did not turn auto-compaction back on")
		}
	})
	t.Run("no continuation after a refusal", func(t *testing.T) {
		f := newFixture(t, fakemodel.Turn{Text: "no", Stop: "refusal", Usage: fakemodel.Usage{Input: 900}})
		f.cfg.ContextWindow, f.cfg.AutoCompactAt = 1000, 0.8
		if _, err := f.submit(t, "work"); err != nil {
			t.Fatal(err)
		}
		if f.srv.Served() != 1 || len(f.sess.Threads) != 1 {
			t.Error("a refusal started auto-compaction")
		}
	})
}
