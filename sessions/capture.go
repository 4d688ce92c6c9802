package sessions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"myco.dev/agent/model"
	"myco.dev/hosts/snapshot"
)

// Snapshotter is a [ToolHost] that captures, diffs and restores the files of a session's
// directory on the host its tools ran on (see myco.dev/hosts/snapshot): the local store,
// or a remote host daemon's. The service captures around each tool batch and drives the
// Changes view, undo, redo and the revert of a file through it.
type Snapshotter interface {
	Capture(ctx context.Context, host string, r snapshot.CaptureRequest) (snapshot.CaptureResult, error)
	Diff(ctx context.Context, host string, from, to snapshot.ID, o snapshot.DiffOptions) (*snapshot.Diff, error)
	Restore(ctx context.Context, host string, r snapshot.RestoreRequest) (*snapshot.RestoreResult, error)
	Prune(ctx context.Context, host, owner string, keep []snapshot.ID) (snapshot.PruneResult, error)
}

// SnapshotOptions configures the captures of a session's files (the config's [snapshots]
// table). The zero value captures nothing.
type SnapshotOptions struct {
	Enabled bool
	// MaxFileBytes is the size above which a file is recorded as changed but not stored;
	// 0 means the store's default (2 MiB).
	MaxFileBytes int64
	// MaxFiles bounds the entries one capture lists; 0 means no bound.
	MaxFiles int
	// KeepTurns is how many of a session's last turns keep their snapshots; 0 means 100.
	KeepTurns int
	// Exclude are absolute directories never captured on the local host (myco's own:
	// its sessions, its snapshot store), for a session whose directory holds them.
	Exclude []string
}

// captureRequest is the capture of host's directory for session (dir is its directory
// on local), naming files outside it.
func captureRequest(session, dir string, o SnapshotOptions, host string, files []string) snapshot.CaptureRequest {
	r := snapshot.CaptureRequest{Owner: session, MaxFiles: o.MaxFiles, MaxFileSize: o.MaxFileBytes, Files: files}
	if host != "local" {
		// A remote host is captured at its login directory, which no one chose: one that
		// takes longer than this to walk (a large home) is not captured.
		r.MaxTime = remoteCaptureTime
	}
	if host == "local" {
		r.Dir = dir
		for _, e := range o.Exclude {
			if e = filepath.Clean(e); strings.HasPrefix(e, dir+"/") {
				r.Exclude = append(r.Exclude, snapshot.ExcludeDir(dir, e))
			}
		}
	}
	return r
}

// Capture is what a tool batch's captures recorded of one host's directory: the snapshot
// before the batch's calls and the one after. It is saved on the entry of the batch's
// results, in the checkpoint of the batch, so that it survives a restart.
type Capture struct {
	Host string `json:"host"`
	// Dir is the directory captured on Host: the session's on local, the host's working
	// directory on a remote.
	Dir    string      `json:"dir,omitempty"`
	Before snapshot.ID `json:"before,omitempty"`
	After  snapshot.ID `json:"after,omitempty"`
	// NotStored counts the files recorded after the batch without their content (over
	// the size cap).
	NotStored int `json:"not_stored,omitempty"`
	// Error says why the directory was not captured (too many files, no store); Before
	// and After are then empty or one of them is.
	Error string `json:"error,omitempty"`
}

// remoteCaptureTime bounds the walk of a remote host's capture.
const remoteCaptureTime = 5 * time.Second

// captureTimeout bounds one capture after a batch, which a stop does not cut short: the
// files the batch changed are recorded even when the turn was stopped during it.
const captureTimeout = time.Minute

// readOnly are the tools whose calls change no file: a batch of only these is not captured.
var readOnly = []string{"view_image", "session_history", "session_meta", "prelude"}

// writes reports whether call may change files on its host.
func writes(call model.ToolCall) bool {
	if slices.Contains(readOnly, call.Name) {
		return false
	}
	if call.Name == "str_replace_based_edit_tool" {
		var in struct {
			Command string `json:"command"`
		}
		if json.Unmarshal(call.Input, &in) == nil && in.Command == "view" {
			return false
		}
	}
	return true
}

