package hostd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"myco.dev/hosts/proto"
	"myco.dev/hosts/tools"
	"myco.dev/internal/throttle"
)

// frame is one read from the controller.
type frame struct {
	m   proto.Msg
	err error
}

// Serve runs one connection over in and out until in closes or ctx ends. With first nil,
// the connection's first frame must be a [proto.Proxy] frame (a proxy on the daemon's
// socket); otherwise first gives the settings, and Serve serves in-process (stdin and
// stdout of `myco --mode host`): its hello then says there is no daemon
// ([proto.Hello.NoDaemon], from the daemon's Hello or a default reason), since the caller
// ends every process when Serve returns.
//
// Serve returns nil when in ends or ctx ends, and an error when the connection broke the
// protocol: a first frame that is not a hello, a protocol mismatch, a line over
// [proto.MaxRequestLine]. It tells the controller in a fatal error frame first.
//
// Calls run concurrently under the daemon's life, not the connection's, and answer in any
// order; a malformed line gets an error frame and the stream goes on. When in closes
// without a release, the owners the connection used keep their resources for the grace
// period, and calls in flight run on: their results stay fetchable by key.
//
// Serve reads in on a goroutine of its own; when ctx ends first, that goroutine stays
// blocked in its read until in is closed or the process exits.
func (d *Daemon) Serve(ctx context.Context, in io.Reader, out io.Writer, first *proto.Proxy) error {
	ctx, cancel := context.WithCancel(ctx)
	var fetches sync.WaitGroup // fetches and listings waiting to answer
	cs := &connState{owners: map[string]bool{}}
	d.mu.Lock()
	if d.exiting {
		// Run is going away idle, having counted no connection: closed before its hello,
		// this one's proxy connects again, to a new daemon.
		d.mu.Unlock()
		cancel()
		return nil
	}
	d.conns++
	d.idle = time.Time{}
	d.mu.Unlock()
	defer func() {
		cancel()
		fetches.Wait()
		d.connEnded(cs)
	}()

	// The reader cannot be interrupted in a blocking read, so it is not waited for: it
	// ends at the next line or at EOF, and never blocks on a send after Serve returned.
	frames := make(chan frame)
	go func() {
		r := proto.NewReaderSize(in, proto.MaxRequestLine)
		for {
			m, err := r.Read(context.Background())
			select {
			case frames <- frame{m, err}:
			case <-ctx.Done():
				return
			}
			if err != nil && !errors.Is(err, proto.ErrMalformed) {
				return
			}
		}
	}()
	next := func() (proto.Msg, error) {
		select {
		case f := <-frames:
			return f.m, f.err
		case <-ctx.Done():
			return proto.Msg{}, ctx.Err()
		}
	}
	w := proto.NewWriter(out)
	// fatal ends the connection for err, telling the controller why first.
	fatal := func(err error) error {
		w.Write(proto.Msg{Err: &proto.Error{Message: err.Error(), Fatal: true}})
		return err
	}

	hello := d.hello
	if first == nil {
		m, err := next()
		switch {
		case errors.Is(err, io.EOF), ctx.Err() != nil:
			return nil
		case errors.Is(err, proto.ErrLineTooLong):
			return fatal(fmt.Errorf("host daemon: the proxy frame: %w", err))
		case err != nil:
			return fmt.Errorf("host daemon: read the proxy frame: %w", err)
		case m.Proxy == nil:
			return fatal(errors.New("host daemon: the first frame on the daemon's socket must be a proxy frame"))
		}
		first = m.Proxy
		hello.NoDaemon = ""
	} else if hello.NoDaemon == "" {
		hello.NoDaemon = "the host serves in the process ssh started"
	}
	ts := d.toolsFor(first.MaxImageBase64Bytes)
	byName := map[string]tools.Tool{}
	for _, t := range ts {
		byName[t.Name()] = t
	}

	hello.MaxImageBase64Bytes = first.MaxImageBase64Bytes
	if err := w.Write(proto.Msg{Hello: &hello}); err != nil {
		return fmt.Errorf("host: write hello: %w", err)
	}
	m, err := next()
	switch {
	case errors.Is(err, io.EOF), ctx.Err() != nil:
		return nil
	case errors.Is(err, proto.ErrMalformed), errors.Is(err, proto.ErrLineTooLong):
		return fatal(fmt.Errorf("host: the controller's first frame must be a hello: %w", err))
	case err != nil:
		return fmt.Errorf("host: read the controller's hello: %w", err)
	}
	if m.Hello == nil {
		return fatal(errors.New("host: the controller's first frame must be a hello"))
	}
	if err := proto.Check(*m.Hello, hello); err != nil {
		return fatal(err)
	}
	// The controller's credentials stay out of every process this connection's calls
	// start.
	withoutEnv := m.Hello.WithoutEnv

	fail := func(id uint64, format string, args ...any) {
		w.Write(proto.Msg{ID: id, Err: &proto.Error{Message: fmt.Sprintf(format, args...)}})
	}
	for {
		m, err := next()
		switch {
		case errors.Is(err, io.EOF), ctx.Err() != nil:
			return nil
		case errors.Is(err, proto.ErrMalformed):
			d.log.Warn("malformed frame", "err", err)
			if werr := w.Write(proto.Msg{ID: m.ID, Err: &proto.Error{Message: err.Error()}}); werr != nil {
				return nil
			}
			continue
		case errors.Is(err, proto.ErrLineTooLong):
			return fatal(fmt.Errorf("host: a frame from the controller: %w; the host ends the connection", err))
		case err != nil:
			return fmt.Errorf("host: read: %w", err)
		}
		if m.ID == 0 {
			fail(0, "a request needs a nonzero id")
			continue
		}
		switch {
		case m.Call != nil && m.Call.MCP != nil:
			if err := d.call(cs, w, m.ID, d.mcp.tool(*m.Call.MCP, m.Call.Tool), *m.Call, withoutEnv); err != nil {
				fail(m.ID, "%v", err)
			}
		case m.MCPList != nil:
			fetches.Go(func() {
				listed := d.mcp.list(ctx, m.MCPList.Servers)
				if ctx.Err() == nil {
					w.Write(proto.Msg{ID: m.ID, MCPTools: &proto.MCPTools{Servers: listed}})
				}
			})
		case m.Call != nil:
			t, ok := byName[m.Call.Tool]
			if !ok {
				fail(m.ID, "unknown tool %q on this host", m.Call.Tool)
				continue
			}
			if err := d.call(cs, w, m.ID, t, *m.Call, withoutEnv); err != nil {
				fail(m.ID, "%v", err)
			}
		case m.Fetch != nil:
			kc := d.fetch(cs, *m.Fetch)
			if kc == nil {
				fail(m.ID, "this host daemon holds no call %q of owner %q: it was fetched already, its result expired, or its owner was released", m.Fetch.Key, m.Fetch.Owner)
				continue
			}
			fetches.Go(func() {
				select {
				case <-kc.done:
				case <-ctx.Done():
					return
				}
				d.forget(*m.Fetch, kc)
				writeResult(w, m.ID, kc.res)
			})
		case m.Ping != nil:
			w.Write(proto.Msg{ID: m.ID, Pong: &struct{}{}})
		case m.Inventory != nil:
			res := tools.Inventory(ts, m.Inventory.Owner)
			d.mcp.inventory(m.Inventory.Owner, &res)
			raw, err := json.Marshal(res)
			if err != nil {
				fail(m.ID, "encode the inventory: %v", err)
				continue
			}
			rm := json.RawMessage(raw)
			w.Write(proto.Msg{ID: m.ID, Resources: &rm})
		case m.Release != nil:
			d.release(m.Release.Owner)
			w.Write(proto.Msg{ID: m.ID, Released: &struct{}{}})
		case isSnapshot(m):
			fetches.Go(func() { d.snaps.serve(d.ctx, ctx, w, m) })
		default:
			fail(m.ID, "a host accepts call, fetch, ping, inventory, release, mcp_list, capture, diff, restore, prune and size frames")
		}
	}
}

