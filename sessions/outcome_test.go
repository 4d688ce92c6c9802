package sessions

import (
	"errors"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"myco.dev/agent/model"
	"myco.dev/internal/fakemodel"
)

// The context-length and invalid-request bodies of the real Anthropic API (see
// agent/model/errors_test.go).
const (
	anthropicTooLong = `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 215021 tokens > 200000 maximum"}}`
	anthropicInvalid = `{"type":"error","error":{"type":"invalid_request_error","message":"messages.1.content.0.tool_use.id: String should match pattern"}}`
	anthropicAuth    = `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`
)

// TestProviderRejectionRewinds (issue 20): a request the provider refuses for what it holds
// (400 prompt too long, 400 invalid) is rewound like one over max_request_bytes: the earlier
// turns stay active, the predecessor keeps the rejected turn's observations (its tool round
// included), the rejected input is shown in the active thread, marked and never sent again,
// and the next message works. A refusal that is not about the request (401) fails the turn
// and rewinds nothing.
func TestProviderRejectionRewinds(t *testing.T) {
	for _, tt := range []struct {
		name, body, code string
		status           int
	}{
		{"prompt too long", anthropicTooLong, "context_overflow", 400},
		{"invalid request", anthropicInvalid, "rejected", 400},
		{"too large", `{"type":"error","error":{"type":"request_too_large","message":"Request exceeds the maximum allowed number of bytes."}}`, "context_overflow", 413},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t,
				fakemodel.Turn{Text: "first answer", Usage: fakemodel.Usage{Input: 120}},
				fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{call("c1", "look")}, Usage: fakemodel.Usage{Input: 300}},
				fakemodel.Turn{Status: tt.status, ErrorBody: tt.body},
				fakemodel.Turn{Text: "second answer"},
			)
			if _, err := f.submit(t, "first"); err != nil {
				t.Fatal(err)
			}
			_, err := f.submit(t, "the big one")
			if !errors.Is(err, ErrRewound) || ErrorCode(err) != tt.code {
				t.Fatalf("Submit = %v (code %s), want ErrRewound with code %s", err, ErrorCode(err), tt.code)
			}
			s := loadFresh(t, f.store, f.id)
			if len(s.Threads) != 2 {
				t.Fatalf("%d threads, want the rewound one after the original", len(s.Threads))
			}
			old, cur := s.Threads[0], s.Threads[1]
			if old.LastTurn() != TurnRejected || len(old.Entries) != 5 {
				t.Errorf("predecessor: %d entries, last turn %q; want the rejected turn with its tool round kept", len(old.Entries), old.LastTurn())
			}
			last := cur.Entries[len(cur.Entries)-1]
			if len(cur.Entries) != 3 || !last.Rejected || last.Message.Text() != "the big one" || len(cur.History()) != 2 {
				t.Errorf("rewound thread: %d entries, last %q rejected %v; want the first turn and the rejected input shown", len(cur.Entries), last.Message.Text(), last.Rejected)
			}
			if cur.ContextUsed() != 120 || s.Spent().Input != 420 {
				t.Errorf("context used %d, spent %d; want the kept turn's 120 and 420 spent (the carried usage is not spent twice)", cur.ContextUsed(), s.Spent().Input)
			}
			lt := s.LastTurn()
			if lt.Status != TurnRejected || lt.Code != tt.code || lt.Answer != "" || !strings.Contains(lt.Error, "rewound") {
				t.Errorf("LastTurn = %+v, want rejected (%s) with no answer, saying it was rewound", lt, tt.code)
			}
			if _, err := f.submit(t, "small"); err != nil {
				t.Fatalf("the next message: %v", err)
			}
			msgs := requestMessages(t, f.srv, 3)
			if len(msgs) != 3 || strings.Contains(string(f.srv.Requests()[3].Body), "the big one") {
				t.Errorf("the next request has %d messages (or carries the rejected input), want the first turn and the new message", len(msgs))
			}
		})
	}
	t.Run("unauthorized is not a rejection", func(t *testing.T) {
		f := newFixture(t, fakemodel.Turn{Text: "first"}, fakemodel.Turn{Status: 401, ErrorBody: anthropicAuth})
		if _, err := f.submit(t, "one"); err != nil {
			t.Fatal(err)
		}
		_, err := f.submit(t, "two")
		if errors.Is(err, ErrRewound) || ErrorCode(err) != "auth_failed" {
			t.Fatalf("Submit = %v, want a failure (auth_failed), not a rewind", err)
		}
		s := loadFresh(t, f.store, f.id)
		if lt := s.LastTurn(); len(s.Threads) != 1 || lt.Status != TurnFailed || lt.Answer != "" || !strings.Contains(lt.Error, "refused the credential") || !strings.Contains(lt.Detail, "invalid x-api-key") {
			t.Errorf("%d threads, LastTurn %+v; want one thread, failed, no answer (not the first turn's), plain words with the provider's in the detail", len(s.Threads), lt)
		}
	})
}

