package sessions

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"myco.dev/agent/model"
	"myco.dev/hosts/tools"
)

// Tools is the tool executor a runtime drives; *hosts.Executor satisfies it. It must be
// safe for concurrent use.
type Tools interface {
	Specs() []model.ToolSpec
	Call(ctx context.Context, call model.ToolCall) model.ToolResult
}

// runtimeOptions configures a runtime.
type runtimeOptions struct {
	Doc *document // the session's document, which the runtime owns from then on
	// Tools runs the session's tool calls on behalf of Owner; nil means no tools.
	Tools Tools
	// Owner is the tool-resource owner: every bash session and read stamp the calls create
	// belongs to it. A different session, or a new process, has a different owner.
	Owner string
	// Dir is the session's directory: every tool call carries it ([tools.WithWorkDir]), so
	// the local tools work there, and the runtime facts name it. "" means none.
	Dir string
	// Inventory lists the tool handles Owner holds now; nil means the runtime tracks none.
	Inventory func(ctx context.Context) (Inventory, error)
	Now       func() time.Time // nil means time.Now
	// PartialEvery is how often a streaming answer is saved for a crash; 0 means
	// [partialEvery].
	PartialEvery time.Duration
	// OnMeta, when set, is called after each metadata change Update saved (the
	// session tools' included), so that front ends hear of it.
	OnMeta func()
	// Sink gets the events of the session's turns and compactions; nil drops them. It is
	// called from the run and tool goroutines, one call at a time.
	Sink func(event)
	// Snapshots captures the session's files around its tool batches; nil captures none.
	Snapshots    Snapshotter
	SnapshotOpts SnapshotOptions
	// Guard decides the session's tool calls; nil runs them all at once.
	Guard *Guard
}

// runtime binds one session to its tool executor and resource owner. It outlives threads
// and agents: compaction, rewinds and agent replacement keep it, and with it the live tools.
// Turns and compactions take the session's writer gate, which the runtimes of one session
// share within a store and, through an advisory file lock, across stores and processes; a
// runtime whose document another writer changed reloads it when it takes the gate. It is
// safe for concurrent use.
type runtime struct {
	store     *Store
	doc       *document // the session's document: its one owner
	tools     Tools
	owner     string
	dir       string // the session's directory
	inventory func(ctx context.Context) (Inventory, error)
	now       func() time.Time
	onMeta    func()
	partial   time.Duration // how often a streaming answer is saved
	snaps     Snapshotter   // nil when the session's files are not captured
	snapOpts  SnapshotOptions
	tooLarge  sync.Map // by host: why its directory is not captured (see captures)
	guard     *Guard   // nil: every call runs at once

	sinkMu sync.Mutex // serializes the calls of sink
	sink   func(event)

	mu sync.Mutex // guards the fields below; the document has its own lock
	// holds counts the holders of the session's writer gate through this runtime: a turn
	// or a compaction, and the metadata updates that join it meanwhile. The gate is let go
	// (unlock, set while holds > 0) when the last of them lets go.
	holds  int
	unlock func()
	// failed is the save error that stopped this session's work (fail closed).
	failed      error
	autoOff     bool     // auto-compaction is disabled until a manual compaction succeeds
	lastHandles []string // the last inventory taken, reported when a later one fails
	// toolCall is when the last tool call started; heldAt when an inventory last found
	// handles (holdsTools asks again once a call came after it, or a while passed).
	toolCall, heldAt time.Time
	// waiters are the calls waiting for an approval's answer, by approval id.
	waiters map[string]chan resolution
}

// newRuntime returns the runtime of the session of o.Doc.
func newRuntime(o runtimeOptions) (*runtime, error) {
	if o.Doc == nil {
		return nil, fmt.Errorf("sessions: a runtime needs a session document")
	}
	if o.Owner == "" {
		return nil, fmt.Errorf("sessions: runtime of session %s has no owner", o.Doc.id)
	}
	now := o.Now
	if now == nil {
		now = time.Now
	}
	ts := o.Tools
	if ts != nil && o.Dir != "" {
		ts = dirTools{Tools: ts, dir: o.Dir}
	}
	partial := o.PartialEvery
	if partial <= 0 {
		partial = partialEvery
	}
	return &runtime{store: o.Doc.store, doc: o.Doc, tools: ts, owner: o.Owner, dir: o.Dir, inventory: o.Inventory,
		now: now, onMeta: o.OnMeta, sink: o.Sink, partial: partial, snaps: o.Snapshots, snapOpts: o.SnapshotOpts,
		guard: o.Guard}, nil
}

