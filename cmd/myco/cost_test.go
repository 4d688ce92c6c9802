package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"myco.dev/cli"
	"myco.dev/internal/fakemodel"
)

// pricesTOML are the prices of the cost tests: 3 a million input tokens, 15 output, 0.3 a
// cached read and 3.75 a cache write.
const pricesTOML = "[models.m.prices]\ninput = 3\noutput = 15\ncache_read = 0.3\ncache_write = 3.75\n"

// costOf is what usage u costs at pricesTOML's prices; the fake's Input counts only the
// prompt tokens neither read from a cache nor written to one.
func costOf(u fakemodel.Usage) float64 {
	return (float64(u.Input)*3 + float64(u.Output)*15 + float64(u.CacheRead)*0.3 + float64(u.CacheWrite)*3.75) / 1e6
}

// TestCostThreeProtocols (issue 32): the catalog's prices turn the usage each protocol
// reports, its cached tokens counted as such (Anthropic's cache reads and writes, the
// OpenAI protocols' cached_tokens), into the cost of each step and turn in --json's events
// and of the turn and the tree in -p's result object; a model without prices says the cost
// is unknown, never 0.
func TestCostThreeProtocols(t *testing.T) {
	for _, protocol := range []string{"anthropic-messages", "openai-responses", "openai-completions"} {
		t.Run(protocol, func(t *testing.T) {
			step1 := fakemodel.Usage{Input: 1000, Output: 100, CacheRead: 4000}
			step2 := fakemodel.Usage{Input: 200, Output: 50, CacheRead: 5000}
			if protocol == "anthropic-messages" {
				step1.CacheWrite, step2.CacheWrite = 2000, 300
			}
			fake := fakemodel.New(t,
				fakemodel.Turn{Text: "Looking.", ToolCalls: []fakemodel.ToolCall{{ID: "c1", Name: "bash", Args: `{"command":"true"}`}}, Usage: step1},
				fakemodel.Turn{Text: "Done.", Usage: step2},
				fakemodel.Turn{Text: "Again.", Usage: step2},
				fakemodel.Turn{Text: "Free?", Usage: step2},
			)
			home := profileHome(t, protocol, fake.URL, pricesTOML)

			stdout, stderr, status := runOneShot(t, home, "-p", "look", "--json")
			if status != cli.ExitOK {
				t.Fatalf("-p --json = %d\n%s", status, stderr)
			}
			var steps []float64
			var done float64 = -1
			for _, ev := range events(t, stdout) {
				c, _ := ev["cost"].(map[string]any)
				switch ev["type"] {
				case "step":
					if c == nil || c["known"] != true {
						t.Fatalf("a step event without a known cost: %v", ev)
					}
					steps = append(steps, c["amount"].(float64))
				case "done":
					if c == nil || c["known"] != true {
						t.Fatalf("the done event without a known cost: %v", ev)
					}
					done = c["amount"].(float64)
				}
			}
			want1, want2 := costOf(step1), costOf(step2)
			if len(steps) != 2 || !near(steps[0], want1) || !near(steps[1], want2) || !near(done, want1+want2) {
				t.Errorf("costs of the steps %v and the turn %g, want [%g %g] and %g", steps, done, want1, want2, want1+want2)
			}

			stdout, stderr, status = runOneShot(t, home, "-p", "again", "--resume", "last", "--output-format", "json")
			if status != cli.ExitOK {
				t.Fatalf("--output-format json = %d\n%s", status, stderr)
			}
			var r cli.Result
			if err := json.Unmarshal([]byte(stdout), &r); err != nil {
				t.Fatalf("the result: %v\n%s", err, stdout)
			}
			if r.Cost == nil || !r.Cost.Known || !near(r.Cost.Amount, want2) {
				t.Errorf("the result's cost = %+v, want %g", r.Cost, want2)
			}
			if r.TreeCost == nil || !r.TreeCost.Known || !near(r.TreeCost.Amount, want1+2*want2) {
				t.Errorf("the result's tree cost = %+v, want %g (the session so far)", r.TreeCost, want1+2*want2)
			}

			// The same model without prices: the cost is unknown, not 0.
			free := profileHome(t, protocol, fake.URL, "")
			stdout, _, _ = runOneShot(t, free, "-p", "free?", "--output-format", "json")
			r = cli.Result{}
			if err := json.Unmarshal([]byte(stdout), &r); err != nil {
				t.Fatalf("the result: %v\n%s", err, stdout)
			}
			if r.Cost == nil || r.Cost.Known || r.TreeCost == nil || r.TreeCost.Known || strings.Contains(stdout, `"known":true`) {
				t.Errorf("a model without prices: cost %+v, tree cost %+v, want both unknown\n%s", r.Cost, r.TreeCost, stdout)
			}
		})
	}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-12 }

