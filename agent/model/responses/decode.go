package responses

import (
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"strings"

	"myco.dev/agent/model"
)

// event is the union of the stream event fields the decoder reads; unknown fields
// (obfuscation, logprobs, sequence_number, …) are ignored.
type event struct {
	Type         string          `json:"type"`
	OutputIndex  int             `json:"output_index"`
	SummaryIndex int             `json:"summary_index"`
	ContentIndex int             `json:"content_index"`
	Item         *item           `json:"item"`
	Delta        string          `json:"delta"`
	Response     *response       `json:"response"`
	Error        json.RawMessage `json:"error"`
	Code         json.RawMessage `json:"code"`
	Message      string          `json:"message"`
}

// item is an output item as streamed.
type item struct {
	ID               string        `json:"id"`
	Type             string        `json:"type"`
	Status           string        `json:"status"`
	Content          []itemContent `json:"content"`
	Summary          []itemContent `json:"summary"`
	EncryptedContent string        `json:"encrypted_content"`
	CallID           string        `json:"call_id"`
	Name             string        `json:"name"`
	Arguments        string        `json:"arguments"`
}

type itemContent struct {
	Type    string `json:"type"` // output_text, refusal, summary_text, reasoning_text
	Text    string `json:"text"`
	Refusal string `json:"refusal"`
}