// editorPath returns the path an editor call writes, as it names it, or "".
func editorPath(call model.ToolCall) string {
	if call.Name != "str_replace_based_edit_tool" {
		return ""
	}
	var in struct {
		Command, Path string
	}
	if json.Unmarshal(call.Input, &in) != nil || in.Command == "view" {
		return ""
	}
	return in.Path
}

// captures is the capture state of one turn: the last snapshot of each host it captured,
// the files outside the directory its editor calls wrote, and the captures of the batch
// under way, which the next checkpoint saves.
type captures struct {
	snaps   Snapshotter
	o       SnapshotOptions
	session string // the store's owner of the snapshots
	dir     string // the session's directory on local

	// tooLarge holds, by host, the directories a capture found too large (the runtime's,
	// kept across turns): walking 100,000 entries again before every batch would cost
	// seconds each time.
	tooLarge *sync.Map
	last     map[string]Capture  // by host: the newest capture of this turn
	outside  map[string][]string // by host: absolute paths outside Dir that editor calls wrote
	pending  []Capture           // the batch's, for its checkpoint
}

// around runs a batch between two captures of each host its calls may write on: before
// (only for a host the turn has not captured yet: the last capture after stands for it)
// and after.
func (c *captures) around(ctx context.Context, calls []model.ToolCall, run func(context.Context) []model.ToolResult, log func(host string, err error)) []model.ToolResult {
	var hosts []string
	for _, call := range calls {
		if !writes(call) {
			continue
		}
		h := hostOf(call.Input)
		if !slices.Contains(hosts, h) {
			hosts = append(hosts, h)
		}
		if p := editorPath(call); p != "" {
			c.noteOutside(h, p)
		}
	}
	if len(hosts) == 0 {
		return run(ctx)
	}
	if c.last == nil {
		c.last = map[string]Capture{}
	}
	before := map[string]Capture{}
	for _, h := range hosts {
		if prev, ok := c.last[h]; ok && prev.After != "" {
			before[h] = Capture{Host: h, Dir: prev.Dir, Before: prev.After}
			continue
		}
		if why, ok := c.tooLarge.Load(h); ok {
			before[h] = Capture{Host: h, Error: why.(string)}
			continue
		}
		res, err := c.capture(ctx, h, false)
		if err != nil {
			log(h, err)
			before[h] = Capture{Host: h, Error: describeCapture(err)}
			if errors.Is(err, snapshot.ErrTooLarge) {
				c.tooLarge.Store(h, describeCapture(err))
			}
			continue
		}
		before[h] = Capture{Host: h, Dir: res.Dir, Before: res.ID}
	}
	results := run(ctx)
	bg, cancel := context.WithTimeout(context.WithoutCancel(ctx), captureTimeout)
	defer cancel()
	for _, h := range hosts {
		cp := before[h]
		if cp.Error != "" {
			c.pending = append(c.pending, cp)
			continue
		}
		res, err := c.capture(bg, h, true)
		if err != nil {
			log(h, err)
			cp.Error = describeCapture(err)
		} else {
			cp.Dir, cp.After, cp.NotStored = res.Dir, res.ID, res.NotStored
		}
		c.pending = append(c.pending, cp)
		if cp.After != "" {
			c.last[h] = cp
		}
	}
	return results
}

// capture captures host's directory. A capture after a batch trusts the host's watch of
// the directory (the kernel's notifications) and lists only what changed; the turn's
// first lists everything, so it also sees what no notification reports (a write through
// mmap, say) and what changed while no one watched.
func (c *captures) capture(ctx context.Context, host string, watch bool) (snapshot.CaptureResult, error) {
	r := captureRequest(c.session, c.dir, c.o, host, c.outside[host])
	r.Watch = watch
	return c.snaps.Capture(ctx, host, r)
}

// noteOutside remembers an editor path outside the session's directory, which the
// captures of host name one by one from then on. Paths on a remote host are kept only
// when absolute: its directory is its own.
func (c *captures) noteOutside(host, p string) {
	if !filepath.IsAbs(p) {
		return
	}
	p = filepath.Clean(p)
	if host == "local" && c.dir != "" && (p == c.dir || strings.HasPrefix(p, c.dir+"/")) {
		return
	}
	if c.outside == nil {
		c.outside = map[string][]string{}
	}
	if !slices.Contains(c.outside[host], p) {
		c.outside[host] = append(c.outside[host], p)
	}
}

