package sessions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"myco.dev/agent/model"
	"myco.dev/hosts/sandbox"
	"myco.dev/hosts/tools"
	"myco.dev/policy"
)

// Guard configures the approvals and the sandbox of a profile's sessions: the mode a new
// session starts in, the person's rules, and what the sandbox lets a command do. A nil
// Guard runs every call at once (full mode), as before modes existed.
type Guard struct {
	// Mode is the mode of new sessions; "" means workspace where the sandbox can fence
	// commands and ask where it cannot.
	Mode policy.Mode
	// Rules are the person's rules (config, -p's --allow), checked before a session's own.
	Rules []policy.Rule
	// Fence runs commands in the sandbox; nil means none (sandboxed modes ask instead).
	Fence *sandbox.Fence
	// Writable are directories every sandboxed command may write besides the session's
	// directory and its temporary directory (config: sandbox.writable).
	Writable []string
	// Hidden are paths a sandboxed command may not read: myco's home.
	Hidden []string
	// Ports are the TCP ports a sandboxed command may connect to with the network off:
	// the API's, so that nested agents keep working. Network turns the network on.
	Ports   []uint16
	Network bool
	// TmpRoot is where the sessions' private temporary directories are made; "" means the
	// system's.
	TmpRoot string
	// NonInteractive denies, instead of asking, every call that would ask (-p): the model
	// is told that the person was not there to answer.
	NonInteractive bool
	// Timeout, when positive, denies an approval nobody answered in that time. A timeout
	// never allows.
	Timeout time.Duration
}

// Approval statuses.
const (
	ApprovalPending   = "pending"
	ApprovalAllowed   = "allowed"
	ApprovalDenied    = "denied"
	ApprovalCancelled = "cancelled" // the turn stopped while it waited
)

// Approval is a tool call waiting for the person's answer. It is part of the session's
// document from before it is announced until it is answered, so it survives a reload, a
// dropped stream and a restart (then its turn has ended with the call unrun, and an answer
// runs it, if allowed, and continues the session with the outcome). Its JSON is
// api.Approval's.
type Approval struct {
	ID     string          `json:"id"` // the call's id
	Thread string          `json:"thread"`
	Tool   string          `json:"tool"`
	Input  json.RawMessage `json:"input"`
	Host   string          `json:"host,omitempty"`
	// Command is a bash call's command line; Paths an editor call's files.
	Command       string   `json:"command,omitempty"`
	Paths         []string `json:"paths,omitempty"`
	Escalate      bool     `json:"outside_sandbox,omitempty"`
	Justification string   `json:"justification,omitempty"`
	// Reason says why it asks; Rule is the rule "allow always" adds (its text form).
	Reason    string    `json:"reason"`
	Rule      string    `json:"rule,omitempty"`
	Mode      string    `json:"mode"`
	Requested time.Time `json:"requested"`

	Status   string    `json:"status"`
	Always   bool      `json:"always,omitempty"`
	Answer   string    `json:"answer,omitempty"` // the reason the person gave with a deny
	Resolved time.Time `json:"resolved,omitzero"`
}

// Errors of the approvals.
var (
	ErrNoApproval = errors.New("sessions: no such pending approval")
	ErrBadMode    = errors.New("sessions: unknown mode")
)

// resolution is a person's answer to an approval.
type resolution struct {
	allow, always bool
	reason        string
}

// guardOf returns the manager's guard or nil.
func (m *Manager) guard() *Guard { return m.o.Guard }

// DefaultMode returns the mode of new sessions: the configured one, else workspace where
// the sandbox can fence commands and ask where it cannot; full without a guard.
func (g *Guard) DefaultMode() policy.Mode {
	switch {
	case g == nil:
		return policy.Full
	case g.Mode != "":
		return g.Mode
	case g.sandboxError() == nil:
		return policy.Workspace
	}
	return policy.AskMode
}

// sandboxError says why the sandbox cannot fence this machine's commands, or nil.
func (g *Guard) sandboxError() error {
	if g.Fence == nil {
		return fmt.Errorf("%w: no sandbox is configured", sandbox.ErrUnsupported)
	}
	return g.Fence.Support().Check(sandbox.Spec{Network: g.Network, Protected: []string{"/"}})
}