// call starts one tool call for the connection cs; its result goes to w with id while the
// connection lives, and is kept for a fetch by key. A call that asks for progress sends
// throttled progress frames to w before its result, while the connection lives. The
// processes it starts do not get the environment variables withoutEnv names.
func (d *Daemon) call(cs *connState, w *proto.Writer, id uint64, t tools.Tool, call proto.Call, withoutEnv []string) error {
	if len(call.Input) == 0 {
		call.Input = json.RawMessage("{}")
	}
	o := d.hold(cs, call.Owner)
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return errors.New("the host daemon is shutting down")
	}
	var kc *keyedCall
	if call.Key != "" {
		if _, dup := o.calls[call.Key]; dup {
			return fmt.Errorf("call key %q is in use by another call of owner %q", call.Key, call.Owner)
		}
		kc = &keyedCall{done: make(chan struct{})}
		o.calls[call.Key] = kc
	}
	ctx := tools.WithoutEnv(d.ctx, withoutEnv)
	var ps *throttle.Latest
	if call.Progress {
		// Progress goes only to the connection that made the call, while it lives.
		ps = &throttle.Latest{Every: progressEvery, Send: func(tail string) {
			d.mu.Lock()
			live := !cs.ended
			d.mu.Unlock()
			if live {
				w.Write(proto.Msg{ID: id, Progress: &proto.Progress{Tail: tail}})
			}
		}}
		ctx = tools.WithProgress(ctx, ps.Report)
	}
	var refused *tools.Result
	if call.Sandbox != nil {
		var err error
		if ctx, err = d.fenced(ctx, call); err != nil {
			r := tools.Errorf("not run: this host cannot fence the command as its session's mode needs (%v). Ask to run it outside the sandbox (outside_sandbox: true with a justification): the person decides", err)
			refused = &r
		}
	}
	d.inFlight.Add(1)
	d.calls.Go(func() {
		defer d.inFlight.Add(-1)
		var res tools.Result
		if refused != nil {
			res = *refused
		} else {
			res = t.Call(ctx, call.Owner, call.Input)
		}
		if ps != nil {
			ps.Stop(true) // the newest tail before the result; nothing after it
		}
		d.mu.Lock()
		live := !cs.ended
		if kc != nil {
			kc.res = res
			switch {
			case live && resultSize(res) > maxKeptResult:
				delete(o.calls, call.Key) // answered; too big to keep in case the answer is lost
			case live:
				kc.expires = time.Now().Add(d.o.ResultTTL)
			}
			close(kc.done)
		}
		d.mu.Unlock()
		if live {
			writeResult(w, id, res)
		}
	})
	return nil
}