type response struct {
	Status string `json:"status"`
	// Output is decoded item by item in finish: an item of a type the decoder does not
	// read may have fields of any shape.
	Output            []json.RawMessage `json:"output"`
	IncompleteDetails *struct {
		Reason string `json:"reason"`
	} `json:"incomplete_details"`
	Error *struct {
		Code    string `json:"code"`
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
	Usage *struct {
		InputTokens        int `json:"input_tokens"`
		OutputTokens       int `json:"output_tokens"`
		InputTokensDetails struct {
			CachedTokens     int `json:"cached_tokens"`
			CacheWriteTokens int `json:"cache_write_tokens"`
		} `json:"input_tokens_details"`
		OutputTokensDetails struct {
			ReasoningTokens int `json:"reasoning_tokens"`
		} `json:"output_tokens_details"`
	} `json:"usage"`
}

// itemState is what the decoder knows of one output item.
type itemState struct {
	added item
	done  *item // the authoritative copy from output_item.done
	text  strings.Builder
	args  strings.Builder
	// thinking holds the streamed reasoning text per summary (or content) index.
	thinking map[int]*strings.Builder
	tool     int // ToolCallStart index, for function calls
}

// thoughtKey names one reasoning part: an item's summary part or raw content part.
type thoughtKey struct {
	item    int
	summary bool
	part    int
}

type decoder struct {
	yield   func(model.Chunk) bool
	stopped bool
	items   map[int]*itemState
	tools   int
	// lastThought keys the reasoning part the last ThinkingDelta belonged to, so a new part
	// is set off from the previous one by a blank line.
	lastThought thoughtKey
	errEvent    *model.ProviderError
}

func (d *decoder) emit(c model.Chunk) {
	if !d.stopped && !d.yield(c) {
		d.stopped = true
	}
}

// decode reads events until a terminal one. An error event is remembered and returned when
// the stream then fails or ends; a stream that ends (or breaks) before a terminal event is
// [model.ErrTruncatedStream]. An event that cannot be decoded is a *[model.EventError].
func decode(events iter.Seq2[model.Event, error], yield func(model.Chunk) bool) error {
	d := &decoder{yield: yield, items: map[int]*itemState{}}
	for ev, err := range events {
		if err != nil {
			if d.errEvent != nil {
				return d.errEvent
			}
			return fmt.Errorf("%w: %w", model.ErrTruncatedStream, err)
		}
		var e event
		if err := json.Unmarshal([]byte(ev.Data), &e); err != nil {
			if err := undecodable(ev, err); err != nil {
				return err
			}
			continue
		}
		if e.Type == "" {
			e.Type = ev.Name
		}
		done, err := d.handle(e)
		if d.stopped {
			return nil
		}
		var bad badItemError
		if errors.As(err, &bad) {
			return model.BadEvent(name, ev, e.Type, bad.err)
		}
		if err != nil || done {
			return err
		}
	}
	if d.errEvent != nil {
		return d.errEvent
	}
	return model.ErrTruncatedStream
}

// undecodable decides about an event whose data does not decode into [event]: nil to skip
// it (a keep-alive, or an event or output item of a type this decoder does not read, whose
// fields may have any shape), a *model.ProviderError for an error event whose payload has
// an unexpected shape, and a *model.EventError for anything else.
func undecodable(ev model.Event, err error) error {
	var shape struct {
		Type string `json:"type"`
		Item *struct {
			Type string `json:"type"`
		} `json:"item"`
	}
	typ := ev.Name
	if json.Unmarshal([]byte(ev.Data), &shape) == nil {
		if shape.Type != "" {
			typ = shape.Type
		}
		if (typ == "response.output_item.added" || typ == "response.output_item.done") && shape.Item != nil && !knownItem(shape.Item.Type) {
			return nil
		}
	}
	switch {
	case typ == "" && model.KeepAlive(ev.Data):
		return nil
	case typ == "error" || typ == "response.failed":
		return model.StreamError(ev.Data)
	case typ != "" && !knownEvent(typ):
		return nil
	}
	return model.BadEvent(name, ev, typ, err)
}

// knownEvent reports whether the decoder reads events of type t; it ignores all others.
func knownEvent(t string) bool {
	switch t {
	case "response.output_item.added", "response.output_item.done",
		"response.output_text.delta", "response.refusal.delta",
		"response.reasoning_summary_text.delta", "response.reasoning_text.delta",
		"response.function_call_arguments.delta",
		"error", "response.failed", "response.completed", "response.incomplete":
		return true
	}
	return false
}

// badItemError is an output item of a known type, in a terminal event, that does not
// decode; decode turns it into a *model.EventError for that event.
type badItemError struct{ err error }

func (e badItemError) Error() string { return "output item: " + e.err.Error() }

func knownItem(t string) bool {
	return t == "reasoning" || t == "message" || t == "function_call"
}

// handle applies one event; done reports a terminal event that ended the stream well.
func (d *decoder) handle(e event) (done bool, err error) {
	switch e.Type {
	case "response.output_item.added":
		if e.Item == nil {
			return false, nil
		}
		st := &itemState{added: *e.Item}
		d.items[e.OutputIndex] = st
		if e.Item.Type == "function_call" {
			st.tool = d.tools
			d.tools++
			d.emit(model.ToolCallStart{Index: st.tool, ID: e.Item.CallID, Name: e.Item.Name})
		}
	case "response.output_item.done":
		if e.Item == nil {
			return false, nil
		}
		st := d.items[e.OutputIndex]
		if st == nil { // done without added: announce it now
			if _, err := d.handle(event{Type: "response.output_item.added", OutputIndex: e.OutputIndex, Item: e.Item}); err != nil {
				return false, err
			}
			st = d.items[e.OutputIndex]
			if e.Item.Type == "function_call" && e.Item.Arguments != "" {
				d.emit(model.ToolCallDelta{Index: st.tool, Args: e.Item.Arguments})
			}
		}
		it := *e.Item
		st.done = &it
	case "response.output_text.delta", "response.refusal.delta":
		if st := d.items[e.OutputIndex]; st != nil {
			st.text.WriteString(e.Delta)
		}
		d.emit(model.TextDelta{Text: e.Delta})
	case "response.reasoning_summary_text.delta":
		d.thought(e.OutputIndex, true, e.SummaryIndex, e.Delta)
	case "response.reasoning_text.delta":
		d.thought(e.OutputIndex, false, e.ContentIndex, e.Delta)
	case "response.function_call_arguments.delta":
		st := d.items[e.OutputIndex]
		if st == nil {
			return false, nil
		}
		st.args.WriteString(e.Delta)
		d.emit(model.ToolCallDelta{Index: st.tool, Args: e.Delta})
	case "error":
		d.errEvent = errorEvent(e)
	case "response.failed":
		if d.errEvent != nil {
			return false, d.errEvent
		}
		pe := &model.ProviderError{MidStream: true, Message: "response failed"}
		if e.Response != nil && e.Response.Error != nil {
			pe.Type = e.Response.Error.Code
			if pe.Type == "" {
				pe.Type = e.Response.Error.Type
			}
			pe.Message = e.Response.Error.Message
		}
		pe.Retryable = model.RetryableType(pe.Type)
		return false, pe
	case "response.completed", "response.incomplete":
		return true, d.finish(e.Response)
	}
	return false, nil
}

// thought streams reasoning text of one item part, separating parts with a blank line.
func (d *decoder) thought(index int, summary bool, part int, delta string) {
	if delta == "" {
		return
	}
	st := d.items[index]
	if st == nil {
		st = &itemState{added: item{Type: "reasoning"}}
		d.items[index] = st
	}
	if st.thinking == nil {
		st.thinking = map[int]*strings.Builder{}
	}
	b := st.thinking[part]
	if b == nil {
		b = &strings.Builder{}
		st.thinking[part] = b
	}
	b.WriteString(delta)
	key := thoughtKey{item: index + 1, summary: summary, part: part}
	if d.lastThought.item != 0 && d.lastThought != key {
		d.emit(model.ThinkingDelta{Text: "\n\n"})
	}
	d.lastThought = key
	d.emit(model.ThinkingDelta{Text: delta})
}

// errorEvent reads an `error` event, nested ({"error":{…}}) or flat ({"code","message"}).
func errorEvent(e event) *model.ProviderError {
	var typ, msg string
	if len(e.Error) > 0 && e.Error[0] == '{' {
		var inner struct {
			Type    string          `json:"type"`
			Code    json.RawMessage `json:"code"`
			Message string          `json:"message"`
		}
		if json.Unmarshal(e.Error, &inner) == nil {
			typ, msg = str(inner.Code), inner.Message
			if typ == "" {
				typ = inner.Type
			}
		}
	} else {
		typ, msg = str(e.Code), e.Message
	}
	if msg == "" {
		msg = "error event"
	}
	return &model.ProviderError{MidStream: true, Type: typ, Message: msg, Retryable: model.RetryableType(typ)}
}

func str(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return ""
}
