package handlers

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"net/http"

	"myco.dev/api"
	"myco.dev/policy"
	"myco.dev/sessions"
	"myco.dev/views"
)

// The approval capability (see docs/security.md, "Only the person approves"): a secret in
// myco's home that the person's browser holds in a cookie and the person's API client
// sends in a header. Tool processes are never given it (it is in no environment, and the
// sandbox cannot read myco's home), so a command cannot answer its own approval or widen
// its session's mode through the API, although it can reach the API.
const (
	ApprovalHeader = "Myco-Approval"
	approvalCookie = "myco_approval"
)

// approver reports whether r carries the approval capability.
func (s *server) approver(r *http.Request) bool {
	if s.ApprovalKey == "" {
		return false
	}
	key := r.Header.Get(ApprovalHeader)
	if key == "" {
		if c, err := r.Cookie(approvalCookie); err == nil {
			key = c.Value
		}
	}
	return key != "" && subtle.ConstantTimeCompare([]byte(key), []byte(s.ApprovalKey)) == 1
}

// errNotApprover is the answer to an approval or a mode change without the capability.
func (s *server) errNotApprover() error {
	return apiError(http.StatusForbidden, "approval_refused",
		"only the person may answer an approval or change a session's mode: send the approval capability (the "+ApprovalHeader+" header, or the browser's cookie from the link myco printed at start, or `myco approve-link`)")
}

// grantApprover is GET /approve?key=…: the link myco prints at start. A right key puts the
// capability in an HttpOnly cookie and sends the browser to the sessions; it leaves the
// address bar without the key.
func (s *server) grantApprover(w http.ResponseWriter, r *http.Request) error {
	key := r.URL.Query().Get("key")
	if s.ApprovalKey == "" || subtle.ConstantTimeCompare([]byte(key), []byte(s.ApprovalKey)) != 1 {
		http.Error(w, "this approval link is not this server's: run `myco approve-link` for the right one", http.StatusForbidden)
		return nil
	}
	http.SetCookie(w, &http.Cookie{Name: approvalCookie, Value: s.ApprovalKey, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode, MaxAge: 400 * 24 * 3600})
	http.Redirect(w, r, s.base+"/", http.StatusSeeOther)
	return nil
}

// apiApproval answers approve and deny.
func (s *server) apiApproval(r *http.Request, id, requestID, action string, ans sessions.Answer) (any, error) {
	if !s.approver(r) {
		return nil, s.errNotApprover()
	}
	arg, _ := json.Marshal(ans)
	act := sessions.ActDeny
	if action == api.ActionApprove {
		act = sessions.ActApprove
	}
	return s.act(r, id, requestID, action, act, string(arg))
}

