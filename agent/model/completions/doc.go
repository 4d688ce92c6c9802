// Package completions implements the openai-completions wire protocol (POST
// {base}/chat/completions with "stream": true), as spoken by OpenAI, DeepSeek, Groq,
// OpenRouter, llama.cpp, Ollama, vLLM and LM Studio. [Protocol] encodes a neutral
// [model.Request] and decodes the data-only SSE stream, smoothing over the servers'
// differences: both reasoning field names, inline <think> tags, whole or fragmented tool
// calls, and usage on either the last chunk or the finish chunk.
//
// It imports only the standard library and agent/model.
package completions