// writeResult answers request id with res, or with an error frame when res is too large
// for a protocol line (the controller could not read it, and would lose the connection).
func writeResult(w *proto.Writer, id uint64, res tools.Result) {
	err := w.Write(proto.Msg{ID: id, Result: &res})
	if errors.Is(err, proto.ErrLineTooLong) {
		w.Write(proto.Msg{ID: id, Err: &proto.Error{Message: fmt.Sprintf("the call's result is too large for the host protocol (%d MiB): ask for less output", proto.MaxLine>>20)}})
	}
}

// maxKeptResult bounds a result kept for a fetch after it was answered on a live
// connection (images make results large).
const maxKeptResult = 1 << 20

func resultSize(res tools.Result) int {
	n := len(res.Text)
	for _, im := range res.Images {
		n += len(im.Data)
	}
	return n
}

// fetch returns the owner's call with the key, or nil.
func (d *Daemon) fetch(cs *connState, f proto.Fetch) *keyedCall {
	o := d.hold(cs, f.Owner)
	d.mu.Lock()
	defer d.mu.Unlock()
	return o.calls[f.Key]
}

// forget drops a fetched call.
func (d *Daemon) forget(f proto.Fetch, kc *keyedCall) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if o := d.owners[f.Owner]; o != nil && o.calls[f.Key] == kc {
		delete(o.calls, f.Key)
	}
}
