package sessions

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"myco.dev/agent"
	"myco.dev/agent/model"
	"myco.dev/internal/fakemodel"
	"myco.dev/workspace"
)

// benchSession makes a session of n messages (alternating inputs and answers of about 400
// bytes) and a runner checkpoint positioned at its end.
func benchSession(b *testing.B, n int) (*fixture, *turn, []model.Message) {
	b.Helper()
	f := &fixture{store: NewStore(b.TempDir()), tools: &fakeTools{}}
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	f.id = fmt.Sprintf("bench-%d", n)
	th := &Thread{ID: "t1", Created: now}
	text := strings.Repeat("lorem ipsum ", 32)
	for i := range n {
		role := model.User
		if i%2 == 1 {
			role = model.Assistant
		}
		th.Entries = append(th.Entries, Entry{Message: model.Message{Role: role, Parts: []model.Part{model.TextPart(text)}}})
	}
	if err := f.store.Create(b.Context(), &Session{ID: f.id, Created: now, Threads: []*Thread{th}}); err != nil {
		b.Fatal(err)
	}
	doc, err := openDocument(b.Context(), f.store, f.id)
	if err != nil {
		b.Fatal(err)
	}
	rt, err := newRuntime(runtimeOptions{Doc: doc, Owner: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	r, err := newRunner(runnerOptions{Runtime: rt, Agent: func() AgentConfig { return AgentConfig{} }})
	if err != nil {
		b.Fatal(err)
	}
	f.rt, f.runner = rt, r
	th = doc.latest()
	h := doc.history(th)
	return f, newTurn(r, th, h), h
}

// checkpointCost returns the mean time of rounds checkpoints, each adding a model step and
// a tool batch, to the session of tn.
func checkpointCost(b *testing.B, tn *turn, h []model.Message, rounds int) time.Duration {
	step := model.Message{Role: model.Assistant, Parts: []model.Part{model.TextPart("a step"),
		{Kind: model.KindToolCall, ToolCall: &model.ToolCall{ID: "c", Name: "work", Input: []byte(`{}`)}}}}
	res := model.Message{Role: model.User, Parts: []model.Part{{Kind: model.KindToolResult, ToolResult: &model.ToolResult{CallID: "c", Text: "ok"}}}}
	start := time.Now()
	for range rounds {
		h = append(h, step, res)
		if err := tn.checkpoint(b.Context(), h); err != nil {
			b.Fatal(err)
		}
	}
	return time.Since(start) / time.Duration(rounds)
}

// BenchmarkCheckpoint reports the cost of a checkpoint in a 10,000-message session as a
// ratio to one in a 100-message session (the goal is under 1.5), and the load time of the
// 10,000-message session.
func BenchmarkCheckpoint(b *testing.B) {
	_, small, hs := benchSession(b, 100)
	big, large, hl := benchSession(b, 10_000)
	const rounds = 40
	var sumSmall, sumLarge time.Duration
	for b.Loop() {
		sumSmall += checkpointCost(b, small, hs, rounds)
		sumLarge += checkpointCost(b, large, hl, rounds)
		hs, hl = small.r.rt.doc.copyOf(small.th).Messages(), large.r.rt.doc.copyOf(large.th).Messages()
	}
	ratio := float64(sumLarge) / float64(sumSmall)
	start := time.Now()
	const loads = 5
	for range loads {
		if _, err := big.store.Load(b.Context(), big.id); err != nil {
			b.Fatal(err)
		}
	}
	load := time.Since(start) / loads
	b.ReportMetric(ratio, "ckpt10k/ckpt100")
	b.ReportMetric(float64(sumLarge.Microseconds())/float64(b.N), "µs/ckpt10k")
	b.ReportMetric(float64(load.Milliseconds()), "ms/load10k")
}

// BenchmarkPreludeRescan reports the cost of the prelude rescan before a model step, with
// 1,000 unchanged entries, as a ratio to the local overhead of one model step, and the files
// it read again (the goal is none: entries are write-once, so an unchanged stat means
// unchanged content). The step's local overhead is measured two ways against the fake model
// over loopback: a bare agent step on a one-message history (encode, HTTP, decode: the
// least a step costs), and a durable step of the session runner on a 100-message session
// (the same plus the input, step and turn-end records, each fsynced).
func BenchmarkPreludeRescan(b *testing.B) {
	dir := b.TempDir()
	for i := range 1000 {
		name := filepath.Join(dir, fmt.Sprintf("20261203-%06d.000-abcdef.md", i))
		if err := os.WriteFile(name, []byte(strings.Repeat("a durable finding. ", 12)), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	w := workspace.NewWatcher(dir)
	if _, err := w.Prompt(); err != nil {
		b.Fatal(err)
	}
	readsBefore := w.Reads()
	const steps = 20
	srv, client := startModel(b)
	opts := agent.Options{Model: client, APIModel: "m", System: "You are a test agent.", MaxOutputTokens: 100}
	ag := agent.New(opts)
	f, _, _ := benchSession(b, 100)
	runner, err := newRunner(runnerOptions{Runtime: f.rt, Agent: func() AgentConfig { return AgentConfig{Options: opts} }})
	if err != nil {
		b.Fatal(err)
	}
	history := []model.Message{{Role: model.User, Parts: []model.Part{model.TextPart("hi")}}}
	script := func() {
		turns := make([]fakemodel.Turn, steps)
		for i := range turns {
			turns[i] = fakemodel.Turn{Text: "ok"}
		}
		srv.Script(turns...)
	}
	var bare, durable, rescan time.Duration
	for b.Loop() {
		script()
		start := time.Now()
		for range steps {
			if _, _, err := ag.Run(b.Context(), history); err != nil {
				b.Fatal(err)
			}
		}
		bare += time.Since(start) / steps
		script()
		start = time.Now()
		for range steps {
			if _, err := runner.Submit(b.Context(), model.TextPart("next")); err != nil {
				b.Fatal(err)
			}
		}
		durable += time.Since(start) / steps
		start = time.Now()
		for range steps {
			if note, err := w.Step("t1", false); err != nil || note != "" {
				b.Fatalf("Step = %q, %v", note, err)
			}
		}
		rescan += time.Since(start) / steps
	}
	b.ReportMetric(float64(rescan)/float64(bare), "rescan1k/bare-step")
	b.ReportMetric(float64(rescan)/float64(durable), "rescan1k/durable-step")
	b.ReportMetric(float64(rescan.Microseconds())/float64(b.N), "µs/rescan1k")
	b.ReportMetric(float64(w.Reads()-readsBefore), "rereads")
}
