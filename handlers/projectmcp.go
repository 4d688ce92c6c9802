package handlers

import (
	"errors"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"

	"myco.dev/hosts"
	"myco.dev/internal/shquote"
	"myco.dev/internal/web"
	"myco.dev/sessions"
	"myco.dev/views"
)

// The MCP servers a session's project offers (its directory's .mcp.json): the page says
// what they are, the exact commands and URLs, and approves them on the person's click.

// projectView is what sess's directory offers, for its page; nil when it offers nothing.
func (s *server) projectView(sess *sessions.Session) *views.ProjectView {
	if s.Project == nil || sess.Cwd == "" {
		return nil
	}
	st := s.Project(sess.Cwd)
	if !st.Offers() {
		return nil
	}
	v := &views.ProjectView{File: st.File, Problem: st.Problem, Sum: st.Sum}
	switch {
	case st.Problem != "":
		v.State = "unusable"
	case st.Approved:
		v.State = "approved"
	case st.Changed:
		v.State = "changed"
	default:
		v.State = "offered"
	}
	usable := false
	for _, ps := range st.Servers {
		sv := views.ProjectServerView{Label: "project:" + ps.Name, Kind: "stdio", Problem: ps.Problem, Vars: ps.Vars}
		if ps.URL != "" {
			sv.Kind, sv.Target = "http", ps.URL
		} else {
			q := []string{shquote.Quote(ps.Command)}
			for _, a := range ps.Args {
				q = append(q, shquote.Quote(a))
			}
			sv.Target = strings.Join(q, " ")
		}
		for _, k := range slices.Sorted(maps.Keys(ps.Env)) {
			sv.Env = append(sv.Env, k+"="+ps.Env[k])
		}
		for _, k := range slices.Sorted(maps.Keys(ps.Headers)) {
			sv.Headers = append(sv.Headers, k+": "+ps.Headers[k])
		}
		if st.Approved && ps.Problem == "" {
			sv.State = "starts with the session's next message"
			for _, ms := range st.States {
				if ms.Server != ps.Server {
					continue
				}
				switch ms.State {
				case hosts.MCPListed:
					sv.State = "started, " + strconv.Itoa(len(ms.Tools)) + " tools"
					if len(ms.Tools) == 1 {
						sv.State = "started, 1 tool"
					}
				case hosts.MCPFailed:
					sv.State = "failed: " + ms.Err
				}
			}
		}
		usable = usable || ps.Problem == ""
		v.Servers = append(v.Servers, sv)
	}
	if !st.Approved && st.Problem == "" && usable && s.ApproveProject != nil {
		v.ApproveURL = s.sessionURL(sess.ID) + "mcp/approve"
	}
	return v
}

// approveProject records the person's approval of the project file of the session's
// directory, as the page showed it (form field sum, its digest), and shows the page again.
// The directory is the session's, never the form's.
func (s *server) approveProject(w http.ResponseWriter, r *http.Request) error {
	if s.ApproveProject == nil {
		return errNotFound
	}
	if err := form(w, r); err != nil {
		return err
	}
	id := chi.URLParam(r, "id")
	sess, _, err := s.Sessions.Snapshot(r.Context(), id)
	if err != nil {
		return err
	}
	err = s.ApproveProject(sess.Cwd, r.PostForm.Get("sum"))
	switch {
	case errors.Is(err, hosts.ErrProjectChanged):
		return httpError(http.StatusConflict, "The project's .mcp.json changed since the page showed it, so nothing was approved. Reload the page and look at it again.")
	case err != nil:
		return err
	}
	web.Redirect(w, r, s.sessionURL(id), http.StatusSeeOther)
	return nil
}
