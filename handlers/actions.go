package handlers

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"myco.dev/agent/model"
	"myco.dev/internal/web"
	"myco.dev/sessions"
	"myco.dev/views"
)

// maxForm bounds a form post: a message with its text, not a file upload.
const maxForm = 1 << 20

// Uploads: at most maxUploads files and maxUpload bytes in all, of which maxUploadMemory
// are held in memory (the rest spools to temporary files, which [server.handle] removes).
const (
	maxUploads      = 20
	maxUpload       = 64 << 20
	maxUploadMemory = 8 << 20
)

// uploadForm parses a posted form that may carry files (multipart/form-data), within
// maxUpload; a plain form is parsed as [form] does. Call it only from a handler that
// [server.handle] wraps, which removes the files spooled to disk.
func uploadForm(w http.ResponseWriter, r *http.Request) error {
	if !strings.HasPrefix(r.Header.Get("Content-Type"), "multipart/form-data") {
		return form(w, r)
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxUpload)
	if err := r.ParseMultipartForm(maxUploadMemory); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return httpError(http.StatusRequestEntityTooLarge, fmt.Sprintf("The message and its files are over %d MiB in all; attach fewer or smaller files.", maxUpload>>20))
		}
		return &web.Error{Status: http.StatusBadRequest, Message: "The request is not a form this server understands.", Err: err}
	}
	return nil
}

// uploads turns the files of a multipart submit into parts, held to the same caps and
// checks as @path attachments; a refused file is an error that names it and why.
func uploads(r *http.Request, maxImageBase64 int) ([]model.Part, error) {
	if r.MultipartForm == nil {
		return nil, nil
	}
	files := r.MultipartForm.File["files"]
	if len(files) > maxUploads {
		return nil, fmt.Errorf("%d files are attached; at most %d go with one message", len(files), maxUploads)
	}
	var parts []model.Part
	for _, fh := range files {
		f, err := fh.Open()
		if err != nil {
			return nil, fmt.Errorf("read the attached file %s: %w", fh.Filename, err)
		}
		data, err := io.ReadAll(io.LimitReader(f, sessions.AttachmentLimit(maxImageBase64)+1))
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("read the attached file %s: %w", fh.Filename, err)
		}
		name := path.Base(strings.ReplaceAll(fh.Filename, "\\", "/"))
		if name == "." || name == "/" || name == "" {
			name = "attachment"
		}
		p, err := sessions.Attach(name, data, fh.Size, maxImageBase64)
		if err != nil {
			return nil, err
		}
		parts = append(parts, p)
	}
	return parts, nil
}

// form parses a posted form within maxForm; a body that is too big or not a form is a 400
// that says so.
func form(w http.ResponseWriter, r *http.Request) error {
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	if err := r.ParseForm(); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return httpError(http.StatusRequestEntityTooLarge, "The form is over 1 MiB; send a shorter message or attach the file with @path.")
		}
		return &web.Error{Status: http.StatusBadRequest, Message: "The request is not a form this server understands.", Err: err}
	}
	return nil
}

func htmx(r *http.Request) bool { return r.Header.Get("HX-Request") != "" }

