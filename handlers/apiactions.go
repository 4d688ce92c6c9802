package handlers

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"myco.dev/agent/model"
	"myco.dev/api"
	"myco.dev/internal/web"
	"myco.dev/sessions"
)

// maxActionBody bounds the body of an action: a submit may carry attachments, each within
// the caps of sessions.Attach, at most maxUploads of them.
const maxActionBody = 32 << 20

// The bounds of a blocking call: a submit with wait, a cancel.
const (
	waitDefault       = 600 // seconds
	waitMax           = 3600
	cancelWaitDefault = 10
	cancelWaitMax     = 600
)

// apiAction does one action on a session, idempotent by request_id. The body's action
// field says which, and the body is then decoded strictly as that action's type: a field
// another action takes is refused (unknown_field), one this action needs and lacks is a
// missing_field.
func (s *server) apiAction(w http.ResponseWriter, r *http.Request) (any, error) {
	id := chi.URLParam(r, "id")
	body, err := web.ReadJSON(w, r, maxActionBody)
	if err != nil {
		return nil, err
	}
	if err := web.CheckJSON(body); err != nil {
		return nil, err
	}
	var head struct {
		Action json.RawMessage `json:"action"`
	}
	if err := json.Unmarshal(body, &head); err != nil {
		return nil, apiError(http.StatusBadRequest, "invalid_json", "the body is not a JSON object")
	}
	var action string
	switch {
	case head.Action == nil:
		return nil, missing("action")
	case json.Unmarshal(head.Action, &action) != nil:
		return nil, apiError(http.StatusBadRequest, "invalid_field", `field "action" must be a string`)
	case action == "":
		return nil, missing("action")
	}
	req, ok := api.NewAction(action)
	if !ok {
		return nil, apiError(http.StatusBadRequest, "unknown_action", "unknown action "+strconv.Quote(action)+"; the actions are "+strings.Join(api.ActionNames(), ", "))
	}
	if err := web.UnmarshalJSON(body, req); err != nil {
		if e, ok := errors.AsType[*web.Error](err); ok && e.Code == "unknown_field" {
			return nil, web.NewError(e.Status, e.Code, "action "+action+": "+e.Message)
		}
		return nil, err
	}
	sess, st, err := s.Sessions.Snapshot(r.Context(), id)
	if err != nil {
		return nil, err
	}
	switch req := req.(type) {
	case *api.SubmitAction:
		return s.apiSubmit(w, r, id, sess.Cwd, st, req)
	case *api.SelectModelAction:
		if err := s.configured(); err != nil {
			return nil, err
		}
		if !s.known(req.Model) {
			return nil, apiError(http.StatusBadRequest, "unknown_model", "no model "+strconv.Quote(req.Model)+" in the catalog; the models are "+strings.Join(s.modelKeys(), ", "))
		}
		return s.act(r, id, req.RequestID, action, sessions.ActSelectModel, req.Model)
	case *api.SetTitleAction:
		return s.act(r, id, req.RequestID, action, sessions.ActSetTitle, req.Title)
	case *api.CompactAction:
		if err := s.configured(); err != nil {
			return nil, err
		}
		return s.act(r, id, req.RequestID, action, sessions.ActCompact, "")
	case *api.RetryAction:
		if err := s.configured(); err != nil {
			return nil, err
		}
		arg := ""
		if req.MaxCost != nil {
			arg = strconv.FormatFloat(*req.MaxCost, 'g', -1, 64)
		}
		return s.act(r, id, req.RequestID, action, sessions.ActRetry, arg)
	case *api.ArchiveAction:
		return s.act(r, id, req.RequestID, action, sessions.ActArchive, "")
	case *api.RestoreAction:
		return s.act(r, id, req.RequestID, action, sessions.ActRestore, "")
	case *api.UndoTurnAction:
		return s.restore(r, id, action, req.RequestID, sessions.RestoreRequest{Op: sessions.OpUndo, Turn: &sessions.TurnRef{Thread: req.Thread, Turn: *req.Turn}, Overwrite: req.Overwrite})
	case *api.RedoTurnAction:
		return s.restore(r, id, action, req.RequestID, sessions.RestoreRequest{Op: sessions.OpRedo, Turn: &sessions.TurnRef{Thread: req.Thread, Turn: *req.Turn}, Overwrite: req.Overwrite})
	case *api.RevertFileAction:
		q := sessions.RestoreRequest{Op: sessions.OpRevert, Host: req.Host, Path: req.Path}
		if req.Turn != nil {
			q.Turn = &sessions.TurnRef{Thread: req.Thread, Turn: *req.Turn}
		}
		if req.Overwrite {
			q.Overwrite = []string{req.Path}
		}
		return s.restore(r, id, action, req.RequestID, q)
	case *api.ApproveAction:
		return s.apiApproval(r, id, req.RequestID, action, sessions.Answer{Approval: req.Approval, Always: req.Always})
	case *api.DenyAction:
		return s.apiApproval(r, id, req.RequestID, action, sessions.Answer{Approval: req.Approval, Reason: req.Reason})
	case *api.SetModeAction:
		if !s.approver(r) {
			return nil, s.errNotApprover()
		}
		return s.act(r, id, req.RequestID, action, sessions.ActSetMode, req.Mode)
	}
	return nil, fmt.Errorf("action %s has no handler", action)
}