// apiApprovals lists the pending approvals of a session and of its tree below it.
func (s *server) apiApprovals(w http.ResponseWriter, r *http.Request) (any, error) {
	list, err := s.Sessions.PendingApprovals(r.Context(), r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	out := api.ApprovalsAnswer{Approvals: []api.TreeApproval{}}
	for _, a := range list {
		out.Approvals = append(out.Approvals, api.TreeApproval{Session: a.Session, Approval: apiApprovalOf(a.Approval)})
	}
	return out, nil
}

// apiApprovalOf converts an approval of the session service.
func apiApprovalOf(a sessions.Approval) api.Approval {
	return api.Approval{ID: a.ID, Thread: a.Thread, Tool: a.Tool, Input: a.Input, Host: a.Host, Command: a.Command, Paths: a.Paths,
		OutsideSandbox: a.Escalate, Justification: a.Justification, Reason: a.Reason, Rule: a.Rule, Mode: a.Mode, Requested: a.Requested,
		Status: a.Status, Always: a.Always, Answer: a.Answer, Resolved: a.Resolved}
}

// answerApproval is the session page's Allow once / Allow always / Deny: form fields
// answer (once, always or deny) and reason. Like the API it needs the capability.
func (s *server) answerApproval(w http.ResponseWriter, r *http.Request) error {
	if err := form(w, r); err != nil {
		return err
	}
	if !s.approver(r) {
		return s.errNotApprover()
	}
	id, call := r.PathValue("id"), r.PathValue("call")
	ans := sessions.Answer{Approval: call}
	switch r.PostFormValue("answer") {
	case "once":
		ans.Allow = true
	case "always":
		ans.Allow, ans.Always = true, true
	case "deny":
		ans.Reason = r.PostFormValue("reason")
	default:
		return apiError(http.StatusBadRequest, "invalid_field", `field "answer" must be once, always or deny`)
	}
	if _, err := s.Sessions.Resolve(r.Context(), id, ans); err != nil && !errors.Is(err, sessions.ErrNoApproval) {
		return err // answered already (a second click, another tab): the card goes with the stream
	}
	return done(w, r, s.sessionURL(id))
}

// setMode is the session page's mode menu: form field mode.
func (s *server) setMode(w http.ResponseWriter, r *http.Request) error {
	if err := form(w, r); err != nil {
		return err
	}
	if !s.approver(r) {
		return s.errNotApprover()
	}
	id := r.PathValue("id")
	if err := s.Sessions.SetMode(r.Context(), id, policy.Mode(r.PostFormValue("mode"))); err != nil {
		return err
	}
	return done(w, r, s.sessionURL(id))
}

// approvals is the approvals slot of session sess's page: its mode and its pending
// approvals, then those of the sessions of its tree below it (a child's request shows on
// its parent and its root, answered from there), with the answers when approver (this
// browser holds the capability).
func (s *server) approvals(ctx context.Context, sess *sessions.Session, approver bool) views.ApprovalsView {
	mode := s.Sessions.Mode(sess)
	v := views.ApprovalsView{Mode: string(mode), ModeText: mode.Describe(), ModeURL: s.sessionURL(sess.ID) + "mode",
		Sandbox: s.Sessions.Guard().SandboxSupport(), Approver: approver}
	for _, m := range policy.Modes {
		v.Modes = append(v.Modes, string(m))
	}
	for _, a := range sess.Approvals {
		v.Items = append(v.Items, s.approvalView(sess.ID, sess.Cwd, a))
	}
	below, err := s.Sessions.PendingApprovalsBelow(ctx, sess.ID)
	if err != nil {
		s.Log.Warn("list the approvals of the tree", "session_id", sess.ID, "err", err) // its own show still
	}
	for _, a := range below {
		child, _, err := s.Sessions.Snapshot(ctx, a.Session)
		if err != nil {
			continue
		}
		item := s.approvalView(child.ID, child.Cwd, a.Approval)
		item.Session, item.SessionURL = orUntitled(child.Title, child.ID), s.sessionURL(child.ID)
		item.ID = child.ID + "-" + a.ID // the card's element id: call ids are each session's own
		v.Items = append(v.Items, item)
	}
	return v
}

// approvalView is the card of pending approval a of session id.
func (s *server) approvalView(id, cwd string, a sessions.Approval) views.ApprovalView {
	v := views.ApprovalView{ID: a.ID, Tool: a.Tool, Host: a.Host, Command: a.Command, Paths: a.Paths, Escalate: a.Escalate,
		Justification: a.Justification, Reason: a.Reason, Rule: a.Rule, URL: s.sessionURL(id) + "approvals/" + a.ID}
	if a.Tool == policy.EditorTool {
		var in map[string]any
		json.Unmarshal(a.Input, &in)
		cmd, _ := in["command"].(string)
		path, _ := in["path"].(string)
		v.Diff = editDiff(cmd, path, in)
	}
	if v.Command == "" && v.Diff == nil && len(v.Paths) == 0 {
		var pretty bytes.Buffer
		if json.Indent(&pretty, a.Input, "", "  ") == nil {
			v.Input = pretty.String()
		}
	}
	return v
}

// approvalsSlot renders the session page's approvals slot for this browser: the stream's
// partial loads it (see views.ApprovalsLoader).
func (s *server) approvalsSlot(w http.ResponseWriter, r *http.Request) error {
	sess, _, err := s.Sessions.Snapshot(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	return views.Approvals(s.approvals(r.Context(), sess, s.approver(r))).Render(r.Context(), w)
}
