package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"myco.dev/agent"
	"myco.dev/agent/model"
	"myco.dev/agent/model/anthropic"
	"myco.dev/hosts"
	"myco.dev/hosts/tools"
	"myco.dev/internal/fakemodel"
)

// BenchmarkToolRoundTrip measures one tool round trip of the agent loop (a model step
// asking for `bash` exec of `true` and the step that answers, over loopback HTTP to the
// fake model) and a bare `bash -c true` fork/exec in the same run, and reports their ratio.
func BenchmarkToolRoundTrip(b *testing.B) {
	srv := fakemodel.New(b,
		fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{{Name: "bash", Args: `{"command":"true"}`}}},
		fakemodel.Turn{Text: "done"},
	)
	srv.Loop()
	std := []tools.Tool{tools.NewBash(tools.BashOptions{}), tools.NewEditor(tools.EditorOptions{}), tools.NewImage(tools.ImageOptions{})}
	h, err := hosts.NewHarness(hosts.Options{Tools: std})
	if err != nil {
		b.Fatal(err)
	}
	exec := h.For("bench")
	defer h.Release("bench")
	client := &model.Client{Protocol: anthropic.Protocol{}, BaseURL: srv.URL, Retry: model.RetryPolicy{MaxAttempts: 1}}
	ag := agent.New(agent.Options{Model: client, Tools: exec, APIModel: "m", MaxOutputTokens: 1024,
		System: agent.SystemPrompt(agent.PromptOptions{Tools: exec.Specs(), Hosts: h.Hosts()})})
	history := []model.Message{{Role: model.User, Parts: []model.Part{model.TextPart("run true")}}}

	const n = 30
	bare := timeIt(n, func() {
		if err := execTrue(); err != nil {
			b.Fatal(err)
		}
	})
	loop := timeIt(n, func() {
		if _, res, err := ag.Run(b.Context(), history); err != nil || res.Answer != "done" {
			b.Fatalf("Run = %+v, %v", res, err)
		}
	})
	for b.Loop() {
	}
	b.ReportMetric(float64(loop.Microseconds()), "µs/round-trip")
	b.ReportMetric(float64(bare.Microseconds()), "µs/bash-c-true")
	b.ReportMetric(float64(loop)/float64(bare), "x-bare-fork")
}

func execTrue() error { return exec.Command("/bin/bash", "-c", "true").Run() }

// timeIt returns the median duration of n runs of f.
func timeIt(n int, f func()) time.Duration {
	ds := make([]time.Duration, n)
	for i := range ds {
		start := time.Now()
		f()
		ds[i] = time.Since(start)
	}
	for i := 1; i < len(ds); i++ {
		for j := i; j > 0 && ds[j] < ds[j-1]; j-- {
			ds[j], ds[j-1] = ds[j-1], ds[j]
		}
	}
	return ds[n/2]
}

// BenchmarkPeakMemory20Steps runs the real binary through a 20-step myco -p turn (19 bash
// calls and an answer) and reports its peak resident memory.
func BenchmarkPeakMemory20Steps(b *testing.B) {
	bin := binary(b)
	var turns []fakemodel.Turn
	for i := range 19 {
		turns = append(turns, fakemodel.Turn{Text: fmt.Sprintf("step %d", i), ToolCalls: []fakemodel.ToolCall{
			{ID: fmt.Sprintf("call_%d", i), Name: "bash", Args: `{"command":"seq 1 2000"}`}}})
	}
	turns = append(turns, fakemodel.Turn{Text: "finished"})
	script, _ := json.Marshal(turns)
	var maxRSS int64
	for b.Loop() {
		srv, err := fakemodel.Start()
		if err != nil {
			b.Fatal(err)
		}
		if err := json.Unmarshal(script, &turns); err != nil {
			b.Fatal(err)
		}
		srv.Script(turns...)
		home := profileHome(b, "anthropic-messages", srv.URL, "")
		cmd := exec.Command(bin, "-p", "twenty steps")
		cmd.Env = append(os.Environ(), "MYCO_HOME="+home, "MYCO_PROFILE=", "MYCO_CONFIG=")
		out, err := cmd.Output()
		srv.Close()
		if err != nil || string(out) != "finished\n" {
			b.Fatalf("myco -p = %q, %v", out, err)
		}
		ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
		maxRSS = max(maxRSS, ru.Maxrss) // KiB on Linux
		os.RemoveAll(filepath.Join(home, "profiles"))
	}
	b.ReportMetric(float64(maxRSS)/1024, "MiB-peak-rss")
}

// BenchmarkSnapshotRoundTrip20Steps (issue 30) runs the real binary through a 20-step
// myco -p turn (19 bash calls and an answer) in an empty directory, with the captures of
// the session's files on and off, in turns so that both see the same load, and reports
// the medians and their ratio: a capture around each batch must stay cheap (the issue
// asks for at most 1.5×).
func BenchmarkSnapshotRoundTrip20Steps(b *testing.B) {
	bin := binary(b)
	var turns []fakemodel.Turn
	for i := range 19 {
		turns = append(turns, fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{{ID: fmt.Sprintf("call_%d", i), Name: "bash", Args: `{"command":"true"}`}}})
	}
	turns = append(turns, fakemodel.Turn{Text: "finished"})
	srv := fakemodel.New(b)
	homes := map[bool]string{
		true:  profileHome(b, "anthropic-messages", srv.URL, ""),
		false: profileHome(b, "anthropic-messages", srv.URL, "[snapshots]\nenabled = false\n"),
	}
	run := func(on bool) time.Duration {
		srv.Script(turns...)
		cmd := exec.Command(bin, "-p", "twenty steps")
		cmd.Dir = b.TempDir()
		cmd.Env = append(os.Environ(), "MYCO_HOME="+homes[on], "MYCO_PROFILE=", "MYCO_CONFIG=")
		start := time.Now()
		out, err := cmd.Output()
		d := time.Since(start)
		if err != nil || string(out) != "finished\n" {
			b.Fatalf("myco -p = %q, %v", out, err)
		}
		return d
	}
	const n = 15
	var with, without []time.Duration
	run(true) // the build's first start, the caches
	run(false)
	for range n {
		with = append(with, run(true))
		without = append(without, run(false))
	}
	for b.Loop() {
	}
	med := func(ds []time.Duration) time.Duration {
		slices.Sort(ds)
		return ds[len(ds)/2]
	}
	b.ReportMetric(float64(med(with).Milliseconds()), "ms/with-captures")
	b.ReportMetric(float64(med(without).Milliseconds()), "ms/without")
	b.ReportMetric(float64(med(with))/float64(med(without)), "x-without")
}
