package handlers

import (
	"context"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"myco.dev/api"
	"myco.dev/search"
	"myco.dev/sessions"
	"myco.dev/views"
)

// Searcher is what the handlers need of the search index.
type Searcher interface {
	Search(ctx context.Context, q search.Query) (search.Result, error)
}

// searchQuery reads a search's parameters: ?q=, ?project=, ?from= and ?to= (dates,
// YYYY-MM-DD, to inclusive), ?archived=true, ?limit=, ?cursor=.
func searchQuery(r *http.Request, limitDef, limitMax int) (search.Query, error) {
	v := r.URL.Query()
	q := search.Query{Text: v.Get("q"), Project: v.Get("project")}
	if q.Project != "" {
		if !filepath.IsAbs(q.Project) {
			return q, apiError(http.StatusBadRequest, "invalid_field", "project must be an absolute path")
		}
		q.Project = filepath.Clean(q.Project)
	}
	for _, d := range []struct {
		name string
		dst  *time.Time
		add  int
	}{{"from", &q.From, 0}, {"to", &q.To, 1}} {
		if s := v.Get(d.name); s != "" {
			t, err := time.ParseInLocation("2006-01-02", s, time.Local)
			if err != nil {
				return q, apiError(http.StatusBadRequest, "invalid_field", d.name+" must be a date, YYYY-MM-DD")
			}
			*d.dst = t.AddDate(0, 0, d.add)
		}
	}
	switch v.Get("archived") {
	case "", "false", "0":
	case "true", "1":
		q.Archived = true
	default:
		return q, apiError(http.StatusBadRequest, "invalid_field", "archived must be true or false")
	}
	limit, err := intParam(v.Get("limit"), limitDef, 1, limitMax, "limit")
	if err != nil {
		return q, err
	}
	q.Limit = limit
	if c := v.Get("cursor"); c != "" {
		n, err := strconv.ParseInt(c, 10, 64)
		if err != nil || n <= 0 {
			return q, apiError(http.StatusBadRequest, "invalid_field", "cursor is not a next_cursor this server gave")
		}
		q.Before = n
	}
	return q, nil
}

// apiSearch answers a content search: ?q= (words and "quoted phrases"), paged.
func (s *server) apiSearch(w http.ResponseWriter, r *http.Request) (any, error) {
	q, err := searchQuery(r, 20, 100)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(q.Text) == "" {
		return nil, apiError(http.StatusBadRequest, "missing_field", `query parameter "q" is required`)
	}
	if s.Search == nil {
		return nil, apiError(http.StatusServiceUnavailable, "unavailable", "this server has no search index")
	}
	res, err := s.Search.Search(r.Context(), q)
	if err != nil {
		return nil, err
	}
	out := api.SearchAnswer{Hits: []api.SearchHit{}, Incomplete: res.Incomplete, Unreadable: res.Progress.Unreadable}
	if res.Progress.Building {
		out.Indexed, out.Total = res.Progress.Done, res.Progress.Total
	}
	for _, h := range res.Hits {
		hit := api.SearchHit{SessionID: h.Session, Title: h.Title, Thread: h.Thread, Index: h.Index, Kind: h.Kind, At: h.At,
			Snippet: h.Snippet, Highlights: []api.Highlight{}, URL: s.hitURL(h)}
		for _, m := range h.Marks {
			hit.Highlights = append(hit.Highlights, api.Highlight{Start: m[0], End: m[1]})
		}
		out.Hits = append(out.Hits, hit)
	}
	if res.Next > 0 {
		out.NextCursor = strconv.FormatInt(res.Next, 10)
	}
	return out, nil
}

// hitURL is the page that shows hit h: its thread, at its message.
func (s *server) hitURL(h search.Hit) string {
	return s.sessionURL(h.Session) + "t/" + h.Thread + "#" + views.MessageID(h.Thread, h.Index)
}

// hitViews renders hits for the pages: each snippet cut at its marks.
func (s *server) hitViews(hits []search.Hit) []views.SearchHit {
	out := make([]views.SearchHit, 0, len(hits))
	for _, h := range hits {
		v := views.SearchHit{Title: orUntitled(h.Title, h.Session), URL: s.hitURL(h), Kind: kindLabel(h.Kind), When: ago(h.At)}
		runes := []rune(h.Snippet)
		at := 0
		for _, m := range h.Marks {
			if m[0] < at || m[1] > len(runes) {
				continue
			}
			v.Pieces = append(v.Pieces, views.SnippetPiece{Text: string(runes[at:m[0]])}, views.SnippetPiece{Text: string(runes[m[0]:m[1]]), Match: true})
			at = m[1]
		}
		v.Pieces = append(v.Pieces, views.SnippetPiece{Text: string(runes[at:])})
		out = append(out, v)
	}
	return out
}

func kindLabel(kind string) string {
	switch kind {
	case "user":
		return "you wrote"
	case "answer":
		return "answer"
	case "tool_input":
		return "tool call"
	case "tool_output":
		return "tool output"
	case "path":
		return "file"
	}
	return kind
}

// switcherLimit bounds each part of the quick switcher's results.
const switcherLimit = 8

// switcher answers the quick switcher (Ctrl+K) as you type: the sessions whose title
// matches, by last activity, then the messages that do.
func (s *server) switcher(w http.ResponseWriter, r *http.Request) error {
	q := strings.TrimSpace(r.URL.Query().Get("q"))
	v := views.SwitcherView{Query: q}
	if q != "" {
		list, err := s.Sessions.List(r.Context(), sessions.ListOptions{Query: q, All: true})
		if err != nil {
			return err
		}
		byActivity(list)
		v.Sessions = s.rows(list[:min(len(list), switcherLimit)], "")
		v.Hits, v.Note = s.contentHits(r.Context(), search.Query{Text: q, Limit: switcherLimit})
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	return views.Switcher(v).Render(r.Context(), w)
}

// contentHits runs a content search for a page: the hits, and a note when the index is
// being built (or there is none).
func (s *server) contentHits(ctx context.Context, q search.Query) ([]views.SearchHit, string) {
	if s.Search == nil || strings.TrimSpace(q.Text) == "" {
		return nil, ""
	}
	res, err := s.Search.Search(ctx, q)
	if err != nil {
		s.Log.Warn("content search", "err", err)
		return nil, "the search of messages failed; the log says why"
	}
	note := ""
	if res.Incomplete {
		note = "still indexing (" + strconv.Itoa(res.Progress.Done) + " of " + strconv.Itoa(res.Progress.Total) + " sessions): some messages are not found yet"
	}
	return s.hitViews(res.Hits), note
}
