package main

// What a session keeps across the events that end a process or a thread: a worker's crash
// and a compaction.

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"myco.dev/internal/fakemodel"
)

// TestRetryAfterWorkerCrash: a turn whose bash call is running when its profile's worker
// is killed (SIGKILL) is recovered by the restarted worker as interrupted, the call's
// outcome unknown; Retry then runs the turn again, and the model's request carries the
// call with a result saying what happened and a notice of the interrupted batch, so that
// the conversation is valid and the model knows the command may or may not have run.
func TestRetryAfterWorkerCrash(t *testing.T) {
	dir := t.TempDir()
	fake := fakemodel.New(t,
		fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{{ID: "b1", Name: "bash", Args: `{"command":"echo $$ > ` + dir + `/pid; sleep 300"}`}}},
		fakemodel.Turn{Text: "recovered"})
	home := profileHome(t, "anthropic-messages", fake.URL, "")
	_, u, _ := startServer(t, home)
	root := strings.TrimSuffix(u, "/profiles/default/")
	c := apiClient{t, root + "/profiles/default/api"}

	_, out := c.post("/sessions", `{"request_id":"c"}`)
	id := out["session_id"].(string)
	if code, out := c.post("/sessions/"+id+"/actions", `{"request_id":"s","action":"submit","text":"sleep"}`); code != 200 {
		t.Fatalf("submit = %d %v", code, out)
	}
	tool := waitPID(t, filepath.Join(dir, "pid"), time.Now().Add(20*time.Second))
	pid := workerPID(t, root, "default")
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitEnded(t, "the killed worker's tool", time.Now().Add(15*time.Second), tool)
	snap := c.wait(id)
	if snap["last_turn"] == "done" {
		t.Fatalf("the crashed turn reads as done: %v", snap)
	}
	if code, out := c.post("/sessions/"+id+"/actions", `{"request_id":"r","action":"retry"}`); code != 200 || out["result"] != "started" {
		t.Fatalf("retry = %d %v", code, out)
	}
	snap = c.wait(id)
	if snap["answer"] != "recovered" || snap["last_turn"] != "done" {
		t.Fatalf("after the retry: %v", snap)
	}
	reqs := fake.Requests()
	if len(reqs) != 2 {
		t.Fatalf("the model got %d requests, want 2", len(reqs))
	}
	req := decodeReq(t, reqs[1])
	if r := results(t, req)["bash"]; !r.isError || !strings.Contains(r.text, "outcome unknown: myco stopped while this call was running") {
		t.Errorf("the interrupted call's result = %+v, want an error saying its outcome is unknown", r)
	}
	told := false
	for _, m := range req.Messages {
		for _, c := range m.Content {
			told = told || strings.HasPrefix(c.Text, "[myco: interrupted tool batch] The process running this session stopped")
		}
	}
	if !told {
		t.Error("the retried request does not tell the model that the process stopped during its tool batch")
	}
}

// TestBashSessionSurvivesCompaction: a bash session started before a compaction is the
// same process after it: a variable set in it before is read back after, in the compacted
// thread, and the model's first request there lists the session among the handles it
// holds.
func TestBashSessionSurvivesCompaction(t *testing.T) {
	fake := fakemodel.New(t,
		fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{{ID: "s1", Name: "bash", Args: `{"action":"start","command":"bash --noprofile --norc"}`}}},
		fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{{ID: "w1", Name: "bash", Args: `{"action":"write","session_id":"b1","input":"KEPT=before-compaction; echo set","timeout_secs":10}`}}},
		fakemodel.Turn{Text: "ready"},
		fakemodel.Turn{Text: "The summary: a bash session b1 holds KEPT."},
		fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{{ID: "w2", Name: "bash", Args: `{"action":"write","session_id":"b1","input":"echo value=$KEPT","timeout_secs":10}`}}},
		fakemodel.Turn{Text: "done"})
	home := profileHome(t, "anthropic-messages", fake.URL, "")
	_, u, _ := startServer(t, home)
	c := apiClient{t, strings.TrimSuffix(u, "/profiles/default/") + "/profiles/default/api"}

	id, snap := c.run("c", "start a shell")
	if snap["answer"] != "ready" {
		t.Fatalf("the first turn: %v", snap)
	}
	if code, out := c.post("/sessions/"+id+"/actions", `{"request_id":"k","action":"compact"}`); code != 200 || out["result"] != "started" {
		t.Fatalf("compact = %d %v", code, out)
	}
	c.wait(id)
	if code, out := c.post("/sessions/"+id+"/actions", `{"request_id":"s2","action":"submit","text":"read it back"}`); code != 200 {
		t.Fatalf("submit = %d %v", code, out)
	}
	if snap := c.wait(id); snap["answer"] != "done" {
		t.Fatalf("the turn after the compaction: %v", snap)
	}
	reqs := fake.Requests()
	if len(reqs) != 6 {
		t.Fatalf("the model got %d requests, want 6", len(reqs))
	}
	if got := results(t, decodeReq(t, reqs[5]))["bash"]; !strings.Contains(got.text, "value=before-compaction") {
		t.Errorf("the bash session after the compaction answered %+v, want value=before-compaction", got)
	}
	held := false
	for _, m := range decodeReq(t, reqs[4]).Messages {
		for _, c := range m.Content {
			held = held || strings.HasPrefix(c.Text, "[myco: runtime]") && strings.Contains(c.Text, "b1")
		}
	}
	if !held {
		t.Error("the compacted thread's first request does not list bash session b1 among the handles held")
	}
}
