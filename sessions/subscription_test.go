package sessions

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestSubscriptionEndsWithTheService: a subscription's Next answers ErrShutdown once the
// service closed, so that an event stream of a replaced server ends and its client
// reconnects.
func TestSubscriptionEndsWithTheService(t *testing.T) {
	f := newManager(t, ManagerOptions{})
	sub := f.m.Subscribe(nil, f.m.EventID())
	defer sub.Close()
	f.m.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if _, err := sub.Next(ctx); !errors.Is(err, ErrShutdown) {
		t.Errorf("Next after Close = %v, want ErrShutdown", err)
	}
}
