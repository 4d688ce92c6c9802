package anthropic

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"

	"myco.dev/agent/model"
)

// event is the union of the stream's event payloads; unknown fields are ignored.
type event struct {
	Type         string        `json:"type"`
	Message      *startMessage `json:"message"`
	Index        int           `json:"index"`
	ContentBlock *startBlock   `json:"content_block"`
	Delta        *delta        `json:"delta"`
	Usage        *usage        `json:"usage"`
	Error        *struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

type startMessage struct {
	Usage *usage `json:"usage"`
}

type startBlock struct {
	Type      string `json:"type"`
	Text      string `json:"text"`
	Thinking  string `json:"thinking"`
	Signature string `json:"signature"`
	Data      string `json:"data"`
	ID        string `json:"id"`
	Name      string `json:"name"`
}

type delta struct {
	Type        string `json:"type"`
	Text        string `json:"text"`
	Thinking    string `json:"thinking"`
	Signature   string `json:"signature"`
	PartialJSON string `json:"partial_json"`
	StopReason  string `json:"stop_reason"`
}

// usage is the wire usage object. Every field is optional, and a present one replaces what
// was known before: message_delta usage is cumulative.
type usage struct {
	InputTokens              *int `json:"input_tokens"`
	CacheCreationInputTokens *int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     *int `json:"cache_read_input_tokens"`
	OutputTokens             *int `json:"output_tokens"`
	OutputTokensDetails      *struct {
		ThinkingTokens *int `json:"thinking_tokens"`
	} `json:"output_tokens_details"`
}

func (u *usage) merge(v *usage) {
	if v == nil {
		return
	}
	set := func(dst **int, src *int) {
		if src != nil {
			*dst = src
		}
	}
	set(&u.InputTokens, v.InputTokens)
	set(&u.CacheCreationInputTokens, v.CacheCreationInputTokens)
	set(&u.CacheReadInputTokens, v.CacheReadInputTokens)
	set(&u.OutputTokens, v.OutputTokens)
	if v.OutputTokensDetails != nil && v.OutputTokensDetails.ThinkingTokens != nil {
		u.OutputTokensDetails = v.OutputTokensDetails
	}
}

func (u *usage) neutral() model.Usage {
	n := func(p *int) int {
		if p == nil {
			return 0
		}
		return *p
	}
	out := model.Usage{
		CacheRead:  n(u.CacheReadInputTokens),
		CacheWrite: n(u.CacheCreationInputTokens),
		Output:     n(u.OutputTokens),
	}
	out.Input = n(u.InputTokens) + out.CacheRead + out.CacheWrite
	if u.OutputTokensDetails != nil {
		out.Reasoning = n(u.OutputTokensDetails.ThinkingTokens)
	}
	return out
}

// blockState accumulates one content block.
type blockState struct {
	index   int
	typ     string          // text, thinking, redacted_thinking, tool_use; anything else is ignored
	text    strings.Builder // text or thinking
	sig     string
	data    string
	id      string
	name    string
	args    strings.Builder
	call    int // ordinal among the response's tool calls, for ToolCallStart.Index
	stopped bool
}

// decoder is the state of one response stream.
type decoder struct {
	yield   func(model.Chunk) bool
	started bool
	blocks  []*blockState
	byIndex map[int]*blockState
	calls   int
	usage   usage
	stop    string
}

// errStopped reports that the consumer stopped reading; Decode returns nil for it.
var errStopped = errors.New("anthropic: consumer stopped")

// Decode reads an anthropic-messages event stream, yields text, thinking and tool-call
// chunks as they arrive, and yields [model.Done] at message_stop.
//
// ping, events of unknown types, content blocks and deltas of unknown types, unknown fields
// and keep-alives ([model.KeepAlive]) are ignored. An event of a known type that cannot be
// decoded is a *[model.EventError]. An error event is returned as a *model.ProviderError
// with MidStream set. A content or message event before message_start is an error, and a
// stream that ends before message_stop returns an error wrapping [model.ErrTruncatedStream].
//
// When the response stopped at max_tokens (or the context window), a tool_use block that never finished or whose
// input is not valid JSON is dropped from the message; under any other stop reason such a
// block is an error. Thinking without a signature is dropped, since it cannot be replayed.
func (Protocol) Decode(events iter.Seq2[model.Event, error], yield func(model.Chunk) bool) error {
	d := &decoder{yield: yield, byIndex: map[int]*blockState{}}
	for ev, err := range events {
		if err != nil {
			return fmt.Errorf("read anthropic stream: %w: %w", model.ErrTruncatedStream, err)
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
		if errors.Is(err, errStopped) {
			return nil
		}
		if err != nil || done {
			return err
		}
	}
	return fmt.Errorf("anthropic stream: %w", model.ErrTruncatedStream)
}

// undecodable decides about an event whose data does not decode into [event]: nil to skip
// it (a keep-alive, or an event, block or delta of a type this decoder does not read, whose
// fields may have any shape), a *model.ProviderError for an error event whose payload has
// an unexpected shape, and a *model.EventError for anything else.
func undecodable(ev model.Event, err error) error {
	var shape struct {
		Type         string `json:"type"`
		ContentBlock *struct {
			Type string `json:"type"`
		} `json:"content_block"`
		Delta *struct {
			Type string `json:"type"`
		} `json:"delta"`
	}
	typ := ev.Name
	if json.Unmarshal([]byte(ev.Data), &shape) == nil {
		if shape.Type != "" {
			typ = shape.Type
		}
		switch {
		case typ == "content_block_start" && shape.ContentBlock != nil && !knownBlock(shape.ContentBlock.Type):
			return nil
		case typ == "content_block_delta" && shape.Delta != nil && !knownDelta(shape.Delta.Type):
			return nil
		}
	}
	switch {
	case (typ == "" || typ == "ping") && model.KeepAlive(ev.Data):
		return nil
	case typ == "error":
		return model.StreamError(ev.Data)
	case typ != "" && !knownEvent(typ):
		return nil
	}
	return model.BadEvent(Name, ev, typ, err)
}

func knownEvent(t string) bool {
	switch t {
	case "message_start", "content_block_start", "content_block_delta", "content_block_stop", "message_delta", "message_stop", "ping", "error":
		return true
	}
	return false
}

func knownBlock(t string) bool {
	switch t {
	case "text", "thinking", "redacted_thinking", "tool_use":
		return true
	}
	return false
}

func knownDelta(t string) bool {
	switch t {
	case "text_delta", "thinking_delta", "signature_delta", "input_json_delta":
		return true
	}
	return false
}

// handle applies one event; done reports message_stop.
func (d *decoder) handle(e event) (done bool, err error) {
	switch e.Type {
	case "error":
		pe := &model.ProviderError{MidStream: true}
		if e.Error != nil {
			pe.Type, pe.Message = e.Error.Type, e.Error.Message
		}
		pe.Retryable = model.RetryableType(pe.Type)
		return false, pe
	case "message_start", "content_block_start", "content_block_delta", "content_block_stop", "message_delta", "message_stop":
	default:
		return false, nil // ping, or an event type added after this was written
	}
	if e.Type == "message_start" {
		if d.started {
			return false, errors.New("anthropic stream: second message_start")
		}
		d.started = true
		if e.Message != nil {
			d.usage.merge(e.Message.Usage)
		}
		return false, nil
	}
	if !d.started {
		return false, fmt.Errorf("anthropic stream: %s before message_start", e.Type)
	}
	switch e.Type {
	case "content_block_start":
		return false, d.start(e)
	case "content_block_delta":
		return false, d.delta(e)
	case "content_block_stop":
		if b := d.byIndex[e.Index]; b != nil {
			b.stopped = true
		}
	case "message_delta":
		if e.Delta != nil && e.Delta.StopReason != "" {
			d.stop = e.Delta.StopReason
		}
		d.usage.merge(e.Usage)
	case "message_stop":
		msg, stop, err := d.finish()
		if err != nil {
			return false, err
		}
		if !d.yield(model.Done{Message: msg, Stop: stop, Usage: d.usage.neutral()}) {
			return true, errStopped
		}
		return true, nil
	}
	return false, nil
}

func (d *decoder) start(e event) error {
	if e.ContentBlock == nil {
		return fmt.Errorf("anthropic stream: content_block_start %d without content_block", e.Index)
	}
	if _, dup := d.byIndex[e.Index]; dup {
		return fmt.Errorf("anthropic stream: content block %d started twice", e.Index)
	}
	cb := e.ContentBlock
	b := &blockState{index: e.Index, typ: cb.Type}
	d.blocks = append(d.blocks, b)
	d.byIndex[e.Index] = b
	switch cb.Type {
	case "text":
		return d.text(b, cb.Text)
	case "thinking":
		b.sig = cb.Signature
		return d.thinking(b, cb.Thinking)
	case "redacted_thinking":
		b.data = cb.Data
	case "tool_use":
		b.id, b.name, b.call = cb.ID, cb.Name, d.calls
		d.calls++
		if !d.yield(model.ToolCallStart{Index: b.call, ID: b.id, Name: b.name}) {
			return errStopped
		}
	}
	return nil
}

func (d *decoder) delta(e event) error {
	b := d.byIndex[e.Index]
	if b == nil {
		return fmt.Errorf("anthropic stream: delta for content block %d, which never started", e.Index)
	}
	if e.Delta == nil {
		return nil
	}
	switch {
	case e.Delta.Type == "text_delta" && b.typ == "text":
		return d.text(b, e.Delta.Text)
	case e.Delta.Type == "thinking_delta" && b.typ == "thinking":
		return d.thinking(b, e.Delta.Thinking)
	case e.Delta.Type == "signature_delta" && b.typ == "thinking":
		b.sig = e.Delta.Signature // replaces, as the SDK does
	case e.Delta.Type == "input_json_delta" && b.typ == "tool_use":
		if e.Delta.PartialJSON == "" {
			return nil
		}
		b.args.WriteString(e.Delta.PartialJSON)
		if !d.yield(model.ToolCallDelta{Index: b.call, Args: e.Delta.PartialJSON}) {
			return errStopped
		}
	case knownDelta(e.Delta.Type) && knownBlock(b.typ):
		// Dropping it would be as silent as skipping a broken event: an argument fragment
		// sent to the wrong block changes the call.
		return fmt.Errorf("anthropic stream: %s for content block %d, which is a %s block", e.Delta.Type, e.Index, b.typ)
	}
	return nil
}

func (d *decoder) text(b *blockState, s string) error {
	if s == "" {
		return nil
	}
	b.text.WriteString(s)
	if !d.yield(model.TextDelta{Text: s}) {
		return errStopped
	}
	return nil
}

func (d *decoder) thinking(b *blockState, s string) error {
	if s == "" {
		return nil
	}
	b.text.WriteString(s)
	if !d.yield(model.ThinkingDelta{Text: s}) {
		return errStopped
	}
	return nil
}

// finish assembles the message from the blocks in index order.
func (d *decoder) finish() (model.Message, model.StopReason, error) {
	stop := stopReason(d.stop)
	msg := model.Message{Role: model.Assistant}
	for _, b := range sortedBlocks(d.blocks) {
		switch b.typ {
		case "text":
			if b.text.Len() > 0 {
				msg.Parts = append(msg.Parts, model.TextPart(b.text.String()))
			}
		case "thinking":
			if b.sig != "" {
				msg.Parts = append(msg.Parts, model.Part{Kind: model.KindThinking, Thinking: &model.Thinking{Protocol: Name, Text: b.text.String(), Signature: b.sig}})
			}
		case "redacted_thinking":
			if b.data != "" {
				msg.Parts = append(msg.Parts, model.Part{Kind: model.KindThinking, Thinking: &model.Thinking{Protocol: Name, Redacted: b.data}})
			}
		case "tool_use":
			args := b.args.String()
			if args == "" {
				args = "{}"
			}
			if !b.stopped || !json.Valid([]byte(args)) {
				if stop == model.StopMaxTokens || stop == model.StopContext {
					continue // cut off mid-call: it was never complete
				}
				if !b.stopped {
					return model.Message{}, "", fmt.Errorf("anthropic stream: tool call %s (%s) never finished", b.id, b.name)
				}
				return model.Message{}, "", fmt.Errorf("anthropic stream: tool call %s (%s) has invalid input JSON %q", b.id, b.name, args)
			}
			msg.Parts = append(msg.Parts, model.Part{Kind: model.KindToolCall, ToolCall: &model.ToolCall{ID: b.id, Name: b.name, Input: json.RawMessage(args)}})
		}
	}
	return msg, stop, nil
}

// sortedBlocks orders blocks by index; they normally arrive in order already.
func sortedBlocks(bs []*blockState) []*blockState {
	out := slices.Clone(bs)
	slices.SortStableFunc(out, func(a, b *blockState) int { return cmp.Compare(a.index, b.index) })
	return out
}

func stopReason(s string) model.StopReason {
	switch s {
	case "end_turn", "stop_sequence":
		return model.StopEnd
	case "tool_use":
		return model.StopToolUse
	case "max_tokens":
		return model.StopMaxTokens
	case "refusal":
		return model.StopRefusal
	case "pause_turn":
		return model.StopPause
	case "model_context_window_exceeded":
		return model.StopContext
	}
	return model.StopOther
}
