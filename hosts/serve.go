package hosts

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"

	"myco/hosts/proto"
	"myco/hosts/tools"
)

// ServeOptions configures a host runtime.
type ServeOptions struct {
	Tools []tools.Tool
	Hello proto.Hello // what this host says about itself; Protocol is filled in
	Log   *slog.Logger
}

// frame is one read from the controller.
type frame struct {
	m   proto.Msg
	err error
}

// Serve runs the host runtime (myco --mode host) over in and out until in closes or ctx
// ends. Calls run concurrently and answer in any order. A malformed line gets an error
// frame and the stream goes on. When in closes or ctx ends, every call in flight is
// cancelled and every process the tools started is ended before Serve returns.
//
// Serve reads in on a goroutine of its own; when ctx ends first, that goroutine stays
// blocked in its read until in is closed or the process exits.
func Serve(ctx context.Context, in io.Reader, out io.Writer, o ServeOptions) error {
	log := o.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	byName := map[string]tools.Tool{}
	for _, t := range o.Tools {
		byName[t.Name()] = t
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
		for _, t := range o.Tools {
			if c, ok := t.(interface{ Close() }); ok {
				c.Close()
			}
		}
	}()

	// The reader cannot be interrupted in a blocking read, so it is not waited for: it
	// ends at the next line or at EOF, and never blocks on a send after Serve returned.
	frames := make(chan frame)
	go func() {
		r := proto.NewReader(in)
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
	hello := o.Hello
	hello.Protocol = proto.Version
	if err := w.Write(proto.Msg{Hello: &hello}); err != nil {
		return fmt.Errorf("host: write hello: %w", err)
	}
	first, err := next()
	switch {
	case errors.Is(err, io.EOF), ctx.Err() != nil:
		return nil
	case errors.Is(err, proto.ErrMalformed):
		w.Write(proto.Msg{Err: &proto.Error{Message: "the first frame must be a hello: " + err.Error()}})
		return fmt.Errorf("host: the controller's first frame: %w", err)
	case err != nil:
		return fmt.Errorf("host: read the controller's hello: %w", err)
	}
	if first.Hello == nil {
		w.Write(proto.Msg{ID: first.ID, Err: &proto.Error{Message: "the first frame must be a hello"}})
		return errors.New("host: the controller's first frame was not a hello")
	}
	if err := proto.Check(*first.Hello, hello); err != nil {
		w.Write(proto.Msg{Err: &proto.Error{Message: err.Error()}})
		return err
	}

	for {
		m, err := next()
		switch {
		case errors.Is(err, io.EOF), ctx.Err() != nil:
			return nil
		case errors.Is(err, proto.ErrMalformed):
			log.Warn("malformed frame", "err", err)
			if werr := w.Write(proto.Msg{ID: m.ID, Err: &proto.Error{Message: err.Error()}}); werr != nil {
				return nil
			}
			continue
		case err != nil:
			return fmt.Errorf("host: read: %w", err)
		}
		if m.ID == 0 {
			w.Write(proto.Msg{Err: &proto.Error{Message: "a request needs a nonzero id"}})
			continue
		}
		switch {
		case m.Call != nil:
			call := *m.Call
			t, ok := byName[call.Tool]
			if !ok {
				w.Write(proto.Msg{ID: m.ID, Err: &proto.Error{Message: fmt.Sprintf("unknown tool %q on this host", call.Tool)}})
				continue
			}
			if len(call.Input) == 0 {
				call.Input = json.RawMessage("{}")
			}
			wg.Go(func() {
				res := t.Call(ctx, call.Owner, call.Input)
				w.Write(proto.Msg{ID: m.ID, Result: &res})
			})
		case m.Ping != nil:
			w.Write(proto.Msg{ID: m.ID, Pong: &struct{}{}})
		case m.Inventory != nil:
			raw, err := json.Marshal(inventory(o.Tools, m.Inventory.Owner))
			if err != nil {
				w.Write(proto.Msg{ID: m.ID, Err: &proto.Error{Message: "encode the inventory: " + err.Error()}})
				continue
			}
			rm := json.RawMessage(raw)
			w.Write(proto.Msg{ID: m.ID, Resources: &rm})
		case m.Release != nil:
			release(o.Tools, m.Release.Owner)
			w.Write(proto.Msg{ID: m.ID, Released: &struct{}{}})
		default:
			w.Write(proto.Msg{ID: m.ID, Err: &proto.Error{Message: "a host accepts call, ping, inventory and release frames"}})
		}
	}
}

// inventory collects the owner's resources from every tool that keeps any, keyed by tool.
func inventory(ts []tools.Tool, owner string) map[string]any {
	out := map[string]any{}
	for _, t := range ts {
		if inv, ok := t.(interface{ Inventory(string) any }); ok {
			out[t.Name()] = inv.Inventory(owner)
		}
	}
	return out
}

// release ends the owner's resources in every tool that keeps any.
func release(ts []tools.Tool, owner string) {
	for _, t := range ts {
		if r, ok := t.(interface{ Release(string) }); ok {
			r.Release(owner)
		}
	}
}