// done answers a successful action: nothing for htmx, a redirect to the page otherwise
// (so the page works without JavaScript).
func done(w http.ResponseWriter, r *http.Request, page string) error {
	if htmx(r) {
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
	web.Redirect(w, r, page, http.StatusSeeOther)
	return nil
}

// goTo sends the browser to page: with HX-Redirect for htmx, with a 303 otherwise.
func goTo(w http.ResponseWriter, r *http.Request, page string) error {
	if htmx(r) {
		w.Header().Set("HX-Redirect", web.LocalPath(page))
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
	web.Redirect(w, r, page, http.StatusSeeOther)
	return nil
}

func (s *server) known(key string) bool {
	for _, m := range s.Models {
		if m.Key == key {
			return true
		}
	}
	return false
}

// submit sends the composer's text (form field text) as a turn. /compact compacts, /new
// starts a new session; @path attaches a file. A message sent while a turn runs is queued
// (see [server.send]). The answer is a fresh composer, or the same text with what was wrong.
func (s *server) submit(w http.ResponseWriter, r *http.Request) error {
	if err := uploadForm(w, r); err != nil {
		return err
	}
	id := chi.URLParam(r, "id")
	sess, st, err := s.Sessions.Snapshot(r.Context(), id)
	if err != nil {
		return err
	}
	text := r.PostForm.Get("text")
	refuse := func(status int, msg string) error {
		c := s.composer(sess, st, false)
		c.Text, c.Error = text, msg
		if !htmx(r) {
			return httpError(status, msg)
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(status)
		return views.Composer(c).Render(r.Context(), w)
	}
	if sess.Latest() == nil {
		return errNotFound
	}
	if err := s.configured(); err != nil {
		return s.refusal(r, err, refuse)
	}
	queued := false
	switch cmd := strings.TrimSpace(text); {
	case cmd == "/help":
		if !htmx(r) {
			web.Redirect(w, r, s.sessionURL(id), http.StatusSeeOther)
			return nil
		}
		c := s.composer(sess, st, false)
		c.Notice = composerHelp
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		return views.Composer(c).Render(r.Context(), w)
	case cmd == "/new":
		// A new session is made with its first message: the page that takes it, in this
		// session's directory and on its model.
		return goTo(w, r, s.base+"/new?cwd="+url.QueryEscape(sess.Cwd)+"&model="+url.QueryEscape(st.Model))
	case cmd == "/compact":
		if _, err := s.Sessions.Compact(r.Context(), id); err != nil {
			return s.refusal(r, err, refuse)
		}
	case strings.HasPrefix(cmd, "/") && !strings.Contains(strings.Fields(cmd)[0][1:], "/"):
		return refuse(http.StatusBadRequest, "Unknown command "+quote(strings.Fields(cmd)[0])+": the commands are /compact, /new and /help. To send a message that starts with /, put a space before it.")
	default:
		input, err := s.message(r, text, sess.Cwd, st.Model)
		if err != nil {
			return s.refusal(r, err, refuse)
		}
		if queued, err = s.send(r, id, input); err != nil {
			return s.refusal(r, err, refuse)
		}
	}
	if !htmx(r) {
		web.Redirect(w, r, s.sessionURL(id), http.StatusSeeOther)
		return nil
	}
	c := s.composer(sess, st, false)
	sent := "Sent."
	if queued {
		sent = "Queued: it is sent when the running turn ends; edit or cancel it above until then."
		c.Notice = sent
	}
	if missing := sessions.MissingAttachments(text, sess.Cwd, s.Home); len(missing) > 0 {
		c.Notice = fmt.Sprintf("%s @%s names no file in %s, so it goes as text.", sent, strings.Join(missing, ", @"), sess.Cwd)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	return views.Composer(c).Render(r.Context(), w)
}

// composerHelp is what /help says, in the composer.
const composerHelp = "Commands: /compact summarises the conversation so far and goes on in a new thread with the summary; " +
	"/new starts a new session in this directory; /help shows this. @path attaches a file of the session's directory " +
	"(or ~/path); Enter sends, Shift+Enter breaks the line, Esc stops a running turn, ↑ in an empty box recalls your last message."

// message is the input of a message: its text with the files its @paths name (in cwd),
// and the files uploaded with it, held to the caps of model key; an error is an answer
// that says what was refused.
func (s *server) message(r *http.Request, text, cwd, key string) ([]model.Part, error) {
	if len(text) > maxForm {
		return nil, httpError(http.StatusRequestEntityTooLarge, fmt.Sprintf("The message is %d bytes, over the %d a message may have; attach long text as a file.", len(text), maxForm))
	}
	limit := s.model(key).MaxImageBase64Bytes
	files, err := uploads(r, limit)
	if err != nil {
		return nil, httpError(http.StatusBadRequest, err.Error())
	}
	if strings.TrimSpace(text) == "" {
		if len(files) == 0 {
			return nil, httpError(http.StatusBadRequest, "The message is empty.")
		}
		return files, nil
	}
	parts, err := sessions.Attachments(text, cwd, s.Home, limit)
	if err != nil {
		return nil, httpError(http.StatusBadRequest, err.Error())
	}
	return append(parts, files...), nil
}

// send submits input as a turn of session id and answers once it is durable, so that a
// refusal or a failed save shows in the composer; while a job runs on the session in this
// process, it queues input instead, to run when the job ends, and reports queued.
func (s *server) send(r *http.Request, id string, input []model.Part) (queued bool, err error) {
	j, err := s.Sessions.Submit(r.Context(), id, input...)
	if busy, ok := errors.AsType[*sessions.BusyError](err); ok && busy.Holder == "" {
		_, err = s.Sessions.Enqueue(r.Context(), id, input...)
		return err == nil, err
	}
	if err != nil {
		return false, err
	}
	if _, err := j.Accepted(r.Context()); err != nil && !errors.Is(err, r.Context().Err()) {
		return false, err
	}
	return false, nil
}

// editResend sends an edit of a user's message (form field text): the session goes on
// from there in a successor thread.
func (s *server) editResend(w http.ResponseWriter, r *http.Request) error {
	if err := form(w, r); err != nil {
		return err
	}
	if err := s.configured(); err != nil {
		return err
	}
	id := chi.URLParam(r, "id")
	entry, err := strconv.Atoi(chi.URLParam(r, "entry"))
	if err != nil {
		return errNotFound
	}
	text := r.PostForm.Get("text")
	switch {
	case strings.TrimSpace(text) == "":
		return httpError(http.StatusBadRequest, "The edited message is empty.")
	case len(text) > maxForm:
		return httpError(http.StatusRequestEntityTooLarge, fmt.Sprintf("The message is %d bytes, over the %d a message may have.", len(text), maxForm))
	}
	edit := s.Sessions.EditResend
	if r.PostForm.Get("restore") != "" {
		edit = s.Sessions.EditRestore // files and conversation together
	}
	j, err := edit(r.Context(), id, chi.URLParam(r, "thread"), entry, text)
	if err != nil {
		return err
	}
	if _, err := j.Accepted(r.Context()); err != nil && !errors.Is(err, r.Context().Err()) {
		return err
	}
	return done(w, r, s.sessionURL(id))
}

// runQueued starts the first queued message when nothing runs (Send now).
func (s *server) runQueued(w http.ResponseWriter, r *http.Request) error {
	if err := s.configured(); err != nil {
		return err
	}
	id := chi.URLParam(r, "id")
	s.Sessions.RunQueued(r.Context(), id)
	return done(w, r, s.sessionURL(id))
}

// editQueued replaces the text of a queued message (form field text).
func (s *server) editQueued(w http.ResponseWriter, r *http.Request) error {
	if err := form(w, r); err != nil {
		return err
	}
	id := chi.URLParam(r, "id")
	text := r.PostForm.Get("text")
	if len(text) > maxForm {
		return httpError(http.StatusRequestEntityTooLarge, fmt.Sprintf("The message is %d bytes, over the %d a message may have.", len(text), maxForm))
	}
	if err := s.Sessions.EditQueued(r.Context(), id, chi.URLParam(r, "qid"), text); err != nil {
		return err
	}
	return done(w, r, s.sessionURL(id))
}

// unqueue withdraws a queued message.
func (s *server) unqueue(w http.ResponseWriter, r *http.Request) error {
	id := chi.URLParam(r, "id")
	if err := s.Sessions.Unqueue(r.Context(), id, chi.URLParam(r, "qid")); err != nil {
		return err
	}
	return done(w, r, s.sessionURL(id))
}

// refusal answers a submit or compaction the service refused (busy, stopped, shutting
// down, a failed start) in the composer, with the status and sentence of the one mapping;
// a failure of the server is logged there, once.
func (s *server) refusal(r *http.Request, err error, refuse func(int, string) error) error {
	e := s.errors.Answer(r, err)
	return refuse(e.Status, e.Message)
}

// stop stops the session's running turn or compaction, including a retry wait: the job
// of form field job when the page sends it (a stop sent for a turn that has ended since
// then does not stop the next one), else whatever runs.
func (s *server) stop(w http.ResponseWriter, r *http.Request) error {
	if err := form(w, r); err != nil {
		return err
	}
	id := chi.URLParam(r, "id")
	if _, _, err := s.Sessions.Snapshot(r.Context(), id); err != nil {
		return err
	}
	s.Sessions.Cancel(id, r.PostForm.Get("job"))
	return done(w, r, s.sessionURL(id))
}

// retry sends the session's last turn again when it failed, was stopped or was rejected
// (the Retry button of its end note).
func (s *server) retry(w http.ResponseWriter, r *http.Request) error {
	if err := s.configured(); err != nil {
		return err
	}
	id := chi.URLParam(r, "id")
	if v := r.PostFormValue("max_cost"); v != "" { // the retry of a turn its budget stopped
		maxCost, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return sessions.ErrInvalidBudget
		}
		if err := s.Sessions.SetMaxCost(r.Context(), id, maxCost); err != nil {
			return err
		}
	}
	if _, err := s.Sessions.Retry(r.Context(), id); err != nil {
		return err
	}
	if !htmx(r) {
		web.Redirect(w, r, s.sessionURL(id), http.StatusSeeOther)
		return nil
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	return views.Retrying().Render(r.Context(), w)
}

// compact starts a compaction (the /compact button and command).
func (s *server) compact(w http.ResponseWriter, r *http.Request) error {
	if err := s.configured(); err != nil {
		return err
	}
	id := chi.URLParam(r, "id")
	if _, err := s.Sessions.Compact(r.Context(), id); err != nil {
		return err
	}
	return done(w, r, s.sessionURL(id))
}

// archive returns the handler that archives (or restores) a session. From the list
// (htmx), the answer is the session's new row; otherwise a redirect to the session.
func (s *server) archive(archived bool) func(http.ResponseWriter, *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		id := chi.URLParam(r, "id")
		if err := s.Sessions.SetArchived(r.Context(), id, archived); err != nil {
			return err
		}
		if !htmx(r) {
			web.Redirect(w, r, s.sessionURL(id), http.StatusSeeOther)
			return nil
		}
		sess, st, err := s.Sessions.Snapshot(r.Context(), id)
		if err != nil {
			return err
		}
		var mod time.Time
		if th := sess.Latest(); th != nil {
			mod = th.Created
		}
		row := views.SessionRow{ID: id, URL: s.sessionURL(id), Title: sess.Title, Model: st.Model, Busy: st.Busy,
			Archived: sess.Archived, Activity: ago(mod), ISOTime: mod.Format(time.RFC3339),
			Cwd: shortDir(sess.Cwd, s.Home), CwdPath: sess.Cwd, CwdURL: s.sessionsURL(sess.Cwd)}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		return views.SessionItem(s.base, row).Render(r.Context(), w)
	}
}

// selectModel makes form field model the session's model for its next turns.
func (s *server) selectModel(w http.ResponseWriter, r *http.Request) error {
	if err := form(w, r); err != nil {
		return err
	}
	if err := s.configured(); err != nil {
		return err
	}
	id := chi.URLParam(r, "id")
	key := r.PostForm.Get("model")
	if key == "" {
		return httpError(http.StatusBadRequest, "The request names no model: post the form field model, a key of the catalog.")
	}
	if !s.known(key) {
		return httpError(http.StatusBadRequest, "There is no model "+quote(key)+" in the catalog.")
	}
	if err := s.Sessions.SelectModel(r.Context(), id, key); err != nil {
		return err
	}
	return done(w, r, s.sessionURL(id))
}

func quote(s string) string { return "“" + oneLine(s, 80) + "”" }
