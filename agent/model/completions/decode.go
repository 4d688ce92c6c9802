package completions

import (
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"strconv"
	"strings"

	"myco.dev/agent/model"
)

// streamChunk is one chat.completion.chunk, or an error object sent in its place.
type streamChunk struct {
	Choices []struct {
		Index int `json:"index"`
		Delta struct {
			Content          string          `json:"content"`
			Refusal          string          `json:"refusal"`
			ReasoningContent string          `json:"reasoning_content"`
			Reasoning        string          `json:"reasoning"`
			ToolCalls        []toolCallDelta `json:"tool_calls"`
		} `json:"delta"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage *usage          `json:"usage"`
	Error json.RawMessage `json:"error"`
}

type toolCallDelta struct {
	Index    *int   `json:"index"`
	ID       string `json:"id"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type usage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	PromptTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
	PromptCacheHitTokens int `json:"prompt_cache_hit_tokens"` // DeepSeek
}

func (u *usage) neutral() model.Usage {
	cached := u.PromptTokensDetails.CachedTokens
	if cached == 0 {
		cached = u.PromptCacheHitTokens
	}
	return model.Usage{
		Input:     u.PromptTokens,
		Output:    u.CompletionTokens,
		CacheRead: cached,
		Reasoning: u.CompletionTokensDetails.ReasoningTokens,
	}
}

// call is a tool call being assembled from its fragments.
type call struct {
	wireIndex *int
	id, name  string
	args      strings.Builder
	started   bool // ToolCallStart has been yielded
}

// decoder accumulates one response.
type decoder struct {
	yield    func(model.Chunk) bool
	think    thinkSplitter
	thinking strings.Builder
	text     strings.Builder
	calls    []*call
	started  int // ToolCallStart chunks yielded, the next neutral index
	finish   string
	refused  bool
	usage    model.Usage
	stopped  bool // the consumer stopped the iteration
}

// Decode reads a Chat Completions stream and yields its chunks, ending with one [model.Done].
// The stream ends at "data: [DONE]"; a stream that ends after its finish_reason without
// [DONE] is accepted, one that ends before it is [model.ErrTruncatedStream]. A chunk with
// an error object is returned as a mid-stream *[model.ProviderError].
//
// Gateway keep-alives sent as data (an empty payload, ":ping", "keep-alive", see
// [model.KeepAlive]) are skipped. Any other payload that is not a JSON object of the chunk's
// shape is a *[model.EventError]: the protocol has no event types to tell noise from a
// chunk by, and a chunk skipped in the middle of a tool call's arguments changes the call.
func (Protocol) Decode(events iter.Seq2[model.Event, error], yield func(model.Chunk) bool) error {
	d := &decoder{yield: yield}
	for ev, err := range events {
		if err != nil {
			var tl *model.ResponseTooLargeError
			if d.finish != "" && !errors.As(err, &tl) {
				break // everything but usage arrived; a proxy cut the tail
			}
			return fmt.Errorf("%w: %w", model.ErrTruncatedStream, err)
		}
		data := strings.TrimSpace(ev.Data)
		if data == "[DONE]" {
			return d.done()
		}
		if model.KeepAlive(data) {
			continue
		}
		var c streamChunk
		if !strings.HasPrefix(data, "{") {
			return model.BadEvent(Name, ev, "chunk", errors.New("the data is not a JSON object"))
		}
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			if typ, msg := model.ErrorBody([]byte(data)); msg != "" {
				// An error object in a chunk of an unexpected shape is still the error.
				return &model.ProviderError{MidStream: true, Type: typ, Message: msg, Retryable: model.RetryableType(typ)}
			}
			return model.BadEvent(Name, ev, "chunk", err)
		}
		if err := d.chunk(data, &c); err != nil {
			return err
		}
		if d.stopped {
			return nil
		}
	}
	if d.finish == "" {
		return model.ErrTruncatedStream
	}
	return d.done()
}

func (d *decoder) emit(c model.Chunk) {
	if !d.stopped && !d.yield(c) {
		d.stopped = true
	}
}

func (d *decoder) chunk(data string, c *streamChunk) error {
	if e := strings.TrimSpace(string(c.Error)); e != "" && e != "null" && e != "false" && e != `""` {
		typ, msg := model.ErrorBody([]byte(data))
		if msg == "" {
			msg = e
		}
		pe := &model.ProviderError{MidStream: true, Type: typ, Message: msg, Retryable: model.RetryableType(typ)}
		// OpenRouter reports mid-generation failures with an HTTP-style numeric code.
		var coded struct {
			Code int `json:"code"`
		}
		if typ == "" && json.Unmarshal(c.Error, &coded) == nil && coded.Code != 0 {
			pe.Type, pe.Retryable = strconv.Itoa(coded.Code), model.RetryableStatus(coded.Code)
		}
		return pe
	}
	if c.Usage != nil {
		d.usage = c.Usage.neutral()
	}
	for _, ch := range c.Choices {
		if ch.Index != 0 {
			continue
		}
		delta := ch.Delta
		// Some servers send both names with the same text; prefer the older one.
		reasoning := delta.ReasoningContent
		if reasoning == "" {
			reasoning = delta.Reasoning
		}
		d.addThinking(reasoning)
		if delta.Content != "" {
			th, tx := d.think.feed(delta.Content)
			d.addThinking(th)
			d.addText(tx)
		}
		if delta.Refusal != "" {
			d.refused = true
			d.addText(delta.Refusal)
		}
		for _, tc := range delta.ToolCalls {
			d.toolCall(tc)
		}
		if ch.FinishReason != "" {
			d.finish = ch.FinishReason
		}
	}
	return nil
}

