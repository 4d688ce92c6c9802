package hosts

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// TestProgressSenderThrottle drives one call's reports on the fake clock: the first is
// sent at once, later ones at most once per progressEvery (the newest), the newest unsent
// one just before the result, and nothing after it.
func TestProgressSenderThrottle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		var mu sync.Mutex
		var sent []string
		p := &progressSender{send: func(tail string) {
			mu.Lock()
			defer mu.Unlock()
			sent = append(sent, fmt.Sprintf("%s@%s", tail, time.Since(start)))
		}}
		at := func(d time.Duration) {
			time.Sleep(start.Add(d).Sub(time.Now()))
			synctest.Wait()
		}
		p.report("a") // sent at once
		at(100 * time.Millisecond)
		p.report("b")
		at(200 * time.Millisecond)
		p.report("c") // b superseded; c goes out at 1 s
		at(2500 * time.Millisecond)
		p.report("d") // the last send was 1.5 s ago: at once
		at(2600 * time.Millisecond)
		p.report("e") // due at 3.5 s, but the result comes first
		at(3 * time.Second)
		p.finish()
		p.report("f") // after the result: never sent
		at(10 * time.Second)
		mu.Lock()
		defer mu.Unlock()
		if want := []string{"a@0s", "c@1s", "d@2.5s", "e@3s"}; !slices.Equal(sent, want) {
			t.Errorf("sent %v, want %v", sent, want)
		}
	})
}
