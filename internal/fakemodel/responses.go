package fakemodel

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
)

// respRequest is the part of a responses request body the fake reads.
type respRequest struct {
	Model   string          `json:"model"`
	Store   *bool           `json:"store"`
	Include []string        `json:"include"`
	Input   json.RawMessage `json:"input"`
}

// respItem is an input item, loosely typed so that validation can report what is wrong.
type respItem struct {
	Type             string          `json:"type"`
	ID               string          `json:"id"`
	Role             string          `json:"role"`
	Content          json.RawMessage `json:"content"`
	CallID           string          `json:"call_id"`
	Name             string          `json:"name"`
	EncryptedContent *string         `json:"encrypted_content"`
	Summary          []struct {
		Text string `json:"text"`
	} `json:"summary"`
	Output json.RawMessage `json:"output"`
}

type respPart struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// respSecret keys the encrypted_content this fake issues, so it can tell its own blobs from
// truncated or foreign ones without keeping state.
const respSecret = "fakemodel responses reasoning"

// respSeal returns the encrypted_content of reasoning item id with the given text.
func respSeal(id, text string) string {
	return "gAAAAAB" + base64.RawURLEncoding.EncodeToString([]byte(text)) + "." + respMAC(id, text)
}

func respMAC(id, text string) string {
	sum := sha256.Sum256([]byte(respSecret + "\x00" + id + "\x00" + text))
	return hex.EncodeToString(sum[:12])
}

// respUnseal reports whether blob is encrypted_content this fake issued for item id.
func respUnseal(id, blob string) bool {
	rest, ok := strings.CutPrefix(blob, "gAAAAAB")
	if !ok {
		return false
	}
	enc, mac, ok := strings.Cut(rest, ".")
	if !ok {
		return false
	}
	text, err := base64.RawURLEncoding.DecodeString(enc)
	return err == nil && mac == respMAC(id, string(text))
}