func (d *decoder) addThinking(s string) {
	if s != "" {
		d.thinking.WriteString(s)
		d.emit(model.ThinkingDelta{Text: s})
	}
}

func (d *decoder) addText(s string) {
	if s != "" {
		d.text.WriteString(s)
		d.emit(model.TextDelta{Text: s})
	}
}

// toolCall files a fragment under its call: by index, else by id, else as a continuation
// of the latest call unless it brings a new name. A fragment whose index matches but whose id differs starts a new call
// (servers that number every call 0).
func (d *decoder) toolCall(tc toolCallDelta) {
	var c *call
	switch {
	case tc.Index != nil:
		for _, x := range d.calls {
			if x.wireIndex != nil && *x.wireIndex == *tc.Index && (tc.ID == "" || x.id == "" || x.id == tc.ID) {
				c = x
			}
		}
	case tc.ID != "":
		for _, x := range d.calls {
			if x.id == tc.ID {
				c = x
			}
		}
	case len(d.calls) > 0:
		// No index and no id: a continuation, unless it names a second call.
		if last := d.calls[len(d.calls)-1]; tc.Function.Name == "" || last.name == "" {
			c = last
		}
	}
	if c == nil {
		c = &call{wireIndex: tc.Index}
		d.calls = append(d.calls, c)
	}
	if c.id == "" {
		c.id = tc.ID
	}
	if c.name == "" {
		c.name = tc.Function.Name
	}
	c.args.WriteString(tc.Function.Arguments)
	switch {
	case c.started:
		if tc.Function.Arguments != "" {
			d.emit(model.ToolCallDelta{Index: d.index(c), Args: tc.Function.Arguments})
		}
	case c.name != "":
		d.start(c)
	}
}

// start announces c and yields the arguments that arrived before its name.
func (d *decoder) start(c *call) {
	if c.id == "" {
		c.id = fmt.Sprintf("call_%d", d.started+1)
	}
	c.started = true
	i := d.started
	d.started++
	d.emit(model.ToolCallStart{Index: i, ID: c.id, Name: c.name})
	if c.args.Len() > 0 {
		d.emit(model.ToolCallDelta{Index: i, Args: c.args.String()})
	}
}

// index is c's neutral index: its position among the started calls.
func (d *decoder) index(c *call) int {
	i := 0
	for _, x := range d.calls {
		if x == c {
			return i
		}
		if x.started {
			i++
		}
	}
	return i
}

// done assembles the message and yields Done.
func (d *decoder) done() error {
	th, tx := d.think.flush()
	d.addThinking(th)
	d.addText(tx)
	stop := stopReason(d.finish)
	if d.refused {
		stop = model.StopRefusal
	}
	msg := model.Message{Role: model.Assistant}
	if d.thinking.Len() > 0 {
		msg.Parts = append(msg.Parts, model.Part{Kind: model.KindThinking, Thinking: &model.Thinking{Protocol: Name, Text: d.thinking.String()}})
	}
	if d.text.Len() > 0 {
		msg.Parts = append(msg.Parts, model.TextPart(d.text.String()))
	}
	ncalls := 0
	for _, c := range d.calls {
		if !c.started {
			continue // never named: nothing could run it
		}
		input, ok := callInput(c.args.String())
		if !ok && stop == model.StopMaxTokens {
			continue // cut off by the output cap mid-arguments
		}
		ncalls++
		msg.Parts = append(msg.Parts, model.Part{Kind: model.KindToolCall, ToolCall: &model.ToolCall{ID: c.id, Name: c.name, Input: input}})
	}
	// Some servers finish with "stop" (or no reason at all) even when they called tools.
	if ncalls > 0 && (stop == model.StopEnd || stop == model.StopOther) {
		stop = model.StopToolUse
	}
	if ncalls == 0 && stop == model.StopToolUse {
		stop = model.StopEnd
	}
	d.emit(model.Done{Message: msg, Stop: stop, Usage: d.usage})
	return nil
}

// callInput returns args as JSON. Empty arguments mean no arguments. Arguments that are
// not JSON are kept as a JSON string, so the call can still be answered (the tool will
// reject the input) and replayed; ok reports whether they parsed.
func callInput(args string) (json.RawMessage, bool) {
	if strings.TrimSpace(args) == "" {
		return json.RawMessage("{}"), true
	}
	if json.Valid([]byte(args)) {
		return json.RawMessage(args), true
	}
	b, _ := json.Marshal(args)
	return b, false
}

func stopReason(finish string) model.StopReason {
	switch finish {
	case "stop", "", "end_turn":
		return model.StopEnd
	case "tool_calls", "function_call":
		return model.StopToolUse
	case "length":
		return model.StopMaxTokens
	case "content_filter":
		return model.StopRefusal
	}
	return model.StopOther
}
