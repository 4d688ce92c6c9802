package hosts

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"myco.dev/hosts/proto"
	"myco.dev/hosts/tools"
)

// Call runs tool on the host for owner, attaching first when needed. Failures to attach
// and host-side errors come back as error results that say what happened. A call in
// flight when the connection drops re-attaches at once: when the same host daemon answers,
// the call's result is fetched from it by key; otherwise its outcome is unknown. When ctx
// carries a progress reporter (see [tools.WithProgress]), the host sends the call's newest
// output while it runs and Call passes it on, never after Call returned.
func (r *Remote) Call(ctx context.Context, owner, tool string, input json.RawMessage) tools.Result {
	return r.call(ctx, &proto.Call{Owner: owner, Tool: tool, Input: input})
}

// CallFenced is [Remote.Call] for a call whose processes the host must fence in as sb
// says. A host whose hello does not say it fences gets no such call: the answer is an
// error result saying so, and nothing runs.
func (r *Remote) CallFenced(ctx context.Context, owner, tool string, input json.RawMessage, sb proto.Sandbox) tools.Result {
	return r.call(ctx, &proto.Call{Owner: owner, Tool: tool, Input: input, Sandbox: &sb})
}

// CallMCP calls the tool named tool (its exposed name) of the MCP server s runs on the
// host, for owner, on the owner's own instance there; otherwise as [Remote.Call]. A
// server that ended during the call gives an unknown outcome.
func (r *Remote) CallMCP(ctx context.Context, owner string, s proto.MCPServer, tool string, input json.RawMessage) tools.Result {
	return r.call(ctx, &proto.Call{Owner: owner, Tool: tool, Input: input, MCP: &s})
}

// call sends call, with a fresh key, and returns its result.
func (r *Remote) call(ctx context.Context, call *proto.Call) tools.Result {
	owner, tool := call.Owner, call.Tool
	var offer func(string)
	if report := tools.ProgressFrom(ctx); report != nil {
		relay := startRelay(report)
		defer relay.close()
		offer = relay.offer
	}
	c, notice, err := r.attach(ctx, owner)
	if err != nil {
		if ctx.Err() != nil {
			return tools.Errorf("host %s: cancelled while attaching: %v", r.spec.Alias, context.Cause(ctx))
		}
		return tools.Errorf("%v", err)
	}
	if call.Sandbox != nil {
		c.mu.Lock()
		h := c.host
		c.mu.Unlock()
		if !h.Fences {
			why := h.Sandbox
			if why == "" {
				why = "its myco is older than the sandbox"
			}
			return tools.Errorf("not run: this call must run in a sandbox, and host %s cannot fence commands (%s). Ask to run it outside the sandbox (outside_sandbox: true with a justification): the person decides", r.spec.Alias, why)
		}
	}
	key := newCallKey()
	call.Key, call.Progress = key, offer != nil
	m, err := c.requestProgress(ctx, proto.Msg{Call: call}, offer)
	if errors.Is(err, errNotSent) {
		// The connection ended before the call went out, so it never ran: send it once
		// more on a fresh connection.
		var more string
		if c, more, err = r.attach(ctx, owner); err != nil {
			return tools.Errorf("host %s: the connection ended before this call was sent (it did not run), and attaching again failed: %v", r.spec.Alias, err)
		}
		notice += more
		m, err = c.requestProgress(ctx, proto.Msg{Call: call}, offer)
	}
	var res tools.Result
	switch {
	case errors.Is(err, proto.ErrLineTooLong):
		res = tools.Errorf("host %s: this %s call was not sent: its input is too large for the host protocol (%v; a call may be at most %d MiB). Split the work into smaller calls: for a large file, create a part of it and add the rest with further edits",
			r.spec.Alias, tool, err, proto.MaxRequestLine>>20)
	case errors.Is(err, errNotSent):
		res = tools.Errorf("host %s: the connection ended twice before this call was sent; it did not run", r.spec.Alias)
	case errors.Is(err, errConnEnded):
		res = r.recoverCall(ctx, c, call)
	case err != nil && ctx.Err() != nil:
		res = tools.Errorf("host %s: cancelled; the call may still be running there (calls over the host pipe cannot be cancelled mid-flight)", r.spec.Alias)
	case err != nil:
		res = tools.Errorf("host %s: %v", r.spec.Alias, err)
	default:
		res = r.answer(c, call, m)
	}
	if notice != "" {
		res.Text = notice + res.Text
	}
	return res
}

