package mcp

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Discover starts, in parallel, each server whose tools are not listed yet (and whose
// last failure's backoff has passed), each bounded by its startup timeout, and lists its
// tools. It returns when every one has its tools or has failed; [Set.Statuses] says which
// and why. Call it before a session's first model request: the tools listed stay for the
// life of the Set. A failure is retried by the next Discover after the backoff.
func (s *Set) Discover(ctx context.Context) {
	var wg sync.WaitGroup
	for _, srv := range s.servers {
		wg.Go(func() { s.discover(ctx, srv) })
	}
	wg.Wait()
}

func (s *Set) discover(ctx context.Context, srv *server) {
	s.mu.Lock()
	switch {
	case s.closed, srv.listed, s.o.Now().Before(srv.retryAt):
		s.mu.Unlock()
		return
	case srv.discovering != nil:
		ch := srv.discovering
		s.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
		}
		return
	}
	ch := make(chan struct{})
	srv.discovering = ch
	s.mu.Unlock()

	startCtx, cancel := context.WithTimeoutCause(ctx, srv.cfg.StartupTimeout, errStartTimeout)
	defer cancel()
	var inst *instance
	var err error
	if srv.cfg.Unavailable != "" {
		err = errors.New(srv.cfg.Unavailable)
	} else {
		inst, err = s.connect(startCtx, srv)
		err = startError(startCtx, err)
	}
	var list []*mcp.Tool
	if err == nil {
		list, err = listTools(startCtx, inst)
		if err != nil {
			err = fmt.Errorf("list its tools: %w", startError(startCtx, err))
			s.wg.Go(inst.close) // inst's watcher is counted: wg is not at zero
		}
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	srv.discovering = nil
	close(ch)
	switch {
	case err != nil && ctx.Err() != nil:
		return // the caller gave up: not the server's failure
	case err != nil && srv.cfg.Unavailable != "":
		// Nothing was started and nothing will change: no backoff, and one log line.
		if srv.err == "" {
			s.log.Warn("mcp server unavailable", "server", srv.cfg.Name, "err", err)
		}
		srv.err = err.Error()
		return
	case err != nil:
		srv.failures++
		srv.retryAt = s.o.Now().Add(s.backoff(srv.failures))
		srv.err = err.Error()
		s.log.Warn("mcp server did not start", "server", srv.cfg.Name, "err", err, "retry_at", srv.retryAt)
		return
	case s.closed:
		s.wg.Go(inst.close)
		return
	}
	srv.listed, srv.failures, srv.err = true, 0, ""
	srv.tools = s.newTools(srv, list)
	if inst.why == "" { // it may have ended already: then an owner starts its own
		srv.spare = inst
	}
	s.tools = slices.SortedFunc(slices.Values(append(s.tools, srv.tools...)), func(a, b *Tool) int { return cmp.Compare(a.name, b.name) })
	s.log.Info("mcp server listed", "server", srv.cfg.Name, "tools", len(srv.tools))
}

func listTools(ctx context.Context, inst *instance) ([]*mcp.Tool, error) {
	var list []*mcp.Tool
	for t, err := range inst.cs.Tools(ctx, nil) {
		if err != nil {
			return nil, err
		}
		list = append(list, t)
	}
	return list, nil
}