// View calls f with the session document while no write changes it.
func (rt *runtime) View(f func(*Session)) { rt.doc.view(f) }

// Update calls f with a copy of the session document and then saves the metadata f set.
// f must change metadata only (title, links, scratchpad, archive status). Outside this
// runtime's turns and compactions it takes the session's writer gate for the write, and
// with it a reload of a document another writer changed, so that a stale copy never
// overwrites newer metadata; during them (the session tools, the API while a turn runs) it
// joins their hold on the gate, which is kept until the write is done.
func (rt *runtime) Update(ctx context.Context, f func(*Session)) error {
	if err := rt.update(ctx, f); err != nil {
		return err
	}
	if rt.onMeta != nil {
		rt.onMeta()
	}
	return nil
}

func (rt *runtime) update(ctx context.Context, f func(*Session)) error {
	joined, err := rt.join(ctx)
	if err != nil {
		return err
	}
	defer rt.release()
	if joined {
		err = rt.stopped() // the turn or compaction holding the gate stopped: so does this
	} else {
		err = rt.recover(ctx)
	}
	if err != nil {
		return err
	}
	return rt.doc.updateMeta(ctx, f)
}

// Err returns the save error that stopped the session's work, or nil.
func (rt *runtime) Err() error {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return rt.failed
}

// save is the one fail-closed step after a write of the session's work, given what the
// write returned. A failed write stops the session's model and tool work: the runtime
// keeps the error (Err and stopped report it from then on), a [saveFailed] event says so,
// and the error is returned wrapped in [ErrSaveFailed]. The job that ends with it logs it.
func (rt *runtime) save(err error) error {
	if err == nil {
		return nil
	}
	rt.mu.Lock()
	if rt.failed == nil {
		rt.failed = err
	}
	rt.mu.Unlock()
	rt.emit(saveFailed{Err: err})
	return fmt.Errorf("session %s: %w: %w", rt.doc.id, ErrSaveFailed, err)
}

// emit reports ev to the sink.
func (rt *runtime) emit(ev event) {
	if rt.sink == nil {
		return
	}
	rt.sinkMu.Lock()
	defer rt.sinkMu.Unlock()
	rt.sink(ev)
}

// autoCompactOff reports whether auto-compaction is off: a failed one turned it off until
// a manual compaction succeeds.
func (rt *runtime) autoCompactOff() bool {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return rt.autoOff
}

func (rt *runtime) setAutoCompactOff(off bool) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	rt.autoOff = off
}

// recover lets the work of a session whose save failed go on, at the start of a job, with
// the session's writer gate held: the document is read again from its file, which holds
// what was written (a torn last write is cut off), as after a crash, and the failure is
// forgotten. A turn the failure cut short is then an interrupted one. When the file cannot
// be read, the failure stands. Without a failure it does nothing.
func (rt *runtime) recover(ctx context.Context) error {
	rt.mu.Lock()
	failed := rt.failed
	rt.mu.Unlock()
	if failed == nil {
		return nil
	}
	if err := rt.doc.reopen(ctx); err != nil {
		return fmt.Errorf("session %s: %w: %w; reading it again: %w", rt.doc.id, ErrSaveFailed, failed, err)
	}
	rt.mu.Lock()
	rt.failed = nil
	rt.mu.Unlock()
	rt.emit(notice{Text: "the session's last save had failed; it was read again from its file and its work goes on"})
	return nil
}

func (rt *runtime) stopped() error {
	if err := rt.Err(); err != nil {
		return fmt.Errorf("session %s: %w: %w", rt.doc.id, ErrSaveFailed, err)
	}
	return nil
}