// act does an action other than submit: action as the API names it, done by the session
// service's act.
func (s *server) act(r *http.Request, id, requestID, action, act, arg string) (any, error) {
	rec, repeat, err := s.Sessions.Act(r.Context(), id, requestID, act, arg)
	if err != nil {
		return nil, err
	}
	return api.ActionAnswer{SessionID: id, RequestID: requestID, Action: action, At: rec.At, Repeat: repeat, Result: rec.Result}, nil
}

// restore does an undo_turn, redo_turn or revert_file: a conflict is a 409 that names
// the files.
func (s *server) restore(r *http.Request, id, action, requestID string, q sessions.RestoreRequest) (any, error) {
	q.RequestID = requestID
	out, err := s.Sessions.Restore(r.Context(), id, q)
	if err != nil {
		return nil, err
	}
	ans := api.ActionAnswer{SessionID: id, RequestID: requestID, Action: action, At: out.At, Repeat: out.Repeat,
		Result: fmt.Sprintf("%d file(s) put back", len(out.Restored)), Restored: []string{}, LeftAlone: out.LeftAlone}
	for _, p := range out.Restored {
		name := p.Path
		if p.Host != "local" {
			name = p.Host + ":" + p.Path
		}
		ans.Restored = append(ans.Restored, name)
	}
	return ans, nil
}

