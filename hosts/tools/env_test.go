package tools

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

func TestWithoutEnv(t *testing.T) {
	t.Setenv("MYCO_TEST_SECRET", "sk-hidden")
	t.Setenv("MYCO_TEST_PLAIN", "visible")
	b := NewBash(BashOptions{})
	defer b.Close()
	ctx := WithoutEnv(context.Background(), []string{"MYCO_TEST_SECRET"})
	for _, in := range []string{
		`{"command":"env"}`,
		`{"action":"start","command":"env; sleep 0.2"}`,
	} {
		res := b.Call(ctx, "o1", json.RawMessage(in))
		if strings.Contains(res.Text, "sk-hidden") || !strings.Contains(res.Text, "MYCO_TEST_PLAIN=visible") {
			t.Errorf("bash %s under WithoutEnv(MYCO_TEST_SECRET):\n%s\nwant the plain variable and not the secret", in, res.Text)
		}
	}
	// A session's shell got the stripped environment at start, so what it runs later (a
	// write, under a ctx without WithoutEnv) does not see the variable either.
	if res := b.Call(ctx, "o2", json.RawMessage(`{"action":"start","command":"bash --noprofile --norc"}`)); res.IsError {
		t.Fatalf("start = %+v", res)
	}
	res := b.Call(context.Background(), "o2", json.RawMessage(`{"action":"write","session_id":"b1","input":"env; echo END"}`))
	if strings.Contains(res.Text, "sk-hidden") || !strings.Contains(res.Text, "MYCO_TEST_PLAIN=visible") {
		t.Errorf("env written to a session started under WithoutEnv(MYCO_TEST_SECRET):\n%s\nwant the plain variable and not the secret", res.Text)
	}
	res = b.Call(context.Background(), "o1", json.RawMessage(`{"command":"env"}`))
	if !strings.Contains(res.Text, "sk-hidden") {
		t.Errorf("bash env without WithoutEnv lost the variable:\n%s", res.Text)
	}
}
