package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"myco.dev/hosts/mcp/mcptest"
	"myco.dev/hosts/sandbox"
	"myco.dev/internal/fakemodel"
)

// TestMain makes the test binary the commands of the scripts, on the PATH of every test:
// myco, and fakemcp, the fake MCP server of mcptest.Serve (a stdio server that can crash
// in the middle of a call).
func TestMain(m *testing.M) {
	sandbox.Main() // the test binary fences commands in, as myco does
	testscript.Main(cleanup{m}, map[string]func(){
		"myco":    func() { os.Exit(run()) },
		"fakemcp": func() { os.Exit(mcptest.Serve()) },
	})
}

// cleanup runs the tests and then removes the binary that [binary] built for them.
type cleanup struct{ m *testing.M }

func (c cleanup) Run() int {
	code := c.m.Run()
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	return code
}

// TestScripts runs the CLI scripts in testdata/script against the real binary (re-executed
// test binary) and the scripted fake model over real HTTP on 127.0.0.1.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir: "testdata/script",
		Setup: func(env *testscript.Env) error {
			env.Setenv("MYCO_HOME", filepath.Join(env.WorkDir, "home"))
			env.Setenv("HOME", filepath.Join(env.WorkDir, "userhome"))
			env.Setenv("MYCO_PROFILE", "")
			env.Setenv("MYCO_CONFIG", "")
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"fake":     cmdFake,
			"fakereqs": cmdFakeRequests,
			"expand":   cmdExpand,
		},
	})
}

// fakes maps a running script to its fake model server; scripts run in parallel.
var fakes sync.Map // *testscript.TestScript -> *fakemodel.Server

// cmdFake starts a fake model serving the turns in a JSON file and sets $FAKE_URL.
//
//	fake turns.json
func cmdFake(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: fake TURNS.json")
	}
	var turns []fakemodel.Turn
	if err := json.Unmarshal([]byte(ts.ReadFile(args[0])), &turns); err != nil {
		ts.Fatalf("%s: %v", args[0], err)
	}
	srv, err := fakemodel.Start(turns...)
	if err != nil {
		ts.Fatalf("%v", err)
	}
	fakes.Store(ts, srv)
	ts.Defer(func() {
		srv.Close()
		fakes.Delete(ts)
	})
	ts.Setenv("FAKE_URL", srv.URL)
}

// cmdFakeRequests writes the bodies of the requests the fake received, one per line, to a
// file, so the script can grep them; the first argument is the file, an optional second
// one the number of requests expected.
//
//	fakereqs reqs.txt [N]
func cmdFakeRequests(ts *testscript.TestScript, neg bool, args []string) {
	v, ok := fakes.Load(ts)
	if !ok || len(args) < 1 {
		ts.Fatalf("usage: fakereqs FILE [N] after fake")
	}
	reqs := v.(*fakemodel.Server).Requests()
	var b strings.Builder
	for _, r := range reqs {
		auth := r.Header.Get("Authorization") + r.Header.Get("X-Api-Key")
		b.WriteString(r.Path + " auth=" + auth + " " + strings.ReplaceAll(string(r.Body), "\n", " ") + "\n")
	}
	if err := os.WriteFile(ts.MkAbs(args[0]), []byte(b.String()), 0o644); err != nil {
		ts.Fatalf("%v", err)
	}
	if len(args) == 2 {
		if got := len(reqs); strings.TrimSpace(args[1]) != itoa(got) {
			ts.Fatalf("fake received %d requests, want %s", got, args[1])
		}
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// cmdExpand copies a file, replacing $NAME and ${NAME} with the script's environment, so a
// config file can carry the fake model's URL.
//
//	expand SRC DST
func cmdExpand(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: expand SRC DST")
	}
	out := os.Expand(ts.ReadFile(args[0]), ts.Getenv)
	dst := ts.MkAbs(args[1])
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		ts.Fatalf("%v", err)
	}
	if err := os.WriteFile(dst, []byte(out), 0o644); err != nil {
		ts.Fatalf("%v", err)
	}
}