// respValidate checks the input items the way the API does under store:false. It returns
// the status and message of the error to answer with, or 0.
func respValidate(req respRequest) (status int, typ, msg string) {
	if len(req.Input) == 0 || req.Input[0] != '[' {
		return 0, "", "" // a bare string, or nothing
	}
	var items []respItem
	if err := json.Unmarshal(req.Input, &items); err != nil {
		return http.StatusBadRequest, "invalid_request_error", "Invalid 'input': " + err.Error()
	}
	store := req.Store == nil || *req.Store
	calls := map[string]bool{} // call_id → answered
	var order []string
	for i, it := range items {
		switch it.Type {
		case "message", "":
			allowed := []string{"input_text", "input_image", "input_file"}
			if it.Role == "assistant" {
				allowed = []string{"output_text", "refusal"}
			}
			var parts []respPart
			if len(it.Content) > 0 && it.Content[0] == '[' {
				if err := json.Unmarshal(it.Content, &parts); err != nil {
					return http.StatusBadRequest, "invalid_request_error", fmt.Sprintf("Invalid 'input[%d].content': %s", i, err)
				}
			}
			for j, p := range parts {
				if !slices.Contains(allowed, p.Type) {
					return http.StatusBadRequest, "invalid_request_error", fmt.Sprintf("Invalid value: '%s'. Supported values are: '%s'. (input[%d].content[%d].type)", p.Type, strings.Join(allowed, "', '"), i, j)
				}
			}
		case "reasoning":
			if it.EncryptedContent == nil || *it.EncryptedContent == "" {
				m := fmt.Sprintf("Item with id '%s' not found.", it.ID)
				if !store {
					m += " Items are not persisted when `store` is set to false. Try again with `store` set to true, or remove this item from your input."
				}
				return http.StatusNotFound, "invalid_request_error", m
			}
			if !respUnseal(it.ID, *it.EncryptedContent) {
				return http.StatusBadRequest, "invalid_request_error", fmt.Sprintf("The encrypted content for item %s could not be verified.", it.ID)
			}
			if i == len(items)-1 {
				return http.StatusBadRequest, "invalid_request_error", fmt.Sprintf("Item '%s' of type 'reasoning' was provided without its required following item.", it.ID)
			}
		case "item_reference":
			if !store {
				return http.StatusNotFound, "invalid_request_error", fmt.Sprintf("Item with id '%s' not found. Items are not persisted when `store` is set to false.", it.ID)
			}
		case "function_call":
			if it.CallID == "" {
				return http.StatusBadRequest, "invalid_request_error", fmt.Sprintf("Missing required parameter: 'input[%d].call_id'.", i)
			}
			if _, dup := calls[it.CallID]; dup {
				return http.StatusBadRequest, "invalid_request_error", fmt.Sprintf("Duplicate value for 'input[%d].call_id': %s is the call_id of an earlier function_call.", i, it.CallID)
			}
			order = append(order, it.CallID)
			calls[it.CallID] = false
		case "function_call_output":
			if _, ok := calls[it.CallID]; !ok {
				return http.StatusBadRequest, "invalid_request_error", fmt.Sprintf("No tool call found for function call output with call_id %s.", it.CallID)
			}
			calls[it.CallID] = true
			if len(it.Output) > 0 && it.Output[0] == '[' {
				var parts []respPart
				if err := json.Unmarshal(it.Output, &parts); err != nil {
					return http.StatusBadRequest, "invalid_request_error", fmt.Sprintf("Invalid 'input[%d].output': %s", i, err)
				}
				for j, p := range parts {
					if !slices.Contains([]string{"input_text", "input_image", "input_file"}, p.Type) {
						return http.StatusBadRequest, "invalid_request_error", fmt.Sprintf("Invalid value: '%s'. (input[%d].output[%d].type)", p.Type, i, j)
					}
				}
			}
		}
	}
	for _, id := range order {
		if !calls[id] {
			return http.StatusBadRequest, "invalid_request_error", fmt.Sprintf("No tool output found for function call %s.", id)
		}
	}
	return 0, "", ""
}

// respLastToolResult returns the text of the last function_call_output in the input.
func respLastToolResult(input json.RawMessage) string {
	var items []respItem
	if json.Unmarshal(input, &items) != nil {
		return ""
	}
	for _, it := range slices.Backward(items) {
		if it.Type != "function_call_output" {
			continue
		}
		var s string
		if json.Unmarshal(it.Output, &s) == nil {
			return s
		}
		var parts []respPart
		_ = json.Unmarshal(it.Output, &parts)
		var texts []string
		for _, p := range parts {
			if p.Type == "input_text" {
				texts = append(texts, p.Text)
			}
		}
		return strings.Join(texts, "\n")
	}
	return ""
}

// respStream numbers events and writes them with an event: line naming their type.
type respStream struct {
	*stream
	seq   int
	chunk int
}

func (s *respStream) send(typ string, fields map[string]any) {
	fields["type"] = typ
	fields["sequence_number"] = s.seq
	s.seq++
	s.event(typ, fields)
}

// respObfuscation pads a delta's size the way the live API's obfuscation field does.
func respObfuscation(delta string) string {
	const pad = "o6siFnnjPfOpqXw3"
	return pad[:len(pad)-len(delta)%len(pad)]
}

