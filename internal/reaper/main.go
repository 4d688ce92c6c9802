package reaper

import (
	"bufio"
	"io"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"
)

// ready is what [Main] writes to its standard output once it listens, and what the
// starter waits for before it trusts the reaper with a group.
const ready = "reaper ready\n"

// Main runs a reaper. myco's hidden reaper mode calls it with the process's standard input
// (the pipe from its myco) and standard output (the ready line), before it does anything
// else, and exits with the status it returns. It reads "+PGID" and "-PGID" lines from
// stdin until end of file or a read error, then sends SIGKILL to every process group still
// registered and returns 0. It does the same when it finds its parent gone (it was
// reparented): it checks every second, and every 20 ms for a while after a SIGTERM, its
// parent-death signal on Linux. A SIGTERM while the parent lives (a signal meant for
// someone else, or the end of the parent's thread that started it) changes nothing else.
// SIGINT, SIGHUP and SIGQUIT are ignored.
func Main(stdin io.Reader, stdout io.Writer) int {
	signal.Ignore(syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT)
	defer signal.Reset(syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT)
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	defer signal.Stop(term)
	parent := os.Getppid()
	if _, err := io.WriteString(stdout, ready); err != nil {
		return 1
	}
	if c, ok := stdout.(io.Closer); ok {
		c.Close()
	}

	lines := make(chan string)
	done := make(chan struct{})
	defer close(done)
	go func() { // a read in progress ends with the process, which exits when Main returns
		defer close(lines)
		sc := bufio.NewScanner(stdin)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			case <-done:
				return
			}
		}
	}()
	groups := map[int]bool{}
	self := syscall.Getpgrp()
	// The parent is also checked now and then: a parent-death signal can be lost. When the
	// parent's threads end one by one, the first signal may come while the parent lives
	// on in another thread, and a second merges with it; there is none without Linux.
	check := time.NewTicker(time.Second)
	defer check.Stop()
	var often time.Time // until when to check often, after a SIGTERM
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				killAll(groups)
				return 0
			}
			op, n := parse(line)
			if n <= 1 || n == self {
				continue // never kill -1 (everything) or our own group
			}
			if op == '+' {
				groups[n] = true
			} else {
				delete(groups, n)
			}
		case <-term:
			check.Reset(20 * time.Millisecond)
			often = time.Now().Add(5 * time.Second)
		case now := <-check.C:
			if os.Getppid() != parent {
				killAll(groups)
				return 0
			}
			if !often.IsZero() && now.After(often) {
				check.Reset(time.Second)
				often = time.Time{}
			}
		}
	}
}

// parse reads "+PGID" or "-PGID"; anything else gives 0.
func parse(line string) (op byte, pgid int) {
	if len(line) < 2 || line[0] != '+' && line[0] != '-' {
		return 0, 0
	}
	n, err := strconv.Atoi(line[1:])
	if err != nil || line[1] == '+' || line[1] == '-' {
		return 0, 0
	}
	return line[0], n
}

func killAll(groups map[int]bool) {
	for pgid := range groups {
		syscall.Kill(-pgid, syscall.SIGKILL)
	}
}
