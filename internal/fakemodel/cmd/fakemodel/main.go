// Command fakemodel serves a scripted model on 127.0.0.1 for the demo and for tests of the
// built binary. It reads a JSON array of fakemodel.Turn from the -script file, prints its
// base URL on the first line of standard output, and serves until standard input closes or
// it is signalled.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"myco.dev/internal/fakemodel"
)

func main() {
	script := flag.String("script", "", "JSON file with an array of scripted turns")
	loop := flag.Bool("loop", false, "start the script again when it runs out")
	flag.Parse()
	if err := run(*script, *loop); err != nil {
		fmt.Fprintln(os.Stderr, "fakemodel:", err)
		os.Exit(1)
	}
}

func run(script string, loop bool) error {
	var turns []fakemodel.Turn
	if script != "" {
		data, err := os.ReadFile(script)
		if err != nil {
			return err
		}
		if err := json.Unmarshal(data, &turns); err != nil {
			return fmt.Errorf("%s: %w", script, err)
		}
	}
	srv, err := fakemodel.Start(turns...)
	if err != nil {
		return err
	}
	defer srv.Close()
	if loop {
		srv.Loop()
	}
	fmt.Println(srv.URL)
	done := make(chan struct{})
	go func() {
		io.Copy(io.Discard, os.Stdin)
		close(done)
	}()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	select {
	case <-done:
	case <-sig:
	}
	return nil
}
