package handlers

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"myco.dev/api"
	"myco.dev/hosts/snapshot"
	"myco.dev/sessions"
)

// The bounds of the patches of GET …/changes, in bytes.
const (
	changesDefaultBytes = 1 << 20
	changesMaxBytes     = 16 << 20
	changesFileBytes    = 64 << 10
)

// apiChanges answers what a turn (thread and turn) or the whole session changed in its
// files: per host, each file's status, line counts and unified diff, bounded.
func (s *server) apiChanges(w http.ResponseWriter, r *http.Request) (any, error) {
	id := chi.URLParam(r, "id")
	q, err := changesQuery(r)
	if err != nil {
		return nil, err
	}
	ch, err := s.Sessions.Changes(r.Context(), id, q)
	if err != nil {
		return nil, err
	}
	return changesAnswer(id, ch), nil
}

// changesQuery reads the query of GET …/changes (and of the Changes view).
func changesQuery(r *http.Request) (sessions.ChangesQuery, error) {
	v := r.URL.Query()
	var q sessions.ChangesQuery
	if t := v.Get("turn"); t != "" {
		n, err := intParam(t, 0, 0, 1<<30, "turn")
		if err != nil {
			return q, err
		}
		q.Turn = &sessions.TurnRef{Thread: v.Get("thread"), Turn: n}
	} else if v.Get("thread") != "" {
		return q, apiError(http.StatusBadRequest, "missing_field", `query parameter "thread" goes with "turn"`)
	}
	limit, err := intParam(v.Get("max_bytes"), changesDefaultBytes, 1, changesMaxBytes, "max_bytes")
	if err != nil {
		return q, err
	}
	q.Diff = snapshot.DiffOptions{MaxPatch: limit, MaxFilePatch: min(limit, max(changesFileBytes, limit/4)), NoPatch: v.Get("patch") == "false"}
	if p := v.Get("path"); p != "" {
		q.Diff.Paths = []snapshot.Path{snapshot.Path(p)}
		q.Diff.MaxFilePatch = limit
	}
	return q, nil
}

// changesAnswer is ch as the API answers it.
func changesAnswer(id string, ch *sessions.Changes) api.ChangesAnswer {
	out := api.ChangesAnswer{SessionID: id, Undone: ch.Undone, Running: ch.Running, Hosts: []api.HostChanges{}}
	if ch.Turn != nil {
		turn := ch.Turn.Turn
		out.Thread, out.Turn = ch.Turn.Thread, &turn
	}
	for _, h := range ch.Hosts {
		hc := api.HostChanges{Host: h.Host, Dir: h.Dir, Files: []api.ChangedFile{}, Error: h.Err}
		if h.Diff != nil {
			hc.Files, hc.Added, hc.Deleted = sessions.ChangedFiles(h.Diff)
			hc.Cut = h.Diff.Cut
			if hc.Dir == "" {
				hc.Dir = h.Diff.Dir
			}
		}
		out.Hosts = append(out.Hosts, hc)
	}
	return out
}
