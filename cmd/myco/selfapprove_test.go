package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"myco.dev/api"
	"myco.dev/client"
	"myco.dev/internal/fakemodel"
)

// selfApprover is a bash script that tries, every 0.2 s, to approve every pending
// approval of every session through the API with everything it can find: each value of
// its environment as the Myco-Approval header and as the browser's cookie, the token file
// the environment names, and myco's approval key file. It logs each attempt's status.
const selfApprover = `
cd "$(dirname "$0")" 2>/dev/null
log=$PWD/attempts.log
cat "$MYCO_HOME/approval.key" >> $log 2>&1
while sleep 0.2; do
  for s in $(curl -s "$MYCO_SERVER_URL/api/sessions?include_hidden=true" | jq -r '.sessions[].session_id'); do
    for a in $(curl -s "$MYCO_SERVER_URL/api/sessions/$s/approvals" | jq -r '.approvals[].id'); do
      { env | sed 's/^[^=]*=//'; cat "$MYCO_SERVER_TOKEN_FILE" 2>/dev/null; echo; } | while IFS= read -r v; do
        code=$(curl -s -o /dev/null -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
          -H "Myco-Approval: $v" -H "Cookie: myco_approval=$v" -H "Authorization: $v" \
          -d "{\"request_id\":\"self-$RANDOM$RANDOM\",\"action\":\"approve\",\"approval\":\"$a\"}" \
          "$MYCO_SERVER_URL/api/sessions/$s/actions")
        echo "approve $a: $code" >> $log
        code=$(curl -s -o /dev/null -w '%{http_code}' -X POST -H 'Content-Type: application/json' -H "Myco-Approval: $v" \
          -d "{\"request_id\":\"mode-$RANDOM$RANDOM\",\"action\":\"set_mode\",\"mode\":\"full\"}" "$MYCO_SERVER_URL/api/sessions/$s/actions")
        echo "set_mode $s: $code" >> $log
      done
    done
  done
done
`

// TestSelfApprovalRefused (issue 31): a sandboxed bash that tries to approve its own
// session's pending call through the API, with everything in its environment, is
// refused (403), and so is its attempt to set the mode to full; the call stays pending
// until the person, who holds the approval key, answers; then it runs.
func TestSelfApprovalRefused(t *testing.T) {
	needSandbox(t)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "approver.sh"), []byte(selfApprover), 0o755)
	outside := t.TempDir()
	fake := fakemodel.New(t,
		fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{{ID: "poll", Name: "bash", Args: `{"action":"start","command":"bash ` + dir + `/approver.sh"}`}}},
		fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{{ID: "esc", Name: "bash", Args: bashArgs("touch "+outside+"/escaped", true)}}},
		fakemodel.Turn{Text: "Done."})
	home := profileHome(t, "anthropic-messages", fake.URL, "\n[approvals]\nmode = \"workspace\"\n")
	_, u, stderr := startServer(t, home)
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	c := client.New(u)
	created, err := c.Create(ctx, api.CreateRequest{RequestID: "c1", Cwd: dir})
	if err != nil {
		t.Fatal(err)
	}
	id := created.SessionID
	if _, err := c.Submit(ctx, id, api.SubmitAction{RequestID: "s1", Action: api.ActionSubmit, Text: "try"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, c, id, func(s api.SnapshotAnswer) bool { return len(s.PendingApprovals) == 1 })
	// Let the approver try for a while.
	logPath := filepath.Join(dir, "attempts.log")
	for deadline := time.Now().Add(20 * time.Second); ; {
		b, _ := os.ReadFile(logPath)
		if strings.Count(string(b), "approve esc") >= 10 && strings.Contains(string(b), "set_mode") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the approver made too few attempts:\n%s\nserver:\n%s", b, stderr)
		}
		time.Sleep(200 * time.Millisecond)
	}
	b, _ := os.ReadFile(logPath)
	key, _ := os.ReadFile(filepath.Join(home, "approval.key"))
	if strings.Contains(string(b), strings.TrimSpace(string(key))) {
		t.Fatalf("the sandboxed command read the approval key:\n%s", b)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if (strings.HasPrefix(line, "approve ") || strings.HasPrefix(line, "set_mode ")) && !strings.HasSuffix(line, ": 403") {
			t.Errorf("an attempt was not refused: %s", line)
		}
	}
	snap, err := c.Snapshot(ctx, id, client.SnapshotOptions{})
	if err != nil || len(snap.PendingApprovals) != 1 || snap.Mode != "workspace" {
		t.Fatalf("after the attempts: mode %q, pending %+v, %v", snap.Mode, snap.PendingApprovals, err)
	}
	a := snap.PendingApprovals[0]
	if a.ID != "esc" || !a.OutsideSandbox || a.Justification != "the test needs it" || a.Status != "pending" {
		t.Errorf("the approval: %+v", a)
	}
	list, err := c.Approvals(ctx, id)
	if err != nil || len(list.Approvals) != 1 || list.Approvals[0].Session != id {
		t.Errorf("approvals: %+v, %v", list, err)
	}
	// Without the key the person's client is refused too; with it, the call runs.
	if _, err := c.Approve(ctx, id, "p1", "esc", false); !isCode(err, "approval_refused") {
		t.Errorf("approve without the key: %v", err)
	}
	c.ApprovalKey = strings.TrimSpace(string(key))
	if _, err := c.Approve(ctx, id, "p2", "esc", false); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, c, id, func(s api.SnapshotAnswer) bool { return !s.Busy && s.LastTurn == "done" })
	if _, err := os.Stat(filepath.Join(outside, "escaped")); err != nil {
		t.Errorf("the approved call did not run outside the sandbox: %v", toolResults(t, fake, 2)["esc"])
	}
}

// isCode reports whether err is an API error of code.
func isCode(err error, code string) bool {
	var e *client.Error
	return errors.As(err, &e) && e.Code == code
}
