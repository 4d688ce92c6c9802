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

// Serve runs the host runtime (myco --mode host) over in and out until in closes or ctx
// ends. Calls run concurrently and answer in any order. A malformed line gets an error
// frame and the stream goes on. When in closes, every process the tools started is ended
// before Serve returns.
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
	defer cancel()
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

	w := proto.NewWriter(out)
	r := proto.NewReader(in)
	hello := o.Hello
	hello.Protocol = proto.Version
	if err := w.Write(proto.Msg{Hello: &hello}); err != nil {
		return fmt.Errorf("host: write hello: %w", err)
	}
	first, err := r.Read(ctx)
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil
		}
		return fmt.Errorf("host: read the controller's hello: %w", err)
	}
	if first.Hello == nil {
		w.Write(proto.Msg{ID: first.ID, Err: &proto.Error{Message: "the first frame must be a hello"}})
		return errors.New("host: the controller's first frame was not a hello")
	}
	if err := proto.Check(hello, *first.Hello); err != nil {
		w.Write(proto.Msg{Err: &proto.Error{Message: err.Error()}})
		return err
	}

	for {
		m, err := r.Read(ctx)
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
		switch {
		case m.Call != nil:
			call := *m.Call
			t, ok := byName[call.Tool]
			if !ok {
				w.Write(proto.Msg{ID: m.ID, Err: &proto.Error{Message: fmt.Sprintf("unknown tool %q on this host", call.Tool)}})
				continue
			}
			wg.Go(func() {
				res := t.Call(ctx, call.Owner, call.Input)
				w.Write(proto.Msg{ID: m.ID, Result: &res})
			})
		case m.Ping != nil:
			w.Write(proto.Msg{ID: m.ID, Pong: &struct{}{}})
		case m.Inventory != nil:
			inv := inventory(o.Tools, m.Inventory.Owner)
			raw, _ := json.Marshal(inv)
			rm := json.RawMessage(raw)
			w.Write(proto.Msg{ID: m.ID, Resources: &rm})
		case m.Release != nil:
			for _, t := range o.Tools {
				if rel, ok := t.(interface{ Release(string) }); ok {
					rel.Release(m.Release.Owner)
				}
			}
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