// answer turns the host's response to a call into the call's result.
func (r *Remote) answer(c *conn, call *proto.Call, m proto.Msg) tools.Result {
	switch {
	case m.Err != nil:
		return tools.Errorf("host %s: %s", r.spec.Alias, m.Err.Message)
	case m.Result == nil:
		return tools.Errorf("host %s: the host answered the call with a frame that is not a result", r.spec.Alias)
	}
	res := *m.Result
	if call.MCP == nil {
		// Only this side decides that a host tool's outcome is unknown; an MCP server's
		// end during the call is seen by the host, which runs it.
		res.Unknown = false
	}
	r.noteCall(c, call.Owner, call.Tool, action(call.Input), res)
	if res.IsError || res.Unknown {
		res.Text = "host " + r.spec.Alias + ": " + res.Text // the per-host tool error, say where
	}
	return res
}

// recoverCall learns the outcome of a call whose connection c ended while it was in
// flight: it re-attaches and, when the same host daemon answers, fetches the result by
// key. Anything else is an unknown outcome.
func (r *Remote) recoverCall(ctx context.Context, c *conn, call *proto.Call) tools.Result {
	owner, key := call.Owner, call.Key
	dropped := c.endErr()
	instance := c.hostHello().Instance
	unknown := func(why string) tools.Result {
		return tools.Result{Unknown: true, Text: fmt.Sprintf(
			"host %s: the connection ended while this call was in flight (%v)%s. The call's outcome is unknown: it may have run. Inspect its effects on %s before repeating it.",
			r.spec.Alias, dropped, why, r.spec.Alias)}
	}
	if instance == "" {
		return unknown(", and the host kept nothing across it")
	}
	nc, notice, err := r.attach(ctx, owner)
	if err != nil {
		return unknown(fmt.Sprintf(", and attaching again to ask for its result failed: %v", err))
	}
	var res tools.Result
	if now := nc.hostHello().Instance; now != instance {
		res = unknown(fmt.Sprintf(", and the host daemon that ran it is gone: another instance (%s, was %s) answered the re-attach", now, instance))
	} else {
		m, err := nc.request(ctx, proto.Msg{Fetch: &proto.Fetch{Owner: owner, Key: key}})
		switch {
		case err != nil:
			res = unknown(fmt.Sprintf("; asking the host daemon for its result failed too: %v", err))
		case m.Err != nil:
			res = unknown(fmt.Sprintf("; the host daemon no longer holds its result: %s", m.Err.Message))
		default:
			res = r.answer(nc, call, m)
			res.Text = fmt.Sprintf("[myco: the connection to host %s dropped while this call ran (%v); myco re-attached to the same host daemon, which kept the call running. This is its result.]\n", r.spec.Alias, dropped) + res.Text
			notice = "" // said already
		}
	}
	if notice != "" {
		res.Text = notice + res.Text
	}
	return res
}

// progressRelay passes a remote call's progress from the connection's read loop to the
// reporter in the call's ctx, on a goroutine of its own: a slow reporter (a session saving
// to disk) never stalls the connection's other frames, and only the newest tail waits.
type progressRelay struct {
	report func(tail string)
	latest chan string // the newest tail not yet passed on
	stop   chan struct{}
	wg     sync.WaitGroup
}

func startRelay(report func(string)) *progressRelay {
	p := &progressRelay{report: report, latest: make(chan string, 1), stop: make(chan struct{})}
	p.wg.Go(func() {
		for {
			select {
			case tail := <-p.latest:
				p.report(tail)
			case <-p.stop:
				select {
				case tail := <-p.latest: // sent before the result
					p.report(tail)
				default:
				}
				return
			}
		}
	})
	return p
}