// acquire takes the session's writer gate (see [Store.lockSession]) for a turn or a
// compaction, calling waiting when another process holds it, and then reloads the document
// if another writer changed the file since this runtime read or wrote it. The caller must
// call release.
func (rt *runtime) acquire(ctx context.Context, waiting func(holder string)) error {
	unlock, err := rt.store.lockSession(ctx, rt.doc.id, waiting)
	if err != nil {
		return err
	}
	if err := rt.doc.reload(ctx); err != nil {
		unlock()
		return err
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	// Nobody else holds the gate through this runtime: holds is 0.
	rt.holds++
	rt.unlock = unlock
	return nil
}

// join joins this runtime's hold on the writer gate when it has one (a turn or a
// compaction runs; joined is then true), and else takes the gate as acquire does. The
// caller must call release.
func (rt *runtime) join(ctx context.Context) (joined bool, err error) {
	rt.mu.Lock()
	if rt.holds > 0 {
		rt.holds++
		rt.mu.Unlock()
		return true, nil
	}
	rt.mu.Unlock()
	return false, rt.acquire(ctx, nil)
}

// release ends one hold on the writer gate; the last one lets the gate go.
func (rt *runtime) release() {
	rt.mu.Lock()
	rt.holds--
	var unlock func()
	if rt.holds == 0 {
		unlock, rt.unlock = rt.unlock, nil
	}
	rt.mu.Unlock()
	if unlock != nil {
		unlock()
	}
}

// observe takes the runtime facts now. A failed inventory keeps the last known handles,
// marked stale, rather than claiming there are none.
func (rt *runtime) observe(ctx context.Context, cfg AgentConfig) *Facts {
	var parent string
	rt.doc.view(func(s *Session) { parent = s.Parent })
	f := &Facts{Session: rt.doc.id, Parent: parent, Dir: rt.dir, Owner: rt.owner, Observed: rt.now().UTC(), ModelKey: cfg.ModelKey,
		APIModel: cfg.Options.APIModel, Protocol: cfg.Protocol, Effort: cfg.Options.Effort, ImageCap: cfg.MaxImageBase64Bytes}
	if rt.inventory != nil {
		inv, err := rt.inventory(ctx)
		rt.mu.Lock()
		if err != nil {
			f.Handles, f.Stale = rt.lastHandles, true
		} else {
			f.Handles = inv.lines()
			rt.lastHandles = f.Handles
		}
		rt.mu.Unlock()
	}
	return f
}

// sameFacts reports whether two observations differ only in time.
func sameFacts(a, b *Facts) bool {
	return a.Session == b.Session && a.Parent == b.Parent && a.Dir == b.Dir && a.Owner == b.Owner && a.ModelKey == b.ModelKey && a.APIModel == b.APIModel && a.Protocol == b.Protocol &&
		a.Effort == b.Effort && a.ImageCap == b.ImageCap && a.Stale == b.Stale && slices.Equal(a.Handles, b.Handles)
}

// factsText describes cur to the model, with what changed since prev (nil for none).
func factsText(cur, prev *Facts) string {
	var b strings.Builder
	b.WriteString("[myco: runtime]\n")
	if cur.Session != "" {
		fmt.Fprintf(&b, "# Session\nsession id: %s\n", cur.Session)
		if cur.Parent != "" {
			fmt.Fprintf(&b, "parent session: %s (this is a child session: the parent reads its answer)\n", cur.Parent)
		}
		if cur.Dir != "" {
			fmt.Fprintf(&b, "directory: %s (on local, bash starts here and relative paths resolve here)\n", cur.Dir)
		}
	}
	fmt.Fprintf(&b, "owner: %s\nobserved: %s\n", cur.Owner, cur.Observed.Format(time.RFC3339))
	fmt.Fprintf(&b, "model: %s (api model %s, protocol %s", orUnknown(cur.ModelKey), orUnknown(cur.APIModel), orUnknown(cur.Protocol))
	if cur.Effort != "" {
		fmt.Fprintf(&b, ", effort %s", cur.Effort)
	}
	if cur.ImageCap > 0 {
		fmt.Fprintf(&b, ", view_image up to %d bytes of base64, about %d bytes on disk", cur.ImageCap, cur.ImageCap/4*3)
	}
	b.WriteString(")\n")
	switch {
	case len(cur.Handles) == 0 && !cur.Stale:
		b.WriteString("tool handles: none\n")
	default:
		if cur.Stale {
			b.WriteString("tool handles (last known; the inventory could not be taken now):\n")
		} else {
			b.WriteString("tool handles:\n")
		}
		for _, h := range cur.Handles {
			fmt.Fprintf(&b, "- %s\n", h)
		}
	}
	if prev == nil {
		return b.String()
	}
	if prev.Session != "" && prev.Session != cur.Session {
		fmt.Fprintf(&b, "This session (%s) was forked from session %s: the conversation above happened there. ", cur.Session, prev.Session)
	}
	if prev.Dir != "" && cur.Dir != "" && prev.Dir != cur.Dir {
		fmt.Fprintf(&b, "Notice: this session works in %s; the conversation above worked in %s.\n", cur.Dir, prev.Dir)
	}
	if prev.Owner != cur.Owner {
		fmt.Fprintf(&b, "This is a new runtime: the tool handles of the earlier runtime %s are unavailable here", prev.Owner)
		if len(prev.Handles) > 0 {
			fmt.Fprintf(&b, " (%s)", strings.Join(prev.Handles, "; "))
		}
		b.WriteString(". Live tools were not restored. Their external side effects may survive: inspect them before retrying work, and re-read files before editing.\n")
	}
	if prev.ModelKey != cur.ModelKey || prev.APIModel != cur.APIModel || prev.Protocol != cur.Protocol {
		fmt.Fprintf(&b, "Notice: the model changed from %s (%s) to %s (%s).\n", orUnknown(prev.ModelKey), orUnknown(prev.APIModel), orUnknown(cur.ModelKey), orUnknown(cur.APIModel))
	}
	if prev.Effort != cur.Effort {
		fmt.Fprintf(&b, "Notice: the effort changed from %s to %s.\n", orUnknown(prev.Effort), orUnknown(cur.Effort))
	}
	return b.String()
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// hostOf returns the host a tool call names, "local" when it names none.
func hostOf(input json.RawMessage) string {
	var v struct {
		Host string `json:"host"`
	}
	if json.Unmarshal(input, &v) == nil && v.Host != "" {
		return v.Host
	}
	return "local"
}

// holdsTools reports whether the runtime may hold live tool handles (bash sessions, editor
// read stamps), which closing it would end: it made tool calls and the inventory lists
// handles, or cannot say. A finding of handles stands for a minute unless a call is made.
func (rt *runtime) holdsTools(ctx context.Context) bool {
	rt.mu.Lock()
	call, held := rt.toolCall, rt.heldAt
	rt.mu.Unlock()
	switch {
	case call.IsZero():
		return false
	case !held.IsZero() && held.After(call) && time.Since(held) < time.Minute:
		return true
	case rt.inventory == nil:
		return rt.tools != nil
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	inv, err := rt.inventory(ctx)
	if err == nil && len(inv.lines()) == 0 {
		return false
	}
	rt.mu.Lock()
	rt.heldAt = time.Now()
	rt.mu.Unlock()
	return true
}

// usedTool records that a tool call is made through the runtime.
func (rt *runtime) usedTool() {
	rt.mu.Lock()
	rt.toolCall = time.Now()
	rt.mu.Unlock()
}

// runsProcesses reports whether the runtime's tools keep a process running on some host: a
// bash session that runs, an MCP server that runs. A runtime that never called a tool runs
// none.
func (rt *runtime) runsProcesses(ctx context.Context) bool {
	rt.mu.Lock()
	call := rt.toolCall
	rt.mu.Unlock()
	if call.IsZero() || rt.inventory == nil {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	inv, _ := rt.inventory(ctx)
	for _, h := range inv {
		for _, b := range h.Bash {
			if b.State == "running" {
				return true
			}
		}
		for _, s := range h.MCP {
			if s.State == tools.MCPRunning {
				return true
			}
		}
	}
	return false
}