// SandboxSupport describes the sandbox in a line, for the runtime notes and the page.
func (g *Guard) SandboxSupport() string {
	if g == nil || g.Fence == nil {
		return "no sandbox"
	}
	return g.Fence.Support().String()
}

// modeOf returns session s's mode.
func (g *Guard) modeOf(s *Session) policy.Mode {
	if g == nil {
		return policy.Full
	}
	if s.Mode != "" {
		return policy.Mode(s.Mode)
	}
	return g.DefaultMode()
}

// tmpPath returns session id's private temporary directory, which [Guard.tmpDir] makes
// for its first sandboxed call and the session's close removes.
func (g *Guard) tmpPath(id string) string {
	root := g.TmpRoot
	if root == "" {
		root = os.TempDir()
	}
	return filepath.Join(root, "myco-sandbox-"+strings.NewReplacer("/", "_", ".", "_").Replace(id))
}

// tmpDir makes session id's private temporary directory if missing, and returns it.
func (g *Guard) tmpDir(id string) (string, error) {
	dir := g.tmpPath(id)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("make the session's temporary directory: %w", err)
	}
	return dir, nil
}

// spec returns the sandbox of a session working in dir with temporary directory tmp.
func (g *Guard) spec(dir, tmp string, readOnly bool) sandbox.Spec {
	s := sandbox.Spec{Hidden: g.Hidden, Ports: g.Ports, Network: g.Network, Writable: []string{tmp}}
	if !readOnly {
		s.Writable = append(s.Writable, g.Writable...)
		if dir != "" {
			s.Writable = append(s.Writable, dir)
			s.Protected = sandbox.GitProtected(dir)
		}
	}
	return s
}

// callOf describes a tool call for [policy.Decide].
func callOf(call model.ToolCall, dir string) policy.Call {
	c := policy.Call{Tool: call.Name, Dir: dir}
	switch {
	case call.Name == policy.BashTool:
		var in struct {
			Command        string `json:"command"`
			Action         string `json:"action"`
			OutsideSandbox bool   `json:"outside_sandbox"`
		}
		json.Unmarshal(call.Input, &in)
		c.Command, c.Action, c.Escalate = in.Command, in.Action, in.OutsideSandbox
	case call.Name == policy.EditorTool:
		var in struct {
			Command string `json:"command"`
			Path    string `json:"path"`
		}
		json.Unmarshal(call.Input, &in)
		c.Write = in.Command != "view"
		p := in.Path
		if !filepath.IsAbs(p) && dir != "" {
			p = filepath.Join(dir, p)
		}
		c.Paths = []string{filepath.Clean(p)}
	case strings.HasPrefix(call.Name, "mcp__"):
		c.Server, c.MCPTool, _ = strings.Cut(strings.TrimPrefix(call.Name, "mcp__"), "__")
	}
	return c
}

// gated is what the gate decided of one call: run it (with ctx, fenced when it should
// be), or answer it with res.
type gated struct {
	ctx context.Context
	res *model.ToolResult
}

