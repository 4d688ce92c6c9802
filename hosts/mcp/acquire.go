package mcp

import (
	"context"
	"errors"
	"fmt"
	"time"

	"myco.dev/hosts/tools"
)

// acquire returns owner's running instance of srv, starting it (or taking over the spare)
// if need be. When there is none to be had it returns the error result the call answers.
func (s *Set) acquire(ctx context.Context, owner string, srv *server) (*instance, tools.Result, bool) {
	key := slotKey{owner, srv.cfg.Name}
	for {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return nil, tools.Errorf("mcp server %s: myco is shutting down", srv.cfg.Name), false
		}
		sl := s.slots[key]
		if sl == nil {
			sl = &slot{}
			s.slots[key] = sl
		}
		switch {
		case sl.inst != nil && sl.inst.why == "":
			inst := sl.inst
			s.mu.Unlock()
			return inst, tools.Result{}, true
		case sl.starting != nil:
			ch := sl.starting
			s.mu.Unlock()
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				return nil, stopped(ctx, srv), false
			}
		case s.o.Now().Before(sl.retryAt):
			res := tools.Errorf("mcp server %s is not running: %s\n%s", srv.cfg.Name, sl.why, s.retryNote(sl))
			s.mu.Unlock()
			return nil, res, false
		case srv.spare != nil && srv.spare.why == "":
			inst := srv.spare
			srv.spare, sl.inst, inst.owner = nil, inst, owner
			s.mu.Unlock()
			return inst, tools.Result{}, true
		}
		ch := make(chan struct{})
		sl.starting = ch
		s.mu.Unlock()

		startCtx, cancel := context.WithTimeoutCause(ctx, srv.cfg.StartupTimeout, errStartTimeout)
		inst, err := s.connect(startCtx, srv)
		err = startError(startCtx, err)
		cancel()

		s.mu.Lock()
		sl.starting = nil
		close(ch)
		switch {
		case err != nil && ctx.Err() != nil:
			s.mu.Unlock()
			return nil, stopped(ctx, srv), false
		case err != nil:
			sl.failures++
			sl.retryAt = s.o.Now().Add(s.backoff(sl.failures))
			sl.why = "it did not start: " + err.Error()
			res := tools.Errorf("mcp server %s did not start: %v\n%s", srv.cfg.Name, err, s.retryNote(sl))
			s.mu.Unlock()
			s.log.Warn("mcp server did not start", "server", srv.cfg.Name, "owner", owner, "err", err)
			return nil, res, false
		case s.closed || s.slots[key] != sl:
			// Closed, or owner released while this start was in flight.
			s.wg.Go(inst.close)
			s.mu.Unlock()
			return nil, tools.Errorf("mcp server %s: the session's servers were released, or myco is shutting down, while this one started", srv.cfg.Name), false
		}
		inst.owner = owner
		sl.inst = inst
		s.mu.Unlock()
		s.log.Info("mcp server started", "server", srv.cfg.Name, "owner", owner, "pid", inst.pid)
		return inst, tools.Result{}, true
	}
}

// ended records that inst ended, why, and whether that was its server's doing.
func (s *Set) ended(inst *instance, why string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	inst.why = why
	srv := inst.srv
	if srv.spare == inst {
		srv.spare = nil
	}
	if inst.closing.Load() {
		return
	}
	if sl := s.slots[slotKey{inst.owner, srv.cfg.Name}]; sl != nil && sl.inst == inst {
		sl.failures++
		sl.retryAt = s.o.Now().Add(s.backoff(sl.failures))
		sl.why = why
	}
	s.log.Warn("mcp server ended", "server", srv.cfg.Name, "owner", inst.owner, "why", why)
}

// answered records that inst's server answered a call: the backoff starts over.
func (s *Set) answered(inst *instance) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sl := s.slots[slotKey{inst.owner, inst.srv.cfg.Name}]; sl != nil && sl.inst == inst {
		sl.failures = 0
	}
}

// restartNote says when inst's server will be started again for its owner.
func (s *Set) restartNote(inst *instance) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sl := s.slots[slotKey{inst.owner, inst.srv.cfg.Name}]; sl != nil && sl.inst == inst {
		return s.retryNote(sl)
	}
	return "myco starts it again on the next call."
}

// retryNote says when sl's server will be started again. s.mu must be held.
func (s *Set) retryNote(sl *slot) string {
	wait := sl.retryAt.Sub(s.o.Now())
	if wait <= 0 {
		return "myco starts it again on the next call."
	}
	return fmt.Sprintf("myco starts it again on the next call after %s (in %s).", sl.retryAt.Format("15:04:05"), wait.Round(time.Second/10))
}

// backoff is the wait after n failures in a row: InitialBackoff, doubling, up to MaxBackoff.
func (s *Set) backoff(n int) time.Duration {
	d := s.o.InitialBackoff
	for i := 1; i < n && d < s.o.MaxBackoff; i++ {
		d *= 2
	}
	return min(d, s.o.MaxBackoff)
}

var (
	errStartTimeout = errors.New("the startup timeout (startup_timeout_secs) ran out")
	errToolTimeout  = errors.New("the tool timeout (tool_timeout_secs) ran out")
	errClosed       = errors.New("mcp: the set is closed")
)

// startError says why a start under ctx failed: the startup timeout when that is what
// ended it.
func startError(ctx context.Context, err error) error {
	if err != nil && errors.Is(context.Cause(ctx), errStartTimeout) {
		return errStartTimeout
	}
	return err
}

func stopped(ctx context.Context, srv *server) tools.Result {
	return tools.Errorf("mcp server %s: the call was stopped before the server started (%v)", srv.cfg.Name, context.Cause(ctx))
}