// apiSubmit submits a message: its text, the files its @path tokens name, and its
// attachments. It answers once the message is durable, or, with wait, once its turn ended.
func (s *server) apiSubmit(w http.ResponseWriter, r *http.Request, id, dir string, st sessions.Status, req *api.SubmitAction) (any, error) {
	if err := s.configured(); err != nil {
		return nil, err
	}
	if strings.TrimSpace(req.Text) == "" && len(req.Attachments) == 0 {
		return nil, apiError(http.StatusBadRequest, "missing_field", `field "text" is required (or "attachments")`)
	}
	if len(req.Text) > maxForm {
		return nil, apiError(http.StatusRequestEntityTooLarge, "too_large", fmt.Sprintf("the text is %d bytes, over the %d a message may have; send long text as an attachment", len(req.Text), maxForm))
	}
	timeout := waitDefault
	switch {
	case req.TimeoutSecs != 0 && !req.Wait:
		return nil, apiError(http.StatusBadRequest, "invalid_field", `field "timeout_secs" goes with "wait": true`)
	case req.TimeoutSecs < 0 || req.TimeoutSecs > waitMax:
		return nil, apiError(http.StatusBadRequest, "invalid_field", fmt.Sprintf(`field "timeout_secs" must be from 1 to %d`, waitMax))
	case req.TimeoutSecs > 0:
		timeout = req.TimeoutSecs
	}
	maxImage := s.model(st.Model).MaxImageBase64Bytes
	files, err := apiAttachments(req.Attachments, maxImage)
	if err != nil {
		return nil, err
	}
	sub := sessions.Submission{Text: req.Text, Uploads: files}
	warnings := []string{}
	if req.Text != "" {
		refs, warned := s.pathAttachments(req.Text, dir, maxImage)
		sub.Refs, warnings = refs, append(warnings, warned...)
	}
	// The cursor before the submission: /api/events?after= it misses none of the turn's
	// events, however late the stream is opened. A repeat's turn began earlier, so it
	// gets none (its client reads the snapshot, which has its own).
	cursor := s.Sessions.EventID()
	acc, err := s.Sessions.SubmitRequest(r.Context(), id, req.RequestID, sub)
	if err != nil {
		return nil, err
	}
	out := api.SubmitAnswer{SessionID: id, RequestID: req.RequestID, Action: "submit", AcceptedAt: acc.At, Thread: acc.Thread, Repeat: acc.Repeat,
		JobID: acc.JobID, Warnings: warnings}
	if !acc.Repeat {
		out.EventID = cursor
	}
	if req.Wait {
		if err := s.waitTurn(w, r, id, req.RequestID, acc.JobID, time.Duration(timeout)*time.Second, &out); err != nil {
			if r.Context().Err() != nil {
				return nil, nil // the client left: there is nobody to answer
			}
			return nil, err
		}
	}
	return out, nil
}

// waitTurn waits until the turn of job jobID (submitted by request requestID) has ended,
// at most timeout, and says in out how it ended.
func (s *server) waitTurn(w http.ResponseWriter, r *http.Request, id, requestID, jobID string, timeout time.Duration, out *api.SubmitAnswer) error {
	web.Unbounded(w) // the request is read; the server's read bound must not end the wait
	ended := true
	if j := s.Sessions.RunningJob(id); j != nil && jobID != "" && j.ID == jobID {
		t := time.NewTimer(timeout)
		defer t.Stop()
		select {
		case <-j.Done():
		case <-t.C:
			ended = false
		case <-r.Context().Done():
			return context.Cause(r.Context()) // the client left: nobody reads the answer
		}
	}
	out.Ended = &ended
	if !ended {
		out.LastTurn = sessions.TurnRunning
		return nil
	}
	sess, st, err := s.Sessions.Snapshot(r.Context(), id)
	if err != nil {
		return err
	}
	if st.Busy && st.JobID == jobID && jobID != "" {
		ended = false // another process's view: it still runs
		out.LastTurn = sessions.TurnRunning
		return nil
	}
	if latestRequest(sess) != requestID || st.LastTurn.Status == sessions.TurnRunning {
		return nil // a later turn was accepted since: this one's end is in the messages
	}
	out.LastTurn = st.LastTurn.Status
	out.LastError = lastError(st.LastTurn)
	answer := st.LastTurn.Answer
	out.Answer = &answer
	return nil
}

// latestRequest is the request id of the session's latest accepted input, as the
// snapshot's last_turn reads it: the newest thread's first, then its predecessors'.
func latestRequest(sess *sessions.Session) string {
	for i := len(sess.Threads) - 1; i >= 0; i-- {
		es := sess.Threads[i].Entries
		for k := len(es) - 1; k >= 0; k-- {
			if es[k].AcceptedAt != nil {
				return es[k].RequestID
			}
		}
	}
	return ""
}