// gate decides a tool call before it runs: a denied call is answered at once; one that
// asks waits for the person (its approval durable before it is announced); an allowed one
// runs, in the sandbox when the mode says so.
func (rc *recorder) gate(ctx context.Context, call model.ToolCall) gated {
	rt := rc.r.rt
	g := rt.guard
	if g == nil {
		return gated{ctx: ctx}
	}
	var mode policy.Mode
	var rules []policy.Rule
	rt.doc.view(func(s *Session) {
		mode = g.modeOf(s)
		rules = append(slices.Clone(g.Rules), s.Rules...)
	})
	host := hostOf(call.Input)
	remote := host != "" && host != "local"
	pc := callOf(call, rt.dir)
	tmp := g.tmpPath(rt.doc.id)
	spec := g.spec(rt.dir, tmp, mode == policy.ReadOnly)
	pc.Writable, pc.Protected, pc.Hidden = spec.Writable, spec.Protected, g.Hidden
	d := policy.Decide(mode, rules, pc)
	var tmpErr error
	if d.Action == policy.Allow && d.Sandbox && !remote {
		_, tmpErr = g.tmpDir(rt.doc.id)
	}
	if d.Action == policy.Allow && d.Sandbox {
		// The sandbox is needed: where it cannot fence the call, ask instead.
		var why string
		switch {
		case remote:
			// The host fences it in its own sandbox, or refuses and runs nothing.
		case tmpErr != nil:
			why = tmpErr.Error()
		case g.Fence == nil:
			why = "no sandbox is available"
		default:
			if err := g.Fence.Support().Check(spec); err != nil {
				why = err.Error()
			}
		}
		if why != "" {
			if mode == policy.ReadOnly {
				return deny(call.ID, "read-only mode needs the sandbox, which cannot run this command ("+why+")")
			}
			d = policy.Decision{Action: policy.Ask, Reason: string(mode) + " mode would run this in the sandbox, but " + why}
		}
	}
	switch d.Action {
	case policy.Deny:
		return deny(call.ID, "denied ("+d.Reason+"); nothing was run")
	case policy.Ask:
		if g.NonInteractive {
			// Said as an answered approval, so that -p's --json and exit status tell it.
			now := rt.now().UTC()
			rt.emit(approvalEvent{Approval: Approval{ID: call.ID, Thread: rc.tn.th.ID, Tool: call.Name, Input: call.Input, Host: host,
				Command: pc.Command, Paths: pc.Paths, Escalate: pc.Escalate, Reason: d.Reason, Rule: suggestRule(pc), Mode: string(mode),
				Requested: now, Status: ApprovalDenied, Answer: "non-interactive: nobody to ask", Resolved: now}})
			return deny(call.ID, "denied: this call needs the person's approval ("+d.Reason+"), and this run is non-interactive (myco -p), so nothing was run. Do without it, or say what you would need so the person can rerun with --allow RULE or --mode")
		}
		res := rc.ask(ctx, call, pc, d, mode)
		if res.res != nil || !res.sandbox {
			return gated{ctx: res.ctx, res: res.res}
		}
		d.Sandbox = true
	}
	switch {
	case d.Sandbox && remote:
		ctx = tools.WithSandbox(ctx, tools.Fenced{Remote: true, ReadOnly: mode == policy.ReadOnly, Spec: sandbox.Spec{Network: g.Network}, Mode: string(mode)})
	case d.Sandbox:
		if _, err := g.tmpDir(rt.doc.id); err != nil { // an allowed call that asked first
			return deny(call.ID, "not run: "+err.Error())
		}
		ctx = tools.WithSandbox(ctx, tools.Fenced{Fence: g.Fence, Spec: spec, TmpDir: tmp, Mode: string(mode)})
	}
	return gated{ctx: ctx}
}

func deny(callID, text string) gated {
	return gated{res: &model.ToolResult{CallID: callID, IsError: true, Text: text}}
}

type asked struct {
	ctx     context.Context
	res     *model.ToolResult
	sandbox bool
}

