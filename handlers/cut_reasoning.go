package handlers

import (
	"bytes"
	"strings"
)

// reasoningFamilies are upstream model names (a prefix after any
// provider path, or a part of the name) of models that reason unseen
// before their first output by default, without the request asking:
// OpenAI's o-series and GPT-5, Gemini 2.5 and later, DeepSeek's and
// Qwen's reasoners, and any model whose name says thinking or
// reasoning.
var reasoningFamilies = [...]string{"o1", "o3", "o4", "gpt-5", "codex", "gemini-2.5", "gemini-3", "deepseek-r1", "deepseek-reasoner", "qwq", "magistral", "grok-4", "grok-3-mini"}

// mayReason reports whether a request to model may have made its
// upstream work unseen before its first output (hidden reasoning the
// provider bills): a model of a reasoning family, or a request that asks
// for reasoning (OpenAI's reasoning_effort or reasoning, Anthropic's
// thinking, Gemini's thinkingConfig). A stalled upstream of any other
// model did no work its client did not see: its silence before the
// first output is not charged. Read only when a client cut a stream, so
// its scan of the body costs other requests nothing.
func mayReason(model string, body []byte) bool {
	name := strings.ToLower(model)
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	if strings.Contains(name, "thinking") || strings.Contains(name, "reason") {
		return true
	}
	for _, f := range reasoningFamilies {
		if name == f || strings.HasPrefix(name, f+"-") || strings.HasPrefix(name, f+".") || strings.HasPrefix(name, f+"@") {
			return true
		}
	}
	for _, k := range [...]string{`"reasoning_effort"`, `"reasoning"`, `"thinking"`, `"thinkingConfig"`, `"thinking_config"`} {
		if bytes.Contains(body, []byte(k)) {
			return true
		}
	}
	return false
}
