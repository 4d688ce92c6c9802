package hosts

import (
	"context"
	"errors"
	"fmt"

	"myco.dev/hosts/proto"
	"myco.dev/hosts/snapshot"
)

// ErrNoSnapshots reports a host that keeps no snapshot store: the local one when the
// harness was given none, a remote whose host daemon could not open its own.
var ErrNoSnapshots = errors.New("hosts: this host keeps no snapshots")

// Capture records the state of a directory on host (see [snapshot.Store.Capture]): in the
// local store, or in the store of the remote's host daemon. A remote capture whose Dir is
// empty captures the host's working directory, where its tools start (its hello's).
func (h *Harness) Capture(ctx context.Context, host string, r snapshot.CaptureRequest) (snapshot.CaptureResult, error) {
	if isLocal(host) {
		st, err := h.local()
		if err != nil {
			return snapshot.CaptureResult{}, err
		}
		return st.Capture(ctx, r)
	}
	rm, err := h.remote(host)
	if err != nil {
		return snapshot.CaptureResult{}, err
	}
	return rm.Capture(ctx, r)
}

// Diff compares two snapshots of host's store (see [snapshot.Store.Diff]).
func (h *Harness) Diff(ctx context.Context, host string, from, to snapshot.ID, o snapshot.DiffOptions) (*snapshot.Diff, error) {
	if isLocal(host) {
		st, err := h.local()
		if err != nil {
			return nil, err
		}
		return st.Diff(ctx, from, to, o)
	}
	rm, err := h.remote(host)
	if err != nil {
		return nil, err
	}
	return rm.Diff(ctx, from, to, o)
}

// Restore puts files back on host as a snapshot has them (see [snapshot.Store.Restore]).
// Like the store's, it returns its result with an error when it stopped midway.
func (h *Harness) Restore(ctx context.Context, host string, r snapshot.RestoreRequest) (*snapshot.RestoreResult, error) {
	if isLocal(host) {
		st, err := h.local()
		if err != nil {
			return nil, err
		}
		return st.Restore(ctx, r)
	}
	rm, err := h.remote(host)
	if err != nil {
		return nil, err
	}
	return rm.Restore(ctx, r)
}

// Prune makes owner keep only the snapshots keep in host's store (see
// [snapshot.Store.Prune]); [snapshot.ErrBusy] says the space was not given back yet.
func (h *Harness) Prune(ctx context.Context, host, owner string, keep []snapshot.ID) (snapshot.PruneResult, error) {
	if isLocal(host) {
		st, err := h.local()
		if err != nil {
			return snapshot.PruneResult{}, err
		}
		return st.Prune(ctx, owner, keep)
	}
	rm, err := h.remote(host)
	if err != nil {
		return snapshot.PruneResult{}, err
	}
	return rm.Prune(ctx, owner, keep)
}

// SnapshotSize returns the space the local snapshot store takes, in bytes (0 without
// one). The remotes' stores are theirs: asking would connect them.
func (h *Harness) SnapshotSize() (int64, error) {
	if h.snaps == nil && h.openSnaps == nil {
		return 0, nil
	}
	st, err := h.local()
	if err != nil {
		return 0, err
	}
	return st.Size()
}

// local returns the local store, opening it on first use when the harness was given a way.
func (h *Harness) local() (*snapshot.Store, error) {
	if h.snaps != nil {
		return h.snaps, nil
	}
	if h.openSnaps == nil {
		return nil, ErrNoSnapshots
	}
	h.snapMu.Lock()
	defer h.snapMu.Unlock()
	if h.opened == nil && h.openErr == nil {
		h.opened, h.openErr = h.openSnaps()
		if h.openErr != nil {
			h.log.Warn("the snapshot store cannot be opened; no changes are captured", "err", h.openErr)
		}
	}
	if h.openErr != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoSnapshots, h.openErr)
	}
	return h.opened, nil
}

func isLocal(host string) bool { return host == "" || host == Local }

// remote returns the controller of host, or an error that names the known hosts.
func (h *Harness) remote(host string) (*Remote, error) {
	r, ok := h.remotes[host]
	if !ok {
		return nil, fmt.Errorf("unknown host %q; the known hosts are %v", host, h.hosts)
	}
	return r, nil
}