// ask records an approval for call, announces it and waits for the answer.
func (rc *recorder) ask(ctx context.Context, call model.ToolCall, pc policy.Call, d policy.Decision, mode policy.Mode) asked {
	rt := rc.r.rt
	a := Approval{ID: call.ID, Thread: rc.tn.th.ID, Tool: call.Name, Input: call.Input, Host: hostOf(call.Input),
		Command: pc.Command, Paths: pc.Paths, Escalate: pc.Escalate, Reason: d.Reason, Rule: suggestRule(pc),
		Mode: string(mode), Requested: rt.now().UTC(), Status: ApprovalPending}
	if pc.Escalate {
		var in struct {
			Justification string `json:"justification"`
		}
		json.Unmarshal(call.Input, &in)
		a.Justification = in.Justification
	}
	wait := rt.waitFor(a.ID)
	defer rt.stopWaiting(a.ID)
	// Durable before it is shown.
	if err := rt.Update(ctx, func(s *Session) { s.Approvals = append(slices.Clone(s.Approvals), a) }); err != nil {
		r := model.ToolResult{CallID: call.ID, IsError: true, Text: "not run: its approval could not be saved: " + err.Error()}
		return asked{res: &r}
	}
	rt.emit(approvalEvent{Approval: a})
	var timeout <-chan time.Time
	if g := rt.guard; g.Timeout > 0 {
		t := time.NewTimer(g.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	var res resolution
	select {
	case res = <-wait:
	case <-timeout:
		res = resolution{reason: "nobody answered within " + rt.guard.Timeout.String()}
		if _, err := rt.resolve(context.WithoutCancel(ctx), a.ID, res, false); err != nil {
			if errors.Is(err, ErrNoApproval) { // answered meanwhile
				res = <-wait
			}
		}
	case <-ctx.Done():
		if !errors.Is(context.Cause(ctx), ErrShutdown) {
			// Stopped by the person: the question is withdrawn. A shutdown leaves it
			// pending in the document, to be answered after the restart.
			rt.resolve(context.WithoutCancel(ctx), a.ID, resolution{reason: "the turn was stopped"}, true)
		}
		r := model.ToolResult{CallID: call.ID, IsError: true, Text: "not run: the turn was stopped while this call waited for the person's approval"}
		return asked{res: &r}
	}
	if !res.allow {
		text := "denied by the person; nothing was run"
		if res.reason != "" {
			text += ". Their reason: " + res.reason
		}
		r := model.ToolResult{CallID: call.ID, IsError: true, Text: text}
		return asked{res: &r}
	}
	// Allowed: an escalation runs outside the sandbox; a call of a sandboxed mode that
	// asked because the sandbox could not fence it runs as the person allowed, unfenced.
	return asked{ctx: ctx}
}

// suggestRule returns the rule "allow always for this session" adds for a call.
func suggestRule(c policy.Call) string {
	switch {
	case c.Tool == policy.BashTool:
		cmds, err := policy.ParseCommandLine(c.Command)
		if err != nil || len(cmds) != 1 || len(cmds[0].Args) == 0 {
			return "" // a rule for the whole line would be too wide or never match
		}
		args := cmds[0].Args
		if len(args) > 2 {
			args = append(slices.Clone(args[:2]), "*")
		}
		return "bash(" + strings.Join(args, " ") + ")"
	case c.Tool == policy.EditorTool && len(c.Paths) == 1:
		rel := c.Paths[0]
		if c.Dir != "" {
			if r, err := filepath.Rel(c.Dir, c.Paths[0]); err == nil && !strings.HasPrefix(r, "..") {
				rel = r
			}
		}
		return "edit(" + rel + ")"
	case c.Server != "":
		return "mcp(" + c.Server + "/" + c.MCPTool + ")"
	}
	return c.Tool
}

// waitFor registers a waiter for approval id.
func (rt *runtime) waitFor(id string) chan resolution {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.waiters == nil {
		rt.waiters = map[string]chan resolution{}
	}
	ch := make(chan resolution, 1)
	rt.waiters[id] = ch
	return ch
}

func (rt *runtime) stopWaiting(id string) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	delete(rt.waiters, id)
}

// resolve answers pending approval id durably (and, with always, adds its rule to the
// session's), announces the answer and wakes the call that waits for it. It returns the
// approval as answered, and whether a call was waiting for it.
func (rt *runtime) resolve(ctx context.Context, id string, res resolution, cancelled bool) (Approval, error) {
	var a Approval
	found := false
	err := rt.Update(ctx, func(s *Session) {
		i := slices.IndexFunc(s.Approvals, func(a Approval) bool { return a.ID == id })
		if i < 0 {
			return
		}
		found = true
		a = s.Approvals[i]
		s.Approvals = slices.Delete(slices.Clone(s.Approvals), i, i+1)
		a.Resolved = rt.now().UTC()
		switch {
		case cancelled:
			a.Status = ApprovalCancelled
		case res.allow:
			a.Status = ApprovalAllowed
		default:
			a.Status = ApprovalDenied
		}
		a.Answer = res.reason
		if res.allow && res.always && a.Rule != "" {
			if r, err := policy.ParseRule(policy.Allow, a.Rule, policy.FromSession); err == nil {
				a.Always = true
				s.Rules = append(slices.Clone(s.Rules), r)
			}
		}
	})
	if err != nil {
		return a, err
	}
	if !found {
		return a, ErrNoApproval
	}
	rt.emit(approvalEvent{Approval: a})
	rt.mu.Lock()
	ch := rt.waiters[id]
	rt.mu.Unlock()
	if ch != nil {
		select {
		case ch <- res:
		default:
		}
	}
	return a, nil
}

// waiting reports whether a call of this process waits for approval id.
func (rt *runtime) waiting(id string) bool {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return rt.waiters[id] != nil
}

// approvalEvent announces an approval requested or answered.
type approvalEvent struct{ Approval Approval }

func (approvalEvent) isEvent() {}

// Answer is a person's answer to a pending approval.
type Answer struct {
	Approval string // the approval's id (its call's)
	Allow    bool
	Always   bool   // with Allow: add the approval's rule to the session's rules
	Reason   string // with a deny: told to the model
}

// Resolve answers a pending approval of session id. Only the person may call it: the
// front ends check that the request comes from them (see docs/security.md). An approval
// whose call no longer waits (myco restarted while it waited) is answered too: allow runs
// the call now, and the session continues with a turn that tells the model the outcome;
// deny continues it with the person's reason.
func (m *Manager) Resolve(ctx context.Context, id string, ans Answer) (Approval, error) {
	l, err := m.open(ctx, id)
	if err != nil {
		return Approval{}, err
	}
	waiting := l.rt.waiting(ans.Approval)
	a, err := l.rt.resolve(ctx, ans.Approval, resolution{allow: ans.Allow, always: ans.Always, reason: ans.Reason}, false)
	if err != nil || waiting {
		return a, err
	}
	// Interrupted: the turn that asked ended when myco stopped, with the call unrun.
	var text string
	if ans.Allow {
		call := model.ToolCall{ID: a.ID, Name: a.Tool, Input: a.Input}
		res := l.rt.tools.Call(ctx, call)
		text = fmt.Sprintf("[myco: approval] The person allowed your call %s (%s), which was waiting for them when myco stopped. It ran now; its result%s:\n%s",
			a.ID, a.Tool, map[bool]string{true: " (an error)", false: ""}[res.IsError], res.Text)
	} else {
		text = fmt.Sprintf("[myco: approval] The person denied your call %s (%s), which was waiting for them when myco stopped; it was not run.", a.ID, a.Tool)
		if ans.Reason != "" {
			text += " Their reason: " + ans.Reason
		}
	}
	if _, err := m.Submit(ctx, id, model.TextPart(text)); err != nil {
		return a, fmt.Errorf("continue the session after the approval: %w", err)
	}
	return a, nil
}

// SetMode changes session id's mode from its next tool call on.
func (m *Manager) SetMode(ctx context.Context, id string, mode policy.Mode) error {
	if _, err := policy.ParseMode(string(mode)); err != nil {
		return fmt.Errorf("%w: %w", ErrBadMode, err)
	}
	return m.update(ctx, id, func(s *Session) error { s.Mode = string(mode); return nil })
}

// Mode returns session s's mode.
func (m *Manager) Mode(s *Session) policy.Mode { return m.guard().modeOf(s) }

// Guard returns the manager's guard; nil means every call runs at once.
func (m *Manager) Guard() *Guard { return m.guard() }

// PendingApprovals returns the pending approvals of session id and of every session of
// its tree below it, each with the session that asked.
func (m *Manager) PendingApprovals(ctx context.Context, id string) ([]TreeApproval, error) {
	return m.pendingApprovals(ctx, id, true)
}

// PendingApprovalsBelow is [Manager.PendingApprovals] without session id's own: for a
// session without children it reads only the store's index of parents.
func (m *Manager) PendingApprovalsBelow(ctx context.Context, id string) ([]TreeApproval, error) {
	return m.pendingApprovals(ctx, id, false)
}

// pendingApprovals walks session id's tree depth first through the store's index of
// parents, at most maxTree sessions, reading each session's pending approvals (id's own
// when own); a child whose file is gone or unreadable is passed over.
func (m *Manager) pendingApprovals(ctx context.Context, id string, own bool) ([]TreeApproval, error) {
	var out []TreeApproval
	visited := 0
	var walk func(id string, self bool) error
	walk = func(id string, self bool) error {
		visited++
		if self {
			s, _, err := m.Snapshot(ctx, id)
			if err != nil {
				return err
			}
			for _, a := range s.Approvals {
				out = append(out, TreeApproval{Session: id, Approval: a})
			}
		}
		kids, err := m.o.Store.childrenOf(ctx, id)
		if err != nil {
			return err
		}
		for _, k := range kids {
			if visited >= maxTree {
				break
			}
			err := walk(k, true)
			if errors.Is(err, ErrNotFound) || errors.Is(err, ErrDamaged) || errors.Is(err, ErrUnsupportedSchema) {
				continue
			}
			if err != nil {
				return err
			}
		}
		return nil
	}
	return out, walk(id, own)
}

// TreeApproval is a pending approval and the session of a tree that asked.
type TreeApproval struct {
	Session string `json:"session"`
	Approval
}
