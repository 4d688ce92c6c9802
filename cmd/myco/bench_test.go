package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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
