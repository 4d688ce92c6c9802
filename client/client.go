package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"

	"myco.dev/api"
)

// Client calls one profile's API. Its zero value is not usable: make it with [New] or
// [FromEnv]. It is safe for concurrent use.
type Client struct {
	// URL is the profile's URL, MYCO_SERVER_URL: http://127.0.0.1:PORT/profiles/NAME.
	URL string
	// HTTP sends the requests; nil means http.DefaultClient. Its Timeout, if any, bounds
	// blocking calls (a submit with Wait, a cancel) and event streams too.
	HTTP *http.Client
	// Authorization is the value of the Authorization header, in token mode ("Bearer …");
	// empty sends none.
	Authorization string
	// ApprovalKey is the approval capability (MYCO_HOME/approval.key), sent as the
	// Myco-Approval header: approve, deny and set_mode need it. Only the person's own
	// client holds it; an agent's tools never do.
	ApprovalKey string
}

// New returns a client of the profile at url (MYCO_SERVER_URL).
func New(url string) *Client { return &Client{URL: strings.TrimSuffix(url, "/")} }

// FromEnv returns a client of the profile an agent's tools run in: MYCO_SERVER_URL, and in
// token mode the header line of the file MYCO_SERVER_TOKEN_FILE names.
func FromEnv() (*Client, error) {
	u := os.Getenv("MYCO_SERVER_URL")
	if u == "" {
		return nil, errors.New("client: MYCO_SERVER_URL is not set: run this from a myco session's tools")
	}
	c := New(u)
	if f := os.Getenv("MYCO_SERVER_TOKEN_FILE"); f != "" {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("client: read the token file: %w", err)
		}
		name, value, ok := strings.Cut(strings.TrimSpace(string(b)), ":")
		if !ok || !strings.EqualFold(strings.TrimSpace(name), "Authorization") {
			return nil, fmt.Errorf("client: %s does not hold an Authorization header", f)
		}
		c.Authorization = strings.TrimSpace(value)
	}
	return c, nil
}

// Error is an error answer of the API: its status, its stable code (docs/browser.md lists
// them) and its sentence.
type Error struct {
	Status  int
	Code    string
	Message string
	// Files are the files of a conflict (code "conflict"): an undo, redo or revert would
	// overwrite them.
	Files []api.ConflictFile
}

func (e *Error) Error() string {
	return fmt.Sprintf("myco API: %d %s: %s", e.Status, e.Code, e.Message)
}

// IsCode reports whether err is an API error with code.
func IsCode(err error, code string) bool {
	e, ok := errors.AsType[*Error](err)
	return ok && e.Code == code
}

func (c *Client) http() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	return http.DefaultClient
}

// do sends a request to path under the API, with body as JSON unless nil, and returns the
// answer when its status is 2xx, else an [*Error].
func (c *Client) do(ctx context.Context, method, path string, body any, header http.Header) (*http.Response, error) {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.URL+"/api"+path, r)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.Authorization != "" {
		req.Header.Set("Authorization", c.Authorization)
	}
	if c.ApprovalKey != "" {
		req.Header.Set("Myco-Approval", c.ApprovalKey)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := c.http().Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		var env api.ErrorAnswer
		if json.Unmarshal(b, &env) != nil || env.Error.Code == "" {
			return nil, &Error{Status: resp.StatusCode, Code: "", Message: strings.TrimSpace(string(b))}
		}
		return nil, &Error{Status: resp.StatusCode, Code: env.Error.Code, Message: env.Error.Message, Files: env.Error.Files}
	}
	return resp, nil
}

// call sends a request and decodes its JSON answer into out.
func (c *Client) call(ctx context.Context, method, path string, body, out any) error {
	resp, err := c.do(ctx, method, path, body, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("client: decode the answer of %s %s: %w", method, path, err)
	}
	return nil
}

// Create creates a session (see [api.CreateRequest]); the same RequestID again answers the
// same session with Created false.
func (c *Client) Create(ctx context.Context, req api.CreateRequest) (api.CreateAnswer, error) {
	var out api.CreateAnswer
	return out, c.call(ctx, "POST", "/sessions", req, &out)
}

// ListOptions filter and page a listing; zero values are the server's defaults.
type ListOptions struct {
	IncludeHidden bool
	Archived      string // "", "true" or "all"
	Parent, Query string
	Limit         int
	Cursor        string // a api.ListAnswer's NextCursor
}

// List lists sessions, newest first, a page at a time: NextCursor, when set, is the next
// page's Cursor.
func (c *Client) List(ctx context.Context, o ListOptions) (api.ListAnswer, error) {
	q := url.Values{}
	if o.IncludeHidden {
		q.Set("include_hidden", "true")
	}
	set(q, "archived", o.Archived)
	set(q, "parent", o.Parent)
	set(q, "q", o.Query)
	set(q, "cursor", o.Cursor)
	if o.Limit > 0 {
		q.Set("limit", strconv.Itoa(o.Limit))
	}
	var out api.ListAnswer
	return out, c.call(ctx, "GET", "/sessions"+query(q), nil, &out)
}

