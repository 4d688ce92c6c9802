package sessions

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"myco.dev/agent/model"
	"myco.dev/internal/fakemodel"
)

// logBuffer is a log destination that tests read; safe for concurrent use.
type logBuffer struct {
	mu  sync.Mutex // guards buf
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// lines returns the logged lines that contain every one of want.
func (b *logBuffer) lines(want ...string) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for line := range strings.SplitSeq(b.buf.String(), "\n") {
		ok := line != ""
		for _, w := range want {
			ok = ok && strings.Contains(line, w)
		}
		if ok {
			out = append(out, line)
		}
	}
	return out
}

// TestFailuresAreLogged: a turn that fails, and a save that fails and stops the session's
// work, each leave one log line that names the session.
func TestFailuresAreLogged(t *testing.T) {
	for _, tt := range []struct {
		name     string
		turn     fakemodel.Turn
		failSave bool
		want     error  // the job's error
		msg      string // in the log line
	}{
		{"failed turn", fakemodel.Turn{Status: 400, ErrorType: "invalid_request_error", ErrorMessage: "bad request"}, false, nil, `msg="turn failed"`},
		{"failed save", fakemodel.Turn{Text: "never asked"}, true, ErrSaveFailed, "save failed"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var out logBuffer
			f := newManager(t, ManagerOptions{}, tt.turn)
			f.m.log = slog.New(slog.NewTextHandler(&out, nil))
			ctx := t.Context()
			id, err := f.m.Create(ctx, CreateOptions{Title: "titled"})
			if err != nil {
				t.Fatal(err)
			}
			if tt.failSave {
				f.store.openLog = func(string) (logFile, error) { return nil, errors.New("the disk is gone") }
			}
			j, err := f.m.Submit(ctx, id, model.TextPart("go"))
			if err != nil {
				t.Fatal(err)
			}
			_, err = j.Wait(ctx)
			if err == nil || tt.want != nil && !errors.Is(err, tt.want) {
				t.Fatalf("Wait = %v, want a failure (%v)", err, tt.want)
			}
			if got := out.lines(); len(got) != 1 {
				t.Fatalf("logged %d lines, want 1:\n%s", len(got), strings.Join(got, "\n"))
			}
			if got := out.lines(tt.msg, "session_id="+id); len(got) != 1 {
				t.Errorf("log = %q, want one line with %s and the session id", out.lines(), tt.msg)
			}
		})
	}
}