// serveResponses renders t as a responses stream, after checking the request as the API does.
func serveResponses(ctx context.Context, w http.ResponseWriter, body []byte, t Turn) {
	var req respRequest
	if err := json.Unmarshal(body, &req); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "We could not parse the JSON body of your request. ("+err.Error()+")", Turn{})
		return
	}
	if status, typ, msg := respValidate(req); status != 0 {
		writeError(w, status, typ, msg, Turn{})
		return
	}
	sum := sha256.Sum256(body)
	base := hex.EncodeToString(sum[:10])
	respID := "resp_" + base
	encrypted := slices.Contains(req.Include, "reasoning.encrypted_content")
	store := req.Store == nil || *req.Store

	s := &respStream{stream: newStream(ctx, w, t), chunk: t.ChunkSize}
	s.comment("keep-alive")
	created := time.Now().Unix()
	resp := func(status string, output []any, extra map[string]any) map[string]any {
		r := map[string]any{
			"id": respID, "object": "response", "created_at": created, "status": status,
			"model": req.Model, "output": output, "usage": nil, "store": store,
			"error": nil, "incomplete_details": nil,
		}
		for k, v := range extra {
			r[k] = v
		}
		return r
	}
	s.send("response.created", map[string]any{"response": resp("in_progress", []any{}, nil)})
	s.send("response.in_progress", map[string]any{"response": resp("in_progress", []any{}, nil)})

	text := answerText(t, respLastToolResult(req.Input))
	hasMessage := text != "" || (t.Thinking == "" && len(t.ToolCalls) == 0)
	nitems := len(t.ToolCalls)
	if t.Thinking != "" {
		nitems++
	}
	if hasMessage {
		nitems++
	}
	cut := t.Stop == "max_tokens" // the last item is cut off by the output cap
	var output []any
	k := 0
	last := func() bool { return cut && k == nitems-1 }

	if t.Thinking != "" {
		if item, ok := s.reasoning(k, "rs_"+base, t.Thinking, encrypted, last()); ok {
			output = append(output, item)
		}
		k++
	}
	if hasMessage {
		output = append(output, s.message(k, "msg_"+base, text, last()))
		k++
	}
	for i, c := range t.ToolCalls {
		if item, ok := s.functionCall(k, fmt.Sprintf("fc_%s_%d", base, i), callID(c, "call_", i), c, last()); ok {
			output = append(output, item)
		}
		k++
	}
	if output == nil {
		output = []any{}
	}

	switch {
	case t.Drop || t.Stall:
		s.cut()
	case t.MidStreamError != "":
		msg := t.ErrorMessage
		if msg == "" {
			msg = "The server had an error while processing your request."
		}
		s.send("error", map[string]any{"error": map[string]any{"type": t.MidStreamError, "code": t.MidStreamError, "message": msg, "param": nil}})
		s.send("response.failed", map[string]any{"response": resp("failed", []any{}, map[string]any{
			"error": map[string]any{"code": t.MidStreamError, "message": msg},
		})})
	case cut || t.Stop == "refusal":
		reason := "max_output_tokens"
		if !cut {
			reason = "content_filter"
		}
		s.send("response.incomplete", map[string]any{"response": resp("incomplete", output, map[string]any{
			"incomplete_details": map[string]any{"reason": reason}, "usage": respUsage(t.Usage),
		})})
	default:
		s.send("response.completed", map[string]any{"response": resp("completed", output, map[string]any{
			"usage": respUsage(t.Usage),
		})})
	}
}

func respUsage(u Usage) map[string]any {
	return map[string]any{
		"input_tokens":          u.Input + u.CacheRead,
		"input_tokens_details":  map[string]any{"cached_tokens": u.CacheRead},
		"output_tokens":         u.Output,
		"output_tokens_details": map[string]any{"reasoning_tokens": u.Reasoning},
		"total_tokens":          u.Input + u.CacheRead + u.Output,
	}
}

