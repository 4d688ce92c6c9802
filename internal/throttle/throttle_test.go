package throttle

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// TestLatest drives the reports on the fake clock: the first is sent at once, later ones at
// most once per interval (the newest), and nothing after Stop; Stop(true) sends the newest
// unsent one first, Stop(false) drops it.
func TestLatest(t *testing.T) {
	for _, flush := range []bool{true, false} {
		t.Run(fmt.Sprint("flush=", flush), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				start := time.Now()
				var mu sync.Mutex
				var sent []string
				l := &Latest{Every: time.Second, Send: func(s string) {
					mu.Lock()
					defer mu.Unlock()
					sent = append(sent, fmt.Sprintf("%s@%s", s, time.Since(start)))
				}}
				at := func(d time.Duration) {
					time.Sleep(start.Add(d).Sub(time.Now()))
					synctest.Wait()
				}
				l.Report("a") // sent at once
				at(100 * time.Millisecond)
				l.Report("b")
				at(200 * time.Millisecond)
				l.Report("c") // b superseded; c goes out at 1 s
				at(2500 * time.Millisecond)
				l.Report("d") // the last send was 1.5 s ago: at once
				at(2600 * time.Millisecond)
				l.Report("e") // due at 3.5 s, but Stop comes first
				at(3 * time.Second)
				l.Stop(flush)
				l.Report("f") // after Stop: never sent
				at(10 * time.Second)
				want := []string{"a@0s", "c@1s", "d@2.5s"}
				if flush {
					want = append(want, "e@3s")
				}
				mu.Lock()
				defer mu.Unlock()
				if !slices.Equal(sent, want) {
					t.Errorf("sent %v, want %v", sent, want)
				}
			})
		})
	}
}
