package cli

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"syscall"

	"myco.dev/sessions"
)

// terminal is a terminal front end on the session service: a printer for its updates and
// the signals that stop its jobs.
type terminal struct {
	svc *sessions.Manager
	std IO
	out *printer
	sig chan os.Signal
	// chat keeps handling signals after the first (Ctrl-C stops a turn and the chat goes
	// on); otherwise the first one restores the default action, so a second one ends the
	// process at once.
	chat bool
	// signalled is the exit status of the last signal that stopped a job, 0 for none.
	signalled int
	// ask, when set (the chat), asks the person inline about a tool call that waits for
	// approval, and returns the answer; false leaves it unanswered (a signal came).
	ask func(a sessions.Approval) (sessions.Answer, bool)
}

// newTerminal starts a front end on svc: it prints on std (updates as JSON with asJSON;
// the model's text as it streams with stream) and takes SIGINT, SIGTERM and SIGHUP until
// closed.
func newTerminal(svc *sessions.Manager, std IO, asJSON, stream bool) *terminal {
	out := newPrinter(std.Stdout, std.Stderr, asJSON)
	out.stream = stream
	// The calls' output: always in the chat; in myco -p when someone watches stderr, so
	// that a script's log keeps the short lines it had.
	out.output = stream || isTerminal(std.Stderr)
	t := &terminal{svc: svc, std: std, out: out, sig: make(chan os.Signal, 1)}
	signal.Notify(t.sig, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	// A write to a closed stdout returns EPIPE, reported as an error, instead of killing
	// the process before it saved and said what happened.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	return t
}

func (t *terminal) close() { signal.Stop(t.sig) }

func (t *terminal) fail(err error) int { return Fail(t.std.Stderr, err) }

// ResumeLast is the --resume of the session used last.
const ResumeLast = "last"

// open opens session id (a new one when id is empty, the one used last when it is
// [ResumeLast]) with model key, when not empty, and announces it on stderr.
func (t *terminal) open(ctx context.Context, id, key string) (string, error) {
	var err error
	if id == ResumeLast {
		if id, err = t.last(ctx); err != nil {
			return "", err
		}
	}
	switch {
	case id == "":
		id, err = t.svc.Create(ctx, sessions.CreateOptions{Model: key})
	case key != "":
		err = t.svc.SelectModel(ctx, id, key)
	default:
		_, _, err = t.svc.Snapshot(ctx, id)
	}
	if err != nil {
		return "", err
	}
	t.out.session(id)
	return id, nil
}

// run starts a job on session id and prints the session's updates until it ends. A signal
// stops the job and is recorded in t.signalled.
func (t *terminal) run(ctx context.Context, id string, start func() (*sessions.Job, error)) (sessions.JobResult, error) {
	sub := t.svc.Subscribe([]string{id}, "")
	defer sub.Close()
	j, err := start()
	if err != nil {
		return sessions.JobResult{}, err
	}
	printed := make(chan struct{})
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	// A child's approval comes on this session's stream too (Child names it): the person
	// answers it here, on the child.
	type ask struct {
		session string
		a       sessions.Approval
	}
	asks := make(chan ask, 16)
	go func() {
		defer close(printed)
		for {
			us, err := sub.Next(ctx)
			if err != nil {
				return
			}
			for _, u := range us {
				t.out.update(u)
				if t.ask != nil && u.Type == sessions.UpdateApprovalRequested && u.Approval != nil {
					on := id
					if u.Child != "" {
						on = u.Child
					}
					select {
					case asks <- ask{on, *u.Approval}:
					default: // the person has 16 questions open already; the page lists them
					}
				}
				if u.Session == id && u.Terminal() {
					return
				}
			}
		}
	}()
	t.signalled = 0
	for done := false; !done; {
		select {
		case q := <-asks:
			if ans, ok := t.ask(q.a); ok {
				if _, err := t.svc.Resolve(ctx, q.session, ans); err != nil && !errors.Is(err, sessions.ErrNoApproval) {
					t.out.failed(err)
				}
			}
		case s := <-t.sig:
			if t.signalled == 0 && !t.chat {
				signal.Reset(s)
			}
			t.signalled = exitStatus(s)
			t.svc.Cancel(id, "")
		case <-j.Done():
			done = true
		}
	}
	<-printed
	return j.Wait(context.WithoutCancel(ctx))
}

// exitStatus is the status of a process ended by signal s: 128 + its number, the shell's
// convention (130 for SIGINT).
func exitStatus(s os.Signal) int {
	if n, ok := s.(syscall.Signal); ok {
		return 128 + int(n)
	}
	return ExitInterrupt
}

// stopped says that a signal stopped the job and returns the exit status: the signal's.
func (t *terminal) stopped() int {
	t.out.interrupted()
	if t.signalled != 0 {
		return t.signalled
	}
	return ExitInterrupt
}

// failed tells a failure to open or start a job, on stderr and, with --json, as the last
// event on stdout, and returns its exit status ([ExitFor] its kind).
func (t *terminal) failed(f sessions.Failure) int {
	t.out.failure(f)
	return ExitFor(f.Code)
}

// report prints how a turn ended and returns the exit status: [ExitFor] the kind of a
// failure, the signal's for a stop.
func (t *terminal) report(res sessions.JobResult, err error) int {
	switch {
	case errors.Is(err, sessions.ErrStopped):
		return t.stopped()
	case err != nil:
		t.out.turnFailed(err)
		return ExitFor(sessions.Describe(err).Code)
	}
	t.out.done(res)
	if werr := t.out.err(); werr != nil {
		t.out.note("myco: the answer could not be written to standard output: %s (it is saved in the session)", werr)
		return ExitError
	}
	if res.CapReached {
		return ExitError
	}
	return ExitOK
}

// last is the session used last: of the active, visible sessions that load, the one whose
// file changed last.
func (t *terminal) last(ctx context.Context) (string, error) {
	list, err := t.svc.List(ctx, sessions.ListOptions{})
	if err != nil {
		return "", err
	}
	var best sessions.Listed
	for _, l := range list {
		if l.Problem == "" && (best.ID == "" || l.Modified.After(best.Modified)) {
			best = l
		}
	}
	if best.ID == "" {
		return "", errors.New("--resume last: there is no session to resume yet; run myco -p without --resume to start one")
	}
	return best.ID, nil
}
