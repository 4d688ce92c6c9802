// Command reaperdriver is the reaper tests' stand-in for myco. "reaperdriver reaper ..."
// is its reaper mode ([reaper.Main]; the arguments after it only mark the process for the
// test). "reaperdriver -dir DIR" starts a bash tool with a reaper and runs two commands
// that leave `sleep 300` running, one as an exec call and one as a start session; each
// writes its shell's and its sleep's pid to DIR/exec.bash, DIR/exec.sleep, DIR/start.bash
// and DIR/start.sleep, and prints "tracked PGID" once the reaper has the group. Then it
// waits to be killed. With -reaper=false the bash tool has no reaper.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"myco.dev/hosts/tools"
	"myco.dev/internal/reaper"
)

// announcer prints "tracked PGID" once the reaper has a group, so the test kills the
// driver only after that: a process killed between starting a group and registering it
// leaves the group behind, and that moment is not what the test is about.
type announcer struct{ *reaper.Reaper }

func (a announcer) Track(pgid int) func() {
	untrack := a.Reaper.Track(pgid)
	fmt.Println("tracked", pgid)
	return untrack
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "reaper" {
		os.Exit(reaper.Main(os.Stdin, os.Stdout))
	}
	dir := flag.String("dir", "", "directory for the pid files")
	withReaper := flag.Bool("reaper", true, "give the bash tool a reaper")
	flag.Parse()
	opts := tools.BashOptions{}
	if *withReaper {
		opts.Reaper = announcer{reaper.New(reaper.Options{Path: "/proc/self/exe", Argv: []string{"reaperdriver", "reaper", *dir}})}
	}
	b := tools.NewBash(opts)
	command := func(name string) string {
		p := filepath.Join(*dir, name)
		return fmt.Sprintf("echo $$ > %s.bash.tmp && mv %[1]s.bash.tmp %[1]s.bash; sleep 300 & echo $! > %[1]s.sleep.tmp && mv %[1]s.sleep.tmp %[1]s.sleep; wait", p)
	}
	in := func(action, name string) json.RawMessage {
		b, _ := json.Marshal(map[string]string{"action": action, "command": command(name)})
		return b
	}
	go b.Call(context.Background(), "driver", in("exec", "exec"))
	if res := b.Call(context.Background(), "driver", in("start", "start")); res.IsError {
		fmt.Fprintln(os.Stderr, res.Text)
		os.Exit(1)
	}
	time.Sleep(time.Hour) // until the test kills it
}
