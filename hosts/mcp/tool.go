package mcp

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"slices"
	"syscall"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"myco.dev/agent/model"
	"myco.dev/hosts/tools"
)

// MaxDescription caps a tool's description, which every model request carries.
const MaxDescription = 8 << 10

// Tool is one tool of an MCP server as a host tool (it satisfies myco.dev/hosts/tools.Tool).
// Safe for concurrent use.
type Tool struct {
	set    *Set
	srv    *server
	name   string // mcp__SERVER__TOOL, or its mapped form
	remote string // the tool's name on its server
	mapped bool
	spec   model.ToolSpec
}

var _ tools.Tool = (*Tool)(nil)

// Name returns the name the model sees (see [ExposedName]).
func (t *Tool) Name() string { return t.name }

// Server returns the name of the tool's server.
func (t *Tool) Server() string { return t.srv.cfg.Name }

// Remote returns the tool's name on its server, and Mapped reports whether Name had to
// differ from mcp__SERVER__REMOTE to fit the providers' rule.
func (t *Tool) Remote() string { return t.remote }

// Mapped reports whether [Tool.Name] is not mcp__SERVER__REMOTE (see [ExposedName]).
func (t *Tool) Mapped() bool { return t.mapped }

// Spec returns the server's description and input schema under the exposed name. It is
// fixed when the tool is listed, so it is the same for every session.
func (t *Tool) Spec() model.ToolSpec { return t.spec }

// newTools makes the tools srv listed, in name order. A tool whose exposed name another
// already has is left out and logged.
func (s *Set) newTools(srv *server, list []*mcp.Tool) []*Tool {
	var out []*Tool
	for _, mt := range list {
		name, mapped := ExposedName(srv.cfg.Name, mt.Name)
		t := &Tool{set: s, srv: srv, name: name, remote: mt.Name, mapped: mapped}
		t.spec = model.ToolSpec{Name: name, Description: description(srv.cfg.Name, mt, mapped), Schema: schema(mt.InputSchema)}
		out = append(out, t)
	}
	slices.SortStableFunc(out, func(a, b *Tool) int {
		return cmp.Or(cmp.Compare(a.name, b.name), cmp.Compare(a.remote, b.remote))
	})
	return slices.CompactFunc(out, func(a, b *Tool) bool {
		if a.name == b.name {
			s.log.Warn("mcp tool left out: its name is taken", "server", srv.cfg.Name, "tool", b.remote, "name", a.name, "taken_by", a.remote)
			return true
		}
		return false
	})
}

// description is what the model reads of a tool: the server's description (or its title),
// capped, and the tool's name on the server when the exposed name had to differ.
func description(server string, mt *mcp.Tool, mapped bool) string {
	d := cmp.Or(mt.Description, mt.Title, "A tool of the MCP server "+server+".")
	if len(d) > MaxDescription {
		cut := MaxDescription
		for cut > 0 && !utf8.RuneStart(d[cut]) {
			cut--
		}
		d = d[:cut] + " […]"
	}
	if mapped {
		d += fmt.Sprintf("\n(The MCP server %s calls this tool %q.)", server, mt.Name)
	}
	return d
}

// schema returns a tool's input schema as JSON, an object schema in any case: the
// providers take nothing else.
func schema(in any) json.RawMessage {
	m, ok := in.(map[string]any)
	if !ok {
		if b, err := json.Marshal(in); err != nil || json.Unmarshal(b, &m) != nil || m == nil {
			m = map[string]any{}
		}
	}
	if m["type"] != "object" {
		m = map[string]any{"type": "object", "properties": map[string]any{}}
	}
	b, err := json.Marshal(m) // sorted keys: the same bytes every time
	if err != nil {
		return json.RawMessage(`{"type":"object","properties":{}}`)
	}
	return b
}

// Call calls the tool on owner's instance of its server, starting it if need be, within
// the server's tool timeout.
func (t *Tool) Call(ctx context.Context, owner string, input json.RawMessage) tools.Result {
	args := bytes.TrimSpace(input)
	if len(args) == 0 || string(args) == "null" {
		args = []byte("{}")
	}
	if args[0] != '{' || !json.Valid(args) {
		return tools.Errorf("the input of %s must be a JSON object", t.name)
	}
	inst, res, ok := t.set.acquire(ctx, owner, t.srv)
	if !ok {
		return res
	}
	return t.call(ctx, inst, json.RawMessage(args))
}

func (t *Tool) call(ctx context.Context, inst *instance, args json.RawMessage) tools.Result {
	s, cfg := t.set, t.srv.cfg
	callCtx, cancel := context.WithTimeoutCause(ctx, cfg.ToolTimeout, errToolTimeout)
	defer cancel()
	r, err := inst.cs.CallTool(callCtx, &mcp.CallToolParams{Name: t.remote, Arguments: args})
	if err == nil {
		s.answered(inst)
		res := result(r, limits{maxText: s.o.MaxResultBytes, maxImageBase64: s.o.MaxImageBase64Bytes})
		return tools.CapImages(ctx, res, "mcp server "+cfg.Name+": ", "the image of "+t.name)
	}
	var werr *jsonrpc.Error
	switch {
	case ctx.Err() != nil:
		// The SDK has sent notifications/cancelled for the call.
		return tools.Errorf("mcp server %s: the call was stopped (%v), and myco asked the server to cancel it", cfg.Name, context.Cause(ctx))
	case errors.Is(context.Cause(callCtx), errToolTimeout):
		return tools.Errorf("mcp server %s: %s did not answer within %s (tool_timeout_secs), so myco cancelled the call on the server (notifications/cancelled). It may have done part of its work before it stopped.",
			cfg.Name, t.name, cfg.ToolTimeout)
	case errors.As(err, &werr):
		s.answered(inst)
		return tools.Errorf("mcp server %s refused the call: %s (JSON-RPC error %d)", cfg.Name, werr.Message, werr.Code)
	case notDelivered(err):
		return tools.Errorf("mcp server %s: the call did not reach the server: %v", cfg.Name, err)
	}
	// A stdio server's connection is its process: any other failure means the stream
	// broke, and the process is ending. An HTTP session may go on after a failed request.
	if why := inst.waitEnd(ctx, inst.pid != 0); why != "" || errors.Is(err, mcp.ErrConnectionClosed) {
		if why == "" {
			why = err.Error()
		}
		return tools.Result{Unknown: true, Text: fmt.Sprintf(
			"mcp server %s ended while this call was in flight: %s\nThe call's outcome is unknown: it may have run. Inspect its effects before repeating it.\n%s",
			cfg.Name, why, s.restartNote(inst))}
	}
	return tools.Errorf("mcp server %s: the call failed: %v. It may have run on the server.", cfg.Name, err)
}

// notDelivered reports whether err says the request never reached the server: an HTTP
// server that refused the connection, a stdio server whose stdin was already closed.
func notDelivered(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial" || errors.Is(err, syscall.EPIPE)
}
