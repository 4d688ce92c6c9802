package search

import (
	"context"
	"log/slog"
	"sync"

	"myco.dev/sessions"
)

// Start opens the search index at path over the session service m, brings it up to date
// in the background and keeps it so, told of every session's updates, off their turns'
// path. The server's profile worker starts it; myco -p and the chat never do, so their
// start-up does not pay for it. stop ends its work and closes it. An index that cannot be
// opened is logged and Start returns nil: the server then finds by title only.
func Start(path string, m *sessions.Manager, log *slog.Logger) (ix *Index, stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	ix, err := Open(ctx, Options{Path: path, Source: m, Log: log})
	if err != nil {
		cancel()
		log.Warn("search index unavailable: search finds by title only", "err", err)
		return nil, func() {}
	}
	var wg sync.WaitGroup
	wg.Go(func() { ix.Run(ctx) })
	wg.Go(func() {
		sub := m.Subscribe(nil, "")
		defer sub.Close()
		for {
			us, err := sub.Next(ctx)
			if err != nil {
				return
			}
			for _, u := range us {
				switch u.Type {
				case sessions.UpdateTextDelta, sessions.UpdateThinkingDelta, sessions.UpdateToolProgress:
				default:
					if u.Session != "" {
						ix.Changed(u.Session)
					}
				}
			}
		}
	})
	return ix, func() {
		cancel()
		wg.Wait()
		ix.Close()
	}
}
