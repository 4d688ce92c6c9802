package hosts

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"myco.dev/hosts/proto"
	"myco.dev/hosts/tools"
)

// Inventory is one host's tool resources of one owner.
type Inventory struct {
	Host      string
	Resources tools.Resources
	Observed  time.Time // when Resources was observed; zero when never
	// LastKnown marks Resources as earlier data: the host is not attached or the query
	// failed (Err says why). It does not claim the host is empty.
	LastKnown bool
	Err       string
}

// Inventory asks an attached host for owner's resources, waiting at most QueryTimeout.
// It never connects a lazy remote: a host that is not attached answers with the
// last-known data, marked as such.
func (r *Remote) Inventory(ctx context.Context, owner string) Inventory {
	r.mu.Lock()
	c := r.conn
	last := r.inv[owner]
	state := r.status.State
	r.mu.Unlock()
	last.Host = r.spec.Alias
	if c == nil {
		last.LastKnown = true
		last.Err = fmt.Sprintf("host %s is %s; inventory does not connect it", r.spec.Alias, state)
		return last
	}
	ctx, cancel := context.WithTimeout(ctx, r.o.QueryTimeout)
	defer cancel()
	m, err := c.request(ctx, proto.Msg{Inventory: &proto.InventoryQuery{Owner: owner}})
	switch {
	case errors.Is(err, errConnEnded):
		if why := c.endErr(); why != nil { // nil while the ended host is being reaped
			err = why
		}
	case err == nil && m.Err != nil:
		err = errors.New(m.Err.Message)
	case err == nil && m.Resources == nil:
		err = errors.New("the host answered with a frame that is not resources")
	}
	var res tools.Resources
	if err == nil {
		if derr := json.Unmarshal(*m.Resources, &res); derr != nil {
			err = fmt.Errorf("the host's resources: %w", derr)
		}
	}
	if err != nil {
		last.LastKnown = true
		last.Err = fmt.Sprintf("inventory query to host %s: %v", r.spec.Alias, err)
		return last
	}
	inv := Inventory{Host: r.spec.Alias, Resources: res, Observed: time.Now()}
	r.mu.Lock()
	r.inv[owner] = inv
	r.mu.Unlock()
	return inv
}

// Release ends every resource owner holds on the host, waiting at most QueryTimeout, and
// forgets what the controller kept for owner. It asks an attached host; when the
// connection dropped while owner held resources there, it attaches again (bounded by
// AttachTimeout) so the host daemon ends them now rather than after its grace period. It
// never connects a remote owner has not used.
func (r *Remote) Release(ctx context.Context, owner string) {
	r.mu.Lock()
	c := r.conn
	_, dropped := r.lost[owner]
	delete(r.held, owner)
	delete(r.inv, owner)
	r.mu.Unlock()
	if c == nil && dropped {
		var err error
		if c, _, err = r.attach(ctx, owner); err != nil {
			r.log.Warn("release after a drop", "owner", owner, "err", err)
			return
		}
	}
	r.mu.Lock()
	delete(r.lost, owner)
	r.mu.Unlock()
	if c == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, r.o.QueryTimeout)
	defer cancel()
	if _, err := c.request(ctx, proto.Msg{Release: &proto.Release{Owner: owner}}); err != nil {
		r.log.Warn("release", "owner", owner, "err", err)
	}
}