// reasoning streams a reasoning item whose summary parts are the paragraphs of thinking.
// The added copy carries a partial blob, as the live API's does; a cut item never finishes.
func (s *respStream) reasoning(k int, id, thinking string, encrypted, cut bool) (map[string]any, bool) {
	full := respSeal(id, thinking)
	added := map[string]any{"id": id, "type": "reasoning", "summary": []any{}}
	if encrypted {
		added["encrypted_content"] = full[:len(full)/2]
	}
	s.send("response.output_item.added", map[string]any{"output_index": k, "item": added})
	var summary []any
	for i, para := range strings.Split(thinking, "\n\n") {
		s.send("response.reasoning_summary_part.added", map[string]any{
			"item_id": id, "output_index": k, "summary_index": i,
			"part": map[string]any{"type": "summary_text", "text": ""},
		})
		for _, d := range chunks(para, s.chunk) {
			s.send("response.reasoning_summary_text.delta", map[string]any{
				"item_id": id, "output_index": k, "summary_index": i, "delta": d, "obfuscation": respObfuscation(d),
			})
			s.pause()
		}
		if cut {
			return nil, false
		}
		s.send("response.reasoning_summary_text.done", map[string]any{"item_id": id, "output_index": k, "summary_index": i, "text": para})
		part := map[string]any{"type": "summary_text", "text": para}
		s.send("response.reasoning_summary_part.done", map[string]any{"item_id": id, "output_index": k, "summary_index": i, "part": part})
		summary = append(summary, part)
	}
	done := map[string]any{"id": id, "type": "reasoning", "summary": summary}
	if encrypted {
		done["encrypted_content"] = full
	}
	s.send("response.output_item.done", map[string]any{"output_index": k, "item": done})
	return done, true
}

// message streams an assistant message item; a cut one ends with status incomplete.
func (s *respStream) message(k int, id, text string, cut bool) map[string]any {
	s.send("response.output_item.added", map[string]any{"output_index": k, "item": map[string]any{
		"id": id, "type": "message", "status": "in_progress", "content": []any{}, "role": "assistant",
	}})
	s.send("response.content_part.added", map[string]any{
		"item_id": id, "output_index": k, "content_index": 0,
		"part": map[string]any{"type": "output_text", "annotations": []any{}, "logprobs": []any{}, "text": ""},
	})
	for _, d := range chunks(text, s.chunk) {
		s.send("response.output_text.delta", map[string]any{
			"item_id": id, "output_index": k, "content_index": 0, "delta": d, "logprobs": []any{}, "obfuscation": respObfuscation(d),
		})
		s.pause()
	}
	part := map[string]any{"type": "output_text", "annotations": []any{}, "logprobs": []any{}, "text": text}
	s.send("response.output_text.done", map[string]any{"item_id": id, "output_index": k, "content_index": 0, "text": text, "logprobs": []any{}})
	s.send("response.content_part.done", map[string]any{"item_id": id, "output_index": k, "content_index": 0, "part": part})
	status := "completed"
	if cut {
		status = "incomplete"
	}
	item := map[string]any{"id": id, "type": "message", "status": status, "content": []any{part}, "role": "assistant"}
	s.send("response.output_item.done", map[string]any{"output_index": k, "item": item})
	return item
}

// functionCall streams a function_call item. A cut call stops halfway through its
// arguments and never reaches done, so it is not part of the response's output.
func (s *respStream) functionCall(k int, id, callID string, c ToolCall, cut bool) (map[string]any, bool) {
	s.send("response.output_item.added", map[string]any{"output_index": k, "item": map[string]any{
		"id": id, "type": "function_call", "status": "in_progress", "arguments": "", "call_id": callID, "name": c.Name,
	}})
	frags := chunks(c.Args, s.chunk)
	if cut {
		frags = frags[:len(frags)/2]
	}
	for _, d := range frags {
		s.send("response.function_call_arguments.delta", map[string]any{
			"item_id": id, "output_index": k, "delta": d, "obfuscation": respObfuscation(d),
		})
		s.pause()
	}
	if cut {
		return nil, false
	}
	s.send("response.function_call_arguments.done", map[string]any{"item_id": id, "output_index": k, "arguments": c.Args})
	item := map[string]any{"id": id, "type": "function_call", "status": "completed", "arguments": c.Args, "call_id": callID, "name": c.Name}
	s.send("response.output_item.done", map[string]any{"output_index": k, "item": item})
	return item, true
}
