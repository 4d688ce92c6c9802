package tools

import (
	"context"
	"io"
	"unicode/utf8"
)

// ProgressBytes is how much of a running call's newest output a progress report carries.
const ProgressBytes = 2 << 10

type progressKey struct{}

// WithProgress returns a copy of ctx under which tool calls report the output they have
// produced so far: report receives the newest [ProgressBytes] of it (cut at a UTF-8
// boundary) after each write. A session recorder uses it to save the last output seen, so a
// call cut by a crash can say what it was doing. report is called from the tool's own
// goroutines, one at a time per call, and must not block for long. Progress is
// request-scoped, and crosses to remote hosts: a remote call made under ctx asks its host
// for progress frames (throttled there to one a second) and passes each tail to report,
// never after the call has returned.
func WithProgress(ctx context.Context, report func(tail string)) context.Context {
	return context.WithValue(ctx, progressKey{}, report)
}

// ProgressFrom returns the reporter in ctx (see [WithProgress]), or nil when there is none.
// A remote controller uses it to ask its host for progress and to pass on what it reports.
func ProgressFrom(ctx context.Context) func(tail string) {
	report, _ := ctx.Value(progressKey{}).(func(string))
	return report
}

// ProgressWriter returns a writer that passes everything to w and reports the newest output
// to the reporter in ctx (see [WithProgress]); without one it returns w itself. The writer
// is not safe for concurrent use.
func ProgressWriter(ctx context.Context, w io.Writer) io.Writer {
	report := ProgressFrom(ctx)
	if report == nil {
		return w
	}
	return &progressWriter{w: w, report: report}
}

type progressWriter struct {
	w      io.Writer
	report func(string)
	tail   []byte // the newest ProgressBytes written
}

func (p *progressWriter) Write(b []byte) (int, error) {
	n, err := p.w.Write(b)
	if keep := b[:n]; len(keep) >= ProgressBytes {
		p.tail = append(p.tail[:0], keep[len(keep)-ProgressBytes:]...)
	} else {
		if over := len(p.tail) + len(keep) - ProgressBytes; over > 0 {
			p.tail = p.tail[:copy(p.tail, p.tail[over:])]
		}
		p.tail = append(p.tail, keep...)
	}
	t := p.tail
	for len(t) > 0 && !utf8.RuneStart(t[0]) {
		t = t[1:]
	}
	if n > 0 {
		p.report(string(t))
	}
	return n, err
}
