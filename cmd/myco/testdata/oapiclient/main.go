// Command oapiclient drives myco's JSON API with the client oapi-codegen generates from the
// served OpenAPI document (into ./mycoapi, by the test that runs it) and nothing of myco:
// it creates a session, submits a message, streams the turn's events into the generated
// types and reads the answer, then prints what it saw as JSON. MYCO_SERVER_URL is the
// profile's URL.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"example.com/oapiclient/mycoapi"
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
		fmt.Fprintln(os.Stderr, "oapiclient:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := mycoapi.NewClientWithResponses(strings.TrimSuffix(os.Getenv("MYCO_SERVER_URL"), "/") + "/api")
	if err != nil {
		return err
	}
	created, err := c.CreateSessionWithResponse(ctx, mycoapi.CreateRequest{RequestId: "gen-create"})
	if err != nil {
		return err
	}
	if created.JSON201 == nil {
		return fmt.Errorf("create: %d %s", created.StatusCode(), created.Body)
	}
	id := created.JSON201.SessionId

	var action mycoapi.Action
	text := "Say hello."
	if err := action.FromSubmitAction(mycoapi.SubmitAction{RequestId: "gen-submit", Text: &text}); err != nil {
		return err
	}
	submitted, err := c.ActOnSessionWithResponse(ctx, id, action)
	if err != nil {
		return err
	}
	if submitted.JSON200 == nil {
		return fmt.Errorf("submit: %d %s", submitted.StatusCode(), submitted.Body)
	}
	v, err := submitted.JSON200.ValueByDiscriminator()
	if err != nil {
		return err
	}
	answer, ok := v.(mycoapi.SubmitAnswer)
	if !ok || answer.EventId == nil {
		return fmt.Errorf("submit answered %T %+v, want a SubmitAnswer with event_id", v, v)
	}

	// The turn's events, from the cursor just before the submit: a server-sent event's
	// data is one JSON object, an Event.
	resp, err := c.StreamEvents(ctx, &mycoapi.StreamEventsParams{Session: &id, After: answer.EventId})
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	out := report{Session: id}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var ev mycoapi.Event
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			return err
		}
		v, err := ev.ValueByDiscriminator()
		if err != nil {
			return fmt.Errorf("event %s: %w", data, err)
		}
		out.Types = append(out.Types, fmt.Sprintf("%T", v))
		if d, ok := v.(mycoapi.TextDeltaEvent); ok && d.Text != nil {
			out.Text += *d.Text
		}
		if st, ok := v.(mycoapi.StateEvent); ok && !st.Busy {
			break
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}

	got, err := c.GetAnswerWithResponse(ctx, id)
	if err != nil {
		return err
	}
	if got.StatusCode() != 200 {
		return fmt.Errorf("answer: %d %s", got.StatusCode(), got.Body)
	}
	out.Answer = string(got.Body)
	return json.NewEncoder(os.Stdout).Encode(out)
}
