// Package sessiongen writes session files (schema 5 logs) of made-up conversations, many of
// them fast, for benchmarks and tests at scale: the list and the search over thousands of
// sessions. It writes the log's records itself (no fsync per file); a test of its own
// loads them with package sessions. It imports only the standard library.
package sessiongen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Options say what to write.
type Options struct {
	Sessions int           // how many
	Messages int           // messages each: user and assistant in turns, a tool call now and then
	Dirs     []string      // the sessions' directories, round robin; none means "/tmp"
	Now      time.Time     // the newest session's time; older ones go back Every each
	Every    time.Duration // 0 means a minute
	Seed     uint64
	// Mixed ends some sessions' last turn otherwise than with an answer: every 7th with a
	// rate limit (Retry mends it), every 11th with a refused credential.
	Mixed bool
}

// words are what the made-up messages are made of.
var words = strings.Fields(`the parser lexer token test build fails passes fix bug error function module package
file line column config server client request response stream buffer cache index search query
list page session model answer tool command output input user agent thread turn budget cost price
project directory branch commit merge review refactor rename import export struct method field
value pointer slice map channel goroutine mutex lock deadline context cancel retry timeout socket
http json yaml toml markdown render template view handler route middleware logger metric trace`)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Write writes o.Sessions session files into dir and returns their ids, newest first.
func Write(dir string, o Options) ([]string, error) {
	if o.Now.IsZero() {
		o.Now = time.Now().UTC()
	}
	if len(o.Dirs) == 0 {
		o.Dirs = []string{"/tmp"}
	}
	if o.Every <= 0 {
		o.Every = time.Minute
	}
	r := rand.New(rand.NewPCG(o.Seed, 7))
	ids := make([]string, 0, o.Sessions)
	var buf bytes.Buffer
	for i := range o.Sessions {
		at := o.Now.Add(-time.Duration(i) * o.Every).UTC()
		id := fmt.Sprintf("%s-%06x", at.Format("20060102-150405"), i)
		buf.Reset()
		if err := session(&buf, r, id, at, o.Dirs[i%len(o.Dirs)], o.Messages); err != nil {
			return nil, err
		}
		if o.Mixed && i%7 == 3 {
			if err := record(&buf, map[string]any{"kind": "turn", "turn": map[string]any{"thread": "t1", "status": "failed", "code": "rate_limited",
				"error": "The gateway answered 429 (rate limited), also to the retries. Wait a minute and try again.", "at": at}}); err != nil {
				return nil, err
			}
		} else if o.Mixed && i%11 == 5 {
			if err := record(&buf, map[string]any{"kind": "turn", "turn": map[string]any{"thread": "t1", "status": "failed", "code": "auth_failed",
				"error": "The gateway refused the credential (401).", "at": at}}); err != nil {
				return nil, err
			}
		}
		path := filepath.Join(dir, id+".session")
		if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
			return nil, err
		}
		if err := os.Chtimes(path, at, at); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// Sentence is a made-up sentence of n words.
func Sentence(r *rand.Rand, n int) string {
	w := make([]string, n)
	for i := range w {
		w[i] = words[r.IntN(len(words))]
	}
	return strings.Join(w, " ")
}

// record appends one checksummed record to buf.
func record(buf *bytes.Buffer, rec any) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	fmt.Fprintf(buf, "%08x ", crc32.Checksum(b, castagnoli))
	buf.Write(b)
	buf.WriteByte('\n')
	return nil
}

func session(buf *bytes.Buffer, r *rand.Rand, id string, at time.Time, cwd string, n int) error {
	write := func(rec any) error { return record(buf, rec) }
	type m = map[string]any
	title := Sentence(r, 4)
	if err := write(m{"kind": "session", "session": m{"version": 5, "id": id, "created": at, "model": "fake", "title": title, "cwd": cwd}}); err != nil {
		return err
	}
	if err := write(m{"kind": "thread", "thread": m{"id": "t1", "created": at}}); err != nil {
		return err
	}
	for i := 0; i < n; i++ {
		var msg m
		switch {
		case i%2 == 0:
			msg = m{"thread": "t1", "index": i, "message": m{"role": "user", "parts": []m{{"kind": "text", "text": Sentence(r, 12)}}}, "accepted_at": at}
		case i%6 == 1 && i+2 < n: // a call, its result, and the answer after it
			call := fmt.Sprintf("call_%d", i)
			msg = m{"thread": "t1", "index": i, "message": m{"role": "assistant", "parts": []m{{"kind": "text", "text": Sentence(r, 20)},
				{"kind": "tool_call", "tool_call": m{"id": call, "name": "bash", "input": m{"command": "grep -rn " + Sentence(r, 1) + " ."}}}}}}
			if err := write(m{"kind": "message", "message": msg}); err != nil {
				return err
			}
			i++
			if i >= n {
				return nil
			}
			msg = m{"thread": "t1", "index": i, "message": m{"role": "user", "parts": []m{{"kind": "tool_result", "tool_result": m{"call_id": call, "text": Sentence(r, 30)}}}}}
		default:
			msg = m{"thread": "t1", "index": i, "message": m{"role": "assistant", "parts": []m{{"kind": "text", "text": Sentence(r, 40)}}}}
		}
		if err := write(m{"kind": "message", "message": msg}); err != nil {
			return err
		}
		if role := msg["message"].(m)["role"]; role == "assistant" && i%2 == 1 {
			if err := write(m{"kind": "usage", "usage": m{"thread": "t1", "usage": m{"input": 1000 + i, "output": 100}, "model": "fake"}}); err != nil {
				return err
			}
			if err := write(m{"kind": "turn", "turn": m{"thread": "t1", "status": "done", "at": at}}); err != nil {
				return err
			}
		}
	}
	return nil
}
