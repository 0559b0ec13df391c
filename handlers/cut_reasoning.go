package handlers

import (
	"bytes"
	"strings"

	"github.com/modelgate/modelgate/modellist"
)

// mayReason reports whether a request to model may have made its
// upstream work unseen before its first output (hidden reasoning the
// provider bills): a model of a reasoning family, or a request that asks
// for reasoning (OpenAI's reasoning_effort or reasoning, Anthropic's
// thinking, Gemini's thinkingConfig). A stalled upstream of any other
// model did no work its client did not see: its silence before the
// first output is not charged. Read only when a client cut a stream, so
// its scan of the body costs other requests nothing.
func mayReason(info modellist.ModelInfo, model string, body []byte) bool {
	if info.SupportsReasoning != nil {
		// The operator said: a model that does not reason by default
		// still does when the request asks.
		return *info.SupportsReasoning || asksToReason(body)
	}
	name := strings.ToLower(model)
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	if strings.Contains(name, "thinking") || strings.Contains(name, "reason") {
		return true
	}
	// Upstream model names (after any provider path) of models that
	// reason unseen by default, without the request asking: OpenAI's
	// o-series, GPT-5 and Codex, Gemini 2.5 and later, DeepSeek's, Qwen's,
	// Mistral's and xAI's reasoners.
	for _, f := range [...]string{"o1", "o3", "o4", "gpt-5", "codex", "gemini-2.5", "gemini-3", "deepseek-r1", "deepseek-reasoner", "qwq", "magistral", "grok-4", "grok-3-mini"} {
		if name == f || strings.HasPrefix(name, f+"-") || strings.HasPrefix(name, f+".") || strings.HasPrefix(name, f+"@") {
			return true
		}
	}
	return asksToReason(body)
}

// asksToReason: the request body names a reasoning setting.
func asksToReason(body []byte) bool {
	for _, k := range [...]string{`"reasoning_effort"`, `"reasoning"`, `"thinking"`, `"thinkingConfig"`, `"thinking_config"`} {
		if bytes.Contains(body, []byte(k)) {
			return true
		}
	}
	return false
}