// Capture records the state of a directory in the host's snapshot store ([proto.Msg]
// capture), attaching the host first when needed. An empty r.Dir is the host's working
// directory, as its hello names it.
func (r *Remote) Capture(ctx context.Context, req snapshot.CaptureRequest) (snapshot.CaptureResult, error) {
	c, _, err := r.attach(ctx, "")
	if err != nil {
		return snapshot.CaptureResult{}, err
	}
	if req.Dir == "" {
		if req.Dir = c.hostHello().Dir; req.Dir == "" {
			return snapshot.CaptureResult{}, fmt.Errorf("host %s did not say its working directory", r.spec.Alias)
		}
	}
	m, err := r.snapshotRequest(ctx, c, proto.Msg{Capture: &req}, "capture "+req.Dir)
	if err != nil {
		return snapshot.CaptureResult{}, err
	}
	if m.Captured == nil {
		return snapshot.CaptureResult{}, r.wrongAnswer("capture", "captured")
	}
	return *m.Captured, nil
}

// Diff compares two snapshots of the host's store.
func (r *Remote) Diff(ctx context.Context, from, to snapshot.ID, o snapshot.DiffOptions) (*snapshot.Diff, error) {
	m, err := r.snapshotRequest(ctx, nil, proto.Msg{Diff: &proto.Diff{From: from, To: to, Options: o}}, "diff")
	if err != nil {
		return nil, err
	}
	if m.Diffed == nil {
		return nil, r.wrongAnswer("diff", "diffed")
	}
	return m.Diffed, nil
}

// Restore puts files back on the host. A restore the host stopped midway returns its
// result with an error; one whose connection dropped returns no result: its outcome is
// unknown, and running it again completes it.
func (r *Remote) Restore(ctx context.Context, req snapshot.RestoreRequest) (*snapshot.RestoreResult, error) {
	m, err := r.snapshotRequest(ctx, nil, proto.Msg{Restore: &req}, "restore")
	if err != nil {
		return nil, err
	}
	if m.Restored == nil {
		return nil, r.wrongAnswer("restore", "restored")
	}
	res := m.Restored.RestoreResult
	if res.Restored == nil {
		res.Restored = []snapshot.Path{}
	}
	if res.Conflicts == nil {
		res.Conflicts = []snapshot.Conflict{}
	}
	if m.Restored.Error != "" {
		return &res, fmt.Errorf("host %s: restore: %s", r.spec.Alias, remoteText(m.Restored.Error))
	}
	return &res, nil
}

// Prune makes owner keep only keep in the host's store; [snapshot.ErrBusy] when the host
// could not give the space back yet.
func (r *Remote) Prune(ctx context.Context, owner string, keep []snapshot.ID) (snapshot.PruneResult, error) {
	m, err := r.snapshotRequest(ctx, nil, proto.Msg{Prune: &proto.Prune{Owner: owner, Keep: keep}}, "prune")
	if err != nil {
		return snapshot.PruneResult{}, err
	}
	if m.Pruned == nil {
		return snapshot.PruneResult{}, r.wrongAnswer("prune", "pruned")
	}
	if m.Pruned.Busy {
		return m.Pruned.PruneResult, snapshot.ErrBusy
	}
	return m.Pruned.PruneResult, nil
}

// snapshotRequest sends a snapshot request on c (attaching first when c is nil) and
// returns its answer; an error frame becomes an error that matches the snapshot package's
// (or [ErrNoSnapshots]) by its code.
func (r *Remote) snapshotRequest(ctx context.Context, c *conn, req proto.Msg, what string) (proto.Msg, error) {
	if c == nil {
		var err error
		if c, _, err = r.attach(ctx, ""); err != nil {
			return proto.Msg{}, err
		}
	}
	m, err := c.request(ctx, req)
	switch {
	case errors.Is(err, errConnEnded):
		if why := c.endErr(); why != nil {
			err = why
		}
		return proto.Msg{}, fmt.Errorf("host %s: the connection ended during the snapshot %s: %w", r.spec.Alias, what, err)
	case err != nil:
		return proto.Msg{}, fmt.Errorf("host %s: snapshot %s: %w", r.spec.Alias, what, err)
	case m.Err != nil:
		msg := remoteText(m.Err.Message)
		switch m.Err.Code {
		case proto.CodeNotFound:
			return m, fmt.Errorf("host %s: %s: %w", r.spec.Alias, msg, snapshot.ErrNotFound)
		case proto.CodeTooLarge:
			return m, fmt.Errorf("host %s: %s: %w", r.spec.Alias, msg, snapshot.ErrTooLarge)
		case proto.CodeNoStore:
			return m, fmt.Errorf("host %s: %s: %w", r.spec.Alias, msg, ErrNoSnapshots)
		}
		return m, fmt.Errorf("host %s: snapshot %s: %s", r.spec.Alias, what, msg)
	}
	return m, nil
}

func (r *Remote) wrongAnswer(asked, want string) error {
	return fmt.Errorf("host %s answered a %s with a frame that is not %s", r.spec.Alias, asked, want)
}