func set(q url.Values, k, v string) {
	if v != "" {
		q.Set(k, v)
	}
}

func query(q url.Values) string {
	if len(q) == 0 {
		return ""
	}
	return "?" + q.Encode()
}

// SnapshotOptions page a snapshot's messages; zero values are the server's defaults.
type SnapshotOptions struct {
	Limit  int
	Before int // a api.SnapshotAnswer's NextBefore; 0 means the newest
}

// Snapshot reads session id's snapshot.
func (c *Client) Snapshot(ctx context.Context, id string, o SnapshotOptions) (api.SnapshotAnswer, error) {
	q := url.Values{}
	if o.Limit > 0 {
		q.Set("limit", strconv.Itoa(o.Limit))
	}
	if o.Before > 0 {
		q.Set("before", strconv.Itoa(o.Before))
	}
	var out api.SnapshotAnswer
	return out, c.call(ctx, "GET", "/sessions/"+url.PathEscape(id)+query(q), nil, &out)
}

// Answer returns the final answer of session id's last turn, as it is ("" when that turn
// has none), and how the turn stands (the snapshot's last_turn) with its error's code.
func (c *Client) Answer(ctx context.Context, id string) (answer, lastTurn, errorCode string, err error) {
	resp, err := c.do(ctx, "GET", "/sessions/"+url.PathEscape(id)+"/answer", nil, nil)
	if err != nil {
		return "", "", "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), resp.Header.Get("Myco-Last-Turn"), resp.Header.Get("Myco-Last-Error"), err
}

// Submit sends a message to session id (Action is set to submit). With Wait, it answers
// once the turn has ended, or TimeoutSecs passed (Ended false: submit the same request
// again to wait on); see [Client.Run].
func (c *Client) Submit(ctx context.Context, id string, req api.SubmitAction) (api.SubmitAnswer, error) {
	req.Action = api.ActionSubmit
	var out api.SubmitAnswer
	return out, c.call(ctx, "POST", "/sessions/"+url.PathEscape(id)+"/actions", req, &out)
}

// Run submits a message and waits for its turn's end however long it takes (or until ctx
// ends), sending the same request again whenever a wait of timeoutSecs (0 for the
// server's default) ends first.
func (c *Client) Run(ctx context.Context, id string, req api.SubmitAction, timeoutSecs int) (api.SubmitAnswer, error) {
	req.Wait, req.TimeoutSecs = true, timeoutSecs
	for {
		out, err := c.Submit(ctx, id, req)
		if err != nil || out.Ended == nil || *out.Ended {
			return out, err
		}
	}
}

// act sends an action other than submit.
func (c *Client) act(ctx context.Context, id string, req any) (api.ActionAnswer, error) {
	var out api.ActionAnswer
	return out, c.call(ctx, "POST", "/sessions/"+url.PathEscape(id)+"/actions", req, &out)
}

// SelectModel makes catalog model key session id's model from its next turn on.
func (c *Client) SelectModel(ctx context.Context, id, requestID, key string) (api.ActionAnswer, error) {
	return c.act(ctx, id, api.SelectModelAction{RequestID: requestID, Action: api.ActionSelectModel, Model: key})
}

// SetTitle renames session id.
func (c *Client) SetTitle(ctx context.Context, id, requestID, title string) (api.ActionAnswer, error) {
	return c.act(ctx, id, api.SetTitleAction{RequestID: requestID, Action: api.ActionSetTitle, Title: title})
}

// Compact starts a compaction of session id's active thread.
func (c *Client) Compact(ctx context.Context, id, requestID string) (api.ActionAnswer, error) {
	return c.act(ctx, id, api.CompactAction{RequestID: requestID, Action: api.ActionCompact})
}

// Retry sends session id's last turn again, when it failed, was stopped or was rejected.
func (c *Client) Retry(ctx context.Context, id, requestID string) (api.ActionAnswer, error) {
	return c.act(ctx, id, api.RetryAction{RequestID: requestID, Action: api.ActionRetry})
}

// Archive archives session id.
func (c *Client) Archive(ctx context.Context, id, requestID string) (api.ActionAnswer, error) {
	return c.act(ctx, id, api.ArchiveAction{RequestID: requestID, Action: api.ActionArchive})
}

// Restore brings archived session id back.
func (c *Client) Restore(ctx context.Context, id, requestID string) (api.ActionAnswer, error) {
	return c.act(ctx, id, api.RestoreAction{RequestID: requestID, Action: api.ActionRestore})
}

// UndoTurn puts back every file turn (thread's input entry; "" is the active thread)
// changed, as it was before the turn, overwriting the conflicting files overwrite names.
// A conflict is an [*Error] of code "conflict" whose Files name the files.
func (c *Client) UndoTurn(ctx context.Context, id, requestID, thread string, turn int, overwrite []string) (api.ActionAnswer, error) {
	return c.act(ctx, id, api.UndoTurnAction{RequestID: requestID, Action: api.ActionUndoTurn, Thread: thread, Turn: &turn, Overwrite: overwrite})
}

// RedoTurn puts an undone turn's changes back.
func (c *Client) RedoTurn(ctx context.Context, id, requestID, thread string, turn int, overwrite []string) (api.ActionAnswer, error) {
	return c.act(ctx, id, api.RedoTurnAction{RequestID: requestID, Action: api.ActionRedoTurn, Thread: thread, Turn: &turn, Overwrite: overwrite})
}

// RevertFile puts one file back as it was before a turn (req.Turn set) or the session.
func (c *Client) RevertFile(ctx context.Context, id string, req api.RevertFileAction) (api.ActionAnswer, error) {
	req.Action = api.ActionRevertFile
	return c.act(ctx, id, req)
}

// ChangesOptions choose what [Client.Changes] asks for: a turn (Turn set; Thread "" is the
// active thread) or the whole session; Path one file; NoPatch the counts only.
type ChangesOptions struct {
	Thread   string
	Turn     *int
	Path     string
	NoPatch  bool
	MaxBytes int
}

// Changes returns what a turn or the whole session changed in its files.
func (c *Client) Changes(ctx context.Context, id string, o ChangesOptions) (api.ChangesAnswer, error) {
	q := url.Values{}
	if o.Turn != nil {
		q.Set("turn", strconv.Itoa(*o.Turn))
		if o.Thread != "" {
			q.Set("thread", o.Thread)
		}
	}
	if o.Path != "" {
		q.Set("path", o.Path)
	}
	if o.NoPatch {
		q.Set("patch", "false")
	}
	if o.MaxBytes > 0 {
		q.Set("max_bytes", strconv.Itoa(o.MaxBytes))
	}
	path := "/sessions/" + url.PathEscape(id) + "/changes"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var out api.ChangesAnswer
	return out, c.call(ctx, "GET", path, nil, &out)
}

// Cancel stops session id's running job (only job req.JobID, when set) and answers once it
// has ended, or with Stopping after req.TimeoutSecs (0 for the server's default).
func (c *Client) Cancel(ctx context.Context, id string, req api.CancelRequest) (api.CancelAnswer, error) {
	var out api.CancelAnswer
	return out, c.call(ctx, "POST", "/sessions/"+url.PathEscape(id)+"/cancel", req, &out)
}

// Models lists the model catalog.
func (c *Client) Models(ctx context.Context) (api.ModelsAnswer, error) {
	var out api.ModelsAnswer
	return out, c.call(ctx, "GET", "/models", nil, &out)
}

// Version answers the versions of myco, of the API and of the host protocol.
func (c *Client) Version(ctx context.Context) (api.VersionAnswer, error) {
	var out api.VersionAnswer
	return out, c.call(ctx, "GET", "/version", nil, &out)
}

// OpenAPI returns the API's OpenAPI document.
func (c *Client) OpenAPI(ctx context.Context) ([]byte, error) {
	resp, err := c.do(ctx, "GET", "/openapi.json", nil, nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return io.ReadAll(resp.Body)
}

// Approve lets pending approval approval of session id run; with always, its rule joins
// the session's rules. It needs [Client.ApprovalKey].
func (c *Client) Approve(ctx context.Context, id, requestID, approval string, always bool) (api.ActionAnswer, error) {
	return c.act(ctx, id, api.ApproveAction{RequestID: requestID, Action: api.ActionApprove, Approval: approval, Always: always})
}

// Deny refuses pending approval approval of session id, telling the model reason. It
// needs [Client.ApprovalKey].
func (c *Client) Deny(ctx context.Context, id, requestID, approval, reason string) (api.ActionAnswer, error) {
	return c.act(ctx, id, api.DenyAction{RequestID: requestID, Action: api.ActionDeny, Approval: approval, Reason: reason})
}

// SetMode changes session id's approval mode. It needs [Client.ApprovalKey].
func (c *Client) SetMode(ctx context.Context, id, requestID, mode string) (api.ActionAnswer, error) {
	return c.act(ctx, id, api.SetModeAction{RequestID: requestID, Action: api.ActionSetMode, Mode: mode})
}

// Approvals lists the pending approvals of session id and of its tree below it.
func (c *Client) Approvals(ctx context.Context, id string) (api.ApprovalsAnswer, error) {
	var out api.ApprovalsAnswer
	return out, c.call(ctx, "GET", "/sessions/"+url.PathEscape(id)+"/approvals", nil, &out)
}
