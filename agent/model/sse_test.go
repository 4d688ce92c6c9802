package model

import (
	"strings"
	"testing"
)

func TestEvents(t *testing.T) {
	in := ": OPENROUTER PROCESSING\n\n" +
		"event: message_start\ndata: {\"a\":1}\n\n" +
		"data: {\"b\":2}\r\n\r\n" +
		"data: line1\ndata: line2\n\n" +
		"event: lonely\n\n" +
		"data: [DONE]"
	var got []Event
	for ev, err := range Events(strings.NewReader(in)) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ev)
	}
	want := []Event{
		{Name: "message_start", Data: `{"a":1}`},
		{Data: `{"b":2}`},
		{Data: "line1\nline2"},
		{Data: "[DONE]"},
	}
	if len(got) != len(want) {
		t.Fatalf("Events = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("event %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}