// apiAttachments turns the attachments of a submit into parts, held to the caps and checks
// of the browser's uploads (sessions.Attach); a refused one is a 400 bad_attachment that
// names it and why.
func apiAttachments(as []api.Attachment, maxImage int) ([]model.Part, error) {
	if len(as) > maxUploads {
		return nil, apiError(http.StatusBadRequest, "bad_attachment", fmt.Sprintf("%d files are attached; at most %d go with one message", len(as), maxUploads))
	}
	var parts []model.Part
	for i, a := range as {
		name := path.Base(strings.ReplaceAll(a.Name, "\\", "/"))
		if name == "." || name == "/" || strings.TrimSpace(name) == "" {
			return nil, web.MissingField(fmt.Sprintf("attachments[%d].name", i))
		}
		if a.Data == "" {
			return nil, web.MissingField(fmt.Sprintf("attachments[%d].data", i))
		}
		data, err := base64.StdEncoding.DecodeString(a.Data)
		if err != nil {
			return nil, apiError(http.StatusBadRequest, "invalid_field", fmt.Sprintf("attachments[%d].data (%s) is not standard base64", i, name))
		}
		p, err := sessions.Attach(name, data, int64(len(data)), maxImage)
		if err != nil {
			return nil, apiError(http.StatusBadRequest, "bad_attachment", err.Error())
		}
		parts = append(parts, p)
	}
	return parts, nil
}

// pathAttachments attaches the files that the @path tokens of text name, as the browser
// does (sessions.Attachments), one token at a time, so that a token that cannot be
// attached (a device, a binary file, one too big) goes as text with a warning instead of
// failing the message; so does a token that looks like a path and names no file
// (sessions.MissingAttachments).
func (s *server) pathAttachments(text, dir string, maxImage int) (parts []model.Part, warnings []string) {
	seen := map[string]bool{}
	for _, tok := range strings.Fields(text) {
		if len(tok) < 2 || tok[0] != '@' || seen[tok] {
			continue
		}
		seen[tok] = true
		ps, err := sessions.Attachments(tok, dir, s.Home, maxImage)
		if err != nil {
			warnings = append(warnings, err.Error()+"; it went as text")
			continue
		}
		parts = append(parts, ps[1:]...)
	}
	for _, name := range sessions.MissingAttachments(text, dir, s.Home) {
		warnings = append(warnings, "@"+name+" names no file in "+dir+"; it went as text")
	}
	return parts, warnings
}

// apiCancel stops the session's running turn or compaction, retry waits included: the job
// job_id names (a no-op when that one has ended), else whatever runs; and answers once it
// has ended, or after timeout_secs with stopping: true.
func (s *server) apiCancel(w http.ResponseWriter, r *http.Request) (any, error) {
	id := chi.URLParam(r, "id")
	var req api.CancelRequest
	if r.ContentLength != 0 {
		if err := decode(w, r, &req); err != nil {
			return nil, err
		}
	}
	if req.TimeoutSecs < 0 || req.TimeoutSecs > cancelWaitMax {
		return nil, apiError(http.StatusBadRequest, "invalid_field", fmt.Sprintf(`field "timeout_secs" must be from 0 to %d`, cancelWaitMax))
	}
	timeout := cancelWaitDefault
	if req.TimeoutSecs > 0 {
		timeout = req.TimeoutSecs
	}
	if _, _, err := s.Sessions.Snapshot(r.Context(), id); err != nil {
		return nil, err
	}
	out := api.CancelAnswer{SessionID: id, EventID: s.Sessions.EventID(), APIURL: s.base + "/api/sessions/" + id}
	j := s.Sessions.RunningJob(id)
	if j == nil || req.JobID != "" && j.ID != req.JobID {
		return out, nil
	}
	// The job seen is the one stopped: a job that ends meanwhile is not followed by a stop
	// of the next one.
	if out.Stopped = s.Sessions.Cancel(id, j.ID); !out.Stopped {
		return out, nil
	}
	out.JobID = j.ID
	web.Unbounded(w)
	t := time.NewTimer(time.Duration(timeout) * time.Second)
	defer t.Stop()
	select {
	case <-j.Done():
	case <-t.C:
		out.Stopping = true
	case <-r.Context().Done():
		return nil, nil // the client left: there is nobody to answer
	}
	return out, nil
}