// offer replaces the tail waiting to be passed on; it never blocks. It is called from one
// goroutine at a time (the read loop).
func (p *progressRelay) offer(tail string) {
	if len(tail) > tools.ProgressBytes { // a host that sends more than it should
		tail = tail[len(tail)-tools.ProgressBytes:]
		for len(tail) > 0 && !utf8.RuneStart(tail[0]) {
			tail = tail[1:]
		}
	}
	for {
		select {
		case p.latest <- tail:
			return
		default:
		}
		select {
		case <-p.latest: // superseded
		default:
		}
	}
}

// close passes on the tail still waiting, if any, and returns once the reporter is no
// longer called.
func (p *progressRelay) close() {
	close(p.stop)
	p.wg.Wait()
}

// newCallKey returns a key that names one call among its owner's.
func newCallKey() string {
	var b [12]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// action returns a bash input's action field.
func action(input json.RawMessage) string {
	var in struct {
		Action string `json:"action"`
	}
	_ = json.Unmarshal(input, &in)
	return in.Action
}

// holding is what one owner holds on the host: its bash sessions, on the host daemon
// instance that keeps them.
type holding struct {
	instance string
	sessions []string
}

// lostNote is a drop an owner's next call hears about.
type lostNote struct {
	instance string   // the daemon instance that held the owner's resources
	sessions []string // the bash sessions the owner started there
	at       time.Time
	err      error
}

// takeLost returns and forgets the notice owner's next call carries about a drop, now
// that the host daemon instance answers; r.mu is held. On the same instance the owner's
// resources were kept; on another they are gone.
func (r *Remote) takeLost(owner, instance string) string {
	n, ok := r.lost[owner]
	if !ok {
		return ""
	}
	delete(r.lost, owner)
	if n.instance != "" && n.instance == instance {
		return fmt.Sprintf("[myco: the connection to host %s dropped at %s (%v) and was re-established to the same host daemon, which kept this runtime's bash sessions and editor read stamps; output produced meanwhile is returned by action=read.]\n",
			r.spec.Alias, n.at.Format(time.TimeOnly), n.err)
	}
	delete(r.held, owner)
	what := "its editor read stamps and MCP server instances are gone (view files again before editing them)"
	if len(n.sessions) > 0 {
		what = fmt.Sprintf("bash sessions %s started there are gone, and so are its editor read stamps and MCP server instances", strings.Join(n.sessions, ", "))
	}
	return fmt.Sprintf("[myco: the earlier connection to host %s ended at %s (%v); %s. This call re-attached to a new host process.]\n",
		r.spec.Alias, n.at.Format(time.TimeOnly), n.err, what)
}

// noteCall records that owner holds resources on the host that answered on c, and a bash
// session it started. When c's end was recorded before this, that drop missed what is
// noted here (the host answered and went away at once): the owner's next call hears of it
// all the same.
func (r *Remote) noteCall(c *conn, owner, tool, action string, res tools.Result) {
	instance := c.hostHello().Instance
	r.mu.Lock()
	defer r.mu.Unlock()
	h := r.held[owner]
	if h == nil || h.instance != instance {
		h = &holding{instance: instance}
		r.held[owner] = h
	}
	var session string
	if tool == "bash" && action == "start" && !res.IsError {
		if id, ok := strings.CutPrefix(res.Text, "session_id: "); ok {
			session, _, _ = strings.Cut(id, "\n")
			h.sessions = append(h.sessions, session)
		}
	}
	err := c.endErr()
	if err == nil || r.conn == c || r.closed {
		return // the drop, when it comes, finds h
	}
	switch n, ok := r.lost[owner]; {
	case !ok:
		r.lost[owner] = lostNote{instance: h.instance, sessions: slices.Clone(h.sessions), at: time.Now(), err: err}
	case n.instance == instance && session != "":
		n.sessions = append(n.sessions, session)
		r.lost[owner] = n
	}
}
