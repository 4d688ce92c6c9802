// Command goclient drives myco's JSON API with myco.dev/client from a module of its own,
// as another project would (the test that runs it puts it in a go.work workspace with
// myco's module, no replace): it creates a session, submits a message, streams the turn's
// events into api's types and reads the answer, then prints what it saw as JSON.
// MYCO_SERVER_URL is the profile's URL.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"myco.dev/api"
	"myco.dev/client"
)

// report is what the program saw.
type report struct {
	Session string   `json:"session"`
	Types   []string `json:"types"` // the Go type of each event, in order
	Text    string   `json:"text"`  // the text deltas, joined
	Answer  string   `json:"answer"`
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "goclient:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := client.FromEnv()
	if err != nil {
		return err
	}
	created, err := c.Create(ctx, api.CreateRequest{RequestID: "client-create"})
	if err != nil {
		return err
	}
	id := created.SessionID
	submitted, err := c.Submit(ctx, id, api.SubmitAction{RequestID: "client-submit", Text: "Say hello."})
	if err != nil {
		return err
	}
	stream, err := c.Events(ctx, client.EventsOptions{Sessions: []string{id}, After: submitted.EventID})
	if err != nil {
		return err
	}
	defer stream.Close()
	out := report{Session: id}
	for {
		ev, err := stream.Next()
		if err != nil {
			return err
		}
		out.Types = append(out.Types, fmt.Sprintf("%T", ev))
		if d, ok := ev.(api.TextDeltaEvent); ok {
			out.Text += d.Text
		}
		if st, ok := ev.(api.StateEvent); ok && !st.Busy {
			break
		}
	}
	if out.Answer, _, _, err = c.Answer(ctx, id); err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(out)
}
