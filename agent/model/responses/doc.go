// Package responses implements the openai-responses wire protocol (POST {base}/responses
// with "stream": true), as spoken by OpenAI, xAI and OpenRouter. [Protocol] encodes a
// neutral [model.Request] as a stateless request (store:false): every earlier turn is
// replayed as input items, with reasoning items carried by their encrypted_content. It
// decodes the event stream into [model.Chunk] values, taking each output item from its
// response.output_item.done event, which is the authoritative copy.
//
// It imports only the standard library and agent/model.
package responses