// TestOneShotMaxCost (issue 32): myco -p --max-cost stops the turn at its next model
// request once the session's tree cost that much: the tool call the first response asked
// for ran and is saved, the result says budget_reached in plain words, and the exit status
// is 6; the config's max_cost does the same for every tree.
func TestOneShotMaxCost(t *testing.T) {
	step := fakemodel.Usage{Input: 1000, Output: 100, CacheRead: 4000, CacheWrite: 2000} // 0.0123
	fake := fakemodel.New(t,
		fakemodel.Turn{Text: "Looking.", ToolCalls: []fakemodel.ToolCall{{ID: "c1", Name: "bash", Args: `{"command":"echo ran > ran.txt"}`}}, Usage: step},
		fakemodel.Turn{Text: "never sent", Usage: step},
	)
	home := profileHome(t, "anthropic-messages", fake.URL, pricesTOML)
	stdout, stderr, status := runOneShot(t, home, "-p", "look", "--max-cost", "0.01", "--output-format", "json")
	if status != cli.ExitBudget {
		t.Fatalf("-p --max-cost 0.01 = %d, want %d\n%s\n%s", status, cli.ExitBudget, stdout, stderr)
	}
	var r cli.Result
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatalf("the result: %v\n%s", err, stdout)
	}
	if r.Status != "failed" || r.Code != "budget_reached" || !strings.Contains(r.Error, "reached its budget of $0.01") ||
		!strings.Contains(r.Error, "nothing it did is lost") || r.ExitStatus != cli.ExitBudget {
		t.Errorf("the result = %+v, want failed with budget_reached", r)
	}
	if r.TreeCost == nil || !near(r.TreeCost.Amount, costOf(step)) {
		t.Errorf("the tree cost = %+v, want %g", r.TreeCost, costOf(step))
	}
	if n := len(fake.Requests()); n != 1 {
		t.Errorf("the model got %d requests, want 1: the budget stops the second", n)
	}

	// The config's max_cost: the same for a tree without a budget of its own.
	fake2 := fakemodel.New(t,
		fakemodel.Turn{Text: "Looking.", ToolCalls: []fakemodel.ToolCall{{ID: "c1", Name: "bash", Args: `{"command":"true"}`}}, Usage: step},
		fakemodel.Turn{Text: "never sent", Usage: step},
	)
	home2 := profileHome(t, "anthropic-messages", fake2.URL, pricesTOML)
	cfg := filepath.Join(home2, "profiles", "default", "config.toml")
	b, _ := os.ReadFile(cfg)
	os.WriteFile(cfg, append([]byte("max_cost = 0.005\n"), b...), 0o600)
	stdout, stderr, status = runOneShot(t, home2, "-p", "look", "--json")
	if status != cli.ExitBudget || !strings.Contains(stdout, `"code":"budget_reached"`) || !strings.Contains(stderr, "budget") {
		t.Errorf("config max_cost: status %d, want %d with an error event budget_reached\n%s\n%s", status, cli.ExitBudget, stdout, stderr)
	}
}
