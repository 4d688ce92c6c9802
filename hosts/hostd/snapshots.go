package hostd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	"myco.dev/hosts/proto"
	"myco.dev/hosts/snapshot"
)

// snapshots is the host's snapshot store (see myco.dev/hosts/snapshot), opened on the
// first snapshot frame: one store per user and host, kept in a persistent private
// directory (not the daemon's, which a reboot clears), shared by the daemons of every
// build. It is safe for concurrent use.
type snapshots struct {
	dir string // "" means none
	log *slog.Logger

	mu    sync.Mutex // guards the fields below
	store *snapshot.Store
	err   error // why the store cannot be opened, kept: one attempt per process
}

// open returns the store, opening it on first use.
func (s *snapshots) open() (*snapshot.Store, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.store != nil || s.err != nil:
		return s.store, s.err
	case s.dir == "":
		s.err = errors.New("this host keeps no snapshot store (myco was started without a state directory)")
		return nil, s.err
	}
	if err := os.MkdirAll(filepath.Dir(s.dir), 0o700); err != nil {
		s.err = fmt.Errorf("the snapshot store's directory: %w", err)
		return nil, s.err
	}
	s.store, s.err = snapshot.Open(snapshot.Options{Dir: s.dir, Log: s.log})
	return s.store, s.err
}

// close closes the store, if it was opened.
func (s *snapshots) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.store != nil {
		s.store.Close()
		s.store = nil
	}
}

// serve answers one snapshot frame m (a capture, diff, restore, prune or size) with its
// response frame or an error frame. A capture, a diff and a size end with the connection;
// a restore and a prune run under ctx, the daemon's life: a restore cut short by a drop
// would be run again by the controller anyway, but one that finishes need not be.
func (s *snapshots) serve(ctx, conn context.Context, w *proto.Writer, m proto.Msg) {
	store, err := s.open()
	if err != nil {
		w.Write(proto.Msg{ID: m.ID, Err: &proto.Error{Message: err.Error(), Code: proto.CodeNoStore}})
		return
	}
	out := proto.Msg{ID: m.ID}
	switch {
	case m.Capture != nil:
		var res snapshot.CaptureResult
		if res, err = store.Capture(conn, *m.Capture); err == nil {
			out.Captured = &res
		}
	case m.Diff != nil:
		out.Diffed, err = store.Diff(conn, m.Diff.From, m.Diff.To, m.Diff.Options)
	case m.Restore != nil:
		var res *snapshot.RestoreResult
		res, err = store.Restore(ctx, *m.Restore)
		if res != nil {
			out.Restored = &proto.Restored{RestoreResult: *res}
			if err != nil {
				out.Restored.Error, err = err.Error(), nil
			}
		}
	case m.Prune != nil:
		var res snapshot.PruneResult
		res, err = store.Prune(ctx, m.Prune.Owner, m.Prune.Keep)
		if err == nil || errors.Is(err, snapshot.ErrBusy) {
			out.Pruned, err = &proto.Pruned{PruneResult: res, Busy: err != nil}, nil
		}
	case m.Size != nil:
		var n int64
		if n, err = store.Size(); err == nil {
			out.Sized = &proto.Sized{Bytes: n}
		}
	}
	if err != nil {
		out = proto.Msg{ID: m.ID, Err: errorFrame(err)}
	}
	if err := w.Write(out); err != nil {
		s.log.Warn("snapshot answer not sent", "id", m.ID, "err", err)
	}
}

// errorFrame is the error frame of a snapshot operation's err, with the code a controller
// branches on.
func errorFrame(err error) *proto.Error {
	e := &proto.Error{Message: err.Error()}
	switch {
	case errors.Is(err, snapshot.ErrNotFound):
		e.Code = proto.CodeNotFound
	case errors.Is(err, snapshot.ErrTooLarge):
		e.Code = proto.CodeTooLarge
	}
	return e
}

// isSnapshot reports whether m is a snapshot request.
func isSnapshot(m proto.Msg) bool {
	return m.Capture != nil || m.Diff != nil || m.Restore != nil || m.Prune != nil || m.Size != nil
}