// TestOverflowCompactsAndRetries (issue 20): with auto_compact_at set, a context overflow
// compacts the session and sends the same message once more in the successor; a second
// overflow rewinds again and ends with a plain message.
func TestOverflowCompactsAndRetries(t *testing.T) {
	t.Run("fits after compacting", func(t *testing.T) {
		f := newFixture(t,
			fakemodel.Turn{Text: "first answer", Usage: fakemodel.Usage{Input: 300}},
			fakemodel.Turn{Status: 400, ErrorBody: anthropicTooLong},
			fakemodel.Turn{Text: summaryText},
			fakemodel.Turn{Text: "answered after compacting", Usage: fakemodel.Usage{Input: 200}},
		)
		f.cfg.ContextWindow, f.cfg.AutoCompactAt = 1000, 0.8
		if _, err := f.submit(t, "first"); err != nil {
			t.Fatal(err)
		}
		res, err := f.submit(t, "a long message")
		if err != nil || res.Answer != "answered after compacting" {
			t.Fatalf("Submit = %q, %v; want the answer of the retry", res.Answer, err)
		}
		s := loadFresh(t, f.store, f.id)
		reasons := []string{}
		for _, th := range s.Threads {
			reasons = append(reasons, th.Reason)
		}
		if strings.Join(reasons, ",") != ",rewind,compaction" {
			t.Errorf("threads %v, want the original, the rewound one and the compacted one", reasons)
		}
		cur := s.Latest()
		in := cur.Entries[len(cur.Entries)-2]
		if in.Message.Text() != "a long message" || in.AcceptedAt == nil || in.Rejected {
			t.Errorf("the retried input = %+v, want the same message, accepted", in)
		}
		if lt := s.LastTurn(); lt.Status != TurnDone || lt.Answer != "answered after compacting" {
			t.Errorf("LastTurn = %+v", lt)
		}
		if last := string(f.srv.Requests()[3].Body); !strings.Contains(last, "a long message") || !strings.Contains(last, "Compacted context") {
			t.Error("the retry was not the message on top of the summary")
		}
	})
	t.Run("overflows again", func(t *testing.T) {
		f := newFixture(t,
			fakemodel.Turn{Text: "first answer", Usage: fakemodel.Usage{Input: 300}},
			fakemodel.Turn{Status: 400, ErrorBody: anthropicTooLong},
			fakemodel.Turn{Text: summaryText},
			fakemodel.Turn{Status: 400, ErrorBody: anthropicTooLong},
			fakemodel.Turn{Text: "short answer"},
		)
		f.cfg.ContextWindow, f.cfg.AutoCompactAt = 1000, 0.8
		if _, err := f.submit(t, "first"); err != nil {
			t.Fatal(err)
		}
		_, err := f.submit(t, "a huge message")
		if !errors.Is(err, ErrRewound) || ErrorCode(err) != "context_overflow" || f.srv.Served() != 4 {
			t.Fatalf("Submit = %v after %d requests, want one retry then ErrRewound (context_overflow)", err, f.srv.Served())
		}
		s := loadFresh(t, f.store, f.id)
		lt := s.LastTurn()
		if lt.Status != TurnRejected || !strings.Contains(lt.Error, "even after the session was compacted") || !s.Latest().Entries[len(s.Latest().Entries)-1].Rejected {
			t.Errorf("LastTurn = %+v, want rejected saying it does not fit even after compacting, the input shown as rejected", lt)
		}
		if _, err := f.submit(t, "short"); err != nil {
			t.Errorf("a short message after that: %v", err)
		}
	})
}

