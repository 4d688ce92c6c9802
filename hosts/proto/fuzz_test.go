package proto

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"
)

// FuzzReader feeds arbitrary bytes to the frame reader with a small line limit. It must
// not panic, must end, must return only frames with exactly one payload, must report
// ErrLineTooLong exactly when a line is over the limit, and must keep failing after it.
// Every frame it returns is written and read again unchanged.
func FuzzReader(f *testing.F) {
	for _, s := range []string{
		`{"hello":{"protocol":4,"version":"0.1.0","without_env":["K"]}}` + "\n" + `{"id":1,"ping":{}}` + "\n",
		`{"id":1,"call":{"owner":"o","tool":"bash","input":{"command":"ls"},"key":"k","progress":true}}` + "\r\n",
		`{"error":{"message":"x","fatal":true}}` + "\n\n\nnot json\n" + `{"id":7}` + "\n",
		`{"id":2,"ping":{},"pong":{}}` + "\n" + `[1,2]` + "\n" + `{"id":3,"result":{"text":"\u001b]0;t\u0007"}}`,
		string(bytes.Repeat([]byte("x"), 300)) + "\n" + `{"id":1,"ping":{}}` + "\n",
	} {
		f.Add([]byte(s))
	}
	const max = 256
	f.Fuzz(func(t *testing.T, data []byte) {
		overLong := false
		for line := range bytes.SplitSeq(data, []byte("\n")) {
			if len(line)+1 > max {
				overLong = true
			}
		}
		r := NewReaderSize(bytes.NewReader(data), max)
		ctx := context.Background()
		sawTooLong := false
		for range bytes.Count(data, []byte("\n")) + 2 {
			m, err := r.Read(ctx)
			switch {
			case errors.Is(err, io.EOF):
				if overLong != sawTooLong {
					t.Fatalf("a line over %d bytes: %v; ErrLineTooLong seen: %v", max, overLong, sawTooLong)
				}
				return
			case errors.Is(err, ErrLineTooLong):
				if !overLong {
					t.Fatalf("ErrLineTooLong with no line over %d bytes", max)
				}
				if _, again := r.Read(ctx); !errors.Is(again, ErrLineTooLong) {
					t.Fatalf("Read after ErrLineTooLong = %v, want it again", again)
				}
				return
			case errors.Is(err, ErrMalformed):
				continue
			case err != nil:
				t.Fatalf("Read = %v, want a frame, ErrMalformed, ErrLineTooLong or io.EOF", err)
			}
			if n := m.payloads(); n != 1 {
				t.Fatalf("Read returned a frame with %d payloads: %+v", n, m)
			}
			var buf bytes.Buffer
			if err := NewWriter(&buf).Write(m); err != nil {
				t.Fatalf("Write of a frame read = %v", err)
			}
			again, err := NewReader(bytes.NewReader(buf.Bytes())).Read(ctx)
			if err != nil {
				t.Fatalf("Read of %s = %v", buf.Bytes(), err)
			}
			var buf2 bytes.Buffer
			NewWriter(&buf2).Write(again)
			if !bytes.Equal(buf.Bytes(), buf2.Bytes()) {
				t.Fatalf("a frame changed on a round trip: %s, then %s", buf.Bytes(), buf2.Bytes())
			}
		}
		t.Fatalf("Read did not reach the end of %d bytes with %d newlines", len(data), bytes.Count(data, []byte("\n")))
	})
}