// take returns the captures of the batch under way and forgets them.
func (c *captures) take() []Capture {
	p := c.pending
	c.pending = nil
	return p
}

// describeCapture says why a directory was not captured, in a person's words.
func describeCapture(err error) string {
	switch {
	case errors.Is(err, snapshot.ErrTooLarge) && strings.Contains(err.Error(), "still walking"):
		return "the directory is too large to capture quickly (a remote host is captured at its login directory), so this session's changes there are not recorded"
	case errors.Is(err, snapshot.ErrTooLarge):
		return "the directory holds more files than a capture lists ([snapshots] max_files), so this turn's changes are not recorded"
	case errors.Is(err, snapshot.ErrNotFound):
		return "a snapshot of this turn is no longer in the store"
	}
	return fmt.Sprintf("the files were not captured: %s", cause(err))
}

// pruneEvery is how many turns past KeepTurns a session goes between two prunes: a prune
// walks the whole store, so it is not done at every turn.
const pruneEvery = 10

// prune drops the session's snapshots that its last KeepTurns turns no longer need, once
// turns fall out of that window (every pruneEvery turns): it keeps every capture of those
// turns, the first capture of each host (which the whole session's changes compare with),
// the newest, and those of the restores of the turns kept. A store that another process
// has open is pruned another time.
func (rt *runtime) prune(ctx context.Context, log func(msg string, args ...any)) {
	if rt.snaps == nil {
		return
	}
	keepN := rt.snapOpts.KeepTurns
	if keepN <= 0 {
		keepN = 100
	}
	keep := map[string][]snapshot.ID{}
	add := func(host string, ids ...snapshot.ID) {
		for _, id := range ids {
			if id != "" && !slices.Contains(keep[host], id) {
				keep[host] = append(keep[host], id)
			}
		}
	}
	var prune bool
	rt.doc.view(func(s *Session) {
		type turnCaps struct {
			thread string
			start  int
			caps   []Capture
		}
		var turns []turnCaps
		seen := map[snapshot.ID]bool{}
		for _, th := range s.Threads {
			for i := range th.Entries {
				if !isTurnStart(th, i) {
					continue
				}
				tc := turnCaps{thread: th.ID, start: i}
				for _, e := range th.Entries[i+1:] {
					if turnStart(e) && !e.Rejected {
						break
					}
					tc.caps = append(tc.caps, e.Snapshots...)
				}
				if len(tc.caps) == 0 || seen[tc.caps[0].After] {
					continue // none, or inherited from a predecessor
				}
				seen[tc.caps[0].After] = true
				turns = append(turns, tc)
			}
		}
		over := len(turns) - keepN
		if over <= 0 || over%pruneEvery != 1 && pruneEvery > 1 {
			return
		}
		prune = true
		kept := map[string]bool{}
		for _, tc := range turns[over:] {
			kept[tc.thread+"/"+strconv.Itoa(tc.start)] = true
			for _, c := range tc.caps {
				add(c.Host, c.Before, c.After)
			}
		}
		for _, sp := range sessionSpans(s) {
			add(sp.Host, sp.Before)
		}
		for h, id := range s.heads {
			add(h, id)
		}
		for _, r := range s.restores {
			if kept[r.Thread+"/"+strconv.Itoa(r.Turn)] || r.Thread == "" {
				for _, p := range r.Parts {
					add(p.Host, p.From, p.To, p.Head)
				}
			}
		}
	})
	if !prune {
		return
	}
	for host, ids := range keep {
		res, err := rt.snaps.Prune(ctx, host, rt.doc.id, ids)
		if err != nil && !errors.Is(err, snapshot.ErrBusy) {
			log("prune of the session's snapshots failed", "session_id", rt.doc.id, "host", host, "err", err)
			continue
		}
		log("pruned the session's snapshots", "session_id", rt.doc.id, "host", host, "kept", len(ids), "result", fmt.Sprintf("%+v", res))
	}
}