// TestAutoCompactionAfterAnswerSoonAfterACompaction (issue 20): an answer that ends a turn
// over the threshold compacts once even when the thread was compacted a step or two ago
// (the step guard is for a loop within one turn), and auto-compaction stays on.
func TestAutoCompactionAfterAnswerSoonAfterACompaction(t *testing.T) {
	f := newFixture(t,
		fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{call("a", "a")}, Usage: fakemodel.Usage{Input: 900}},
		fakemodel.Turn{Text: summaryText},
		fakemodel.Turn{Text: "answer over the threshold", Usage: fakemodel.Usage{Input: 850}},
		fakemodel.Turn{Text: summaryText},
		fakemodel.Turn{Text: "continued", Usage: fakemodel.Usage{Input: 100}},
	)
	f.cfg.ContextWindow, f.cfg.AutoCompactAt = 1000, 0.8
	res, err := f.submit(t, "do a job")
	if err != nil || res.Answer != "continued" {
		t.Fatalf("Submit = %q, %v; want a second compaction after the answer and its continuation", res.Answer, err)
	}
	if n := len(f.session().Threads); n != 3 || f.rt.autoCompactOff() {
		t.Errorf("%d threads, auto-compaction off %v; want 3 threads and it still on", n, f.rt.autoCompactOff())
	}
	for _, ev := range f.events {
		if n, ok := ev.(notice); ok && strings.Contains(n.Text, "stops here") {
			t.Errorf("a notice says the run stops though it ended normally: %q", n.Text)
		}
	}
}

// TestSaveFailedThenSpace (issue 20): a submit whose input cannot be saved (the disk is
// full) fails with ErrSaveFailed, and the snapshot says the turn failed (save_failed), not
// the previous turn's done; once writes work again, the next submit runs without a
// restart. A create on a full disk is ErrSaveFailed too.
func TestSaveFailedThenSpace(t *testing.T) {
	f := newManager(t, ManagerOptions{}, fakemodel.Turn{Text: "first"}, fakemodel.Turn{Text: "after the disk was freed"})
	ctx := t.Context()
	id, err := f.m.Create(ctx, CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	j, err := f.m.Submit(ctx, id, model.TextPart("one"))
	if err != nil {
		t.Fatal(err)
	}
	j.Wait(ctx)
	var full atomic.Bool
	f.store.openLog = func(path string) (logFile, error) {
		fh, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
		return &failingLog{f: fh, fail: full.Load()}, err
	}
	full.Store(true)
	j, err = f.m.Submit(ctx, id, model.TextPart("two"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.Wait(ctx); !errors.Is(err, ErrSaveFailed) {
		t.Fatalf("the turn on a full disk = %v, want ErrSaveFailed", err)
	}
	_, st, _ := f.m.Snapshot(ctx, id)
	if st.LastTurn.Status != TurnFailed || st.LastTurn.Code != "save_failed" || st.LastTurn.Answer != "" || st.Stopped == nil {
		t.Errorf("snapshot after the failed save: %+v (stopped %v), want failed, save_failed, no answer", st.LastTurn, st.Stopped)
	}
	dir := t.TempDir()
	os.Chmod(dir, 0o500) // a directory the store cannot create files in: the same failure for a create
	t.Cleanup(func() { os.Chmod(dir, 0o700) })
	if os.Getuid() != 0 {
		m2, _ := NewManager(ManagerOptions{Store: NewStore(dir), Models: f.m.o.Models, Log: testLog(t)})
		defer m2.Close()
		if _, err := m2.Create(ctx, CreateOptions{}); !errors.Is(err, ErrSaveFailed) {
			t.Errorf("a create that cannot be written = %v, want ErrSaveFailed", err)
		}
	}
	full.Store(false)
	j, err = f.m.Submit(ctx, id, model.TextPart("three"))
	if err != nil {
		t.Fatalf("a submit once the disk has room: %v", err)
	}
	if res, err := j.Wait(ctx); err != nil || res.Answer != "after the disk was freed" {
		t.Fatalf("the turn once the disk has room = %q, %v", res.Answer, err)
	}
	if _, st, _ := f.m.Snapshot(ctx, id); st.LastTurn.Status != TurnDone || st.Stopped != nil {
		t.Errorf("snapshot after: %+v, stopped %v", st.LastTurn, st.Stopped)
	}
}
