package providers

import "github.com/modelgate/modelgate/internal/jsonfast"

// Usage conversions between the two families (docs/wire-formats.md §5.4) and the
// provider-neutral ledger Usage.

func deref(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

// usageFromAnthropic reads an Anthropic usage object. Cache writes are
// split by TTL when the upstream says how; otherwise all count as 5m, the
// default TTL.
func usageFromAnthropic(u *AnthropicUsage) Usage {
	out := Usage{
		InputTokens:     deref(u.InputTokens),
		CacheReadTokens: deref(u.CacheReadInputTokens),
		OutputTokens:    u.OutputTokens,
		ServiceTier:     u.ServiceTier,
		Seen:            true,
	}
	if u.CacheCreation != nil {
		out.CacheCreation5m = u.CacheCreation.Ephemeral5m
		out.CacheCreation1h = u.CacheCreation.Ephemeral1h
	} else {
		out.CacheCreation5m = deref(u.CacheCreationInputTokens)
	}
	if u.ServerToolUse != nil {
		out.WebSearches = u.ServerToolUse.WebSearchRequests
	}
	return out
}

// usageFromOpenAI reads an OpenAI usage object. prompt_tokens includes
// cached reads and, where a server reports them, cache writes; the ledger
// wants them apart.
func usageFromOpenAI(u *OpenAIUsage) Usage {
	out := Usage{OutputTokens: u.CompletionTokens, Seen: true}
	in := u.PromptTokens
	if d := u.PromptTokensDetails; d != nil {
		out.CacheReadTokens = d.CachedTokens
		out.CacheCreation5m = d.CacheWriteTokens
		in -= d.CachedTokens + d.CacheWriteTokens
	}
	out.InputTokens = max(in, 0)
	return out
}

// appendOpenAIUsage appends an OpenAI usage object for u.
func appendOpenAIUsage(dst []byte, u Usage) []byte {
	prompt := u.TotalInput()
	dst = append(dst, `{"prompt_tokens":`...)
	dst = jsonfast.AppendInt(dst, prompt)
	dst = append(dst, `,"completion_tokens":`...)
	dst = jsonfast.AppendInt(dst, u.OutputTokens)
	dst = append(dst, `,"total_tokens":`...)
	dst = jsonfast.AppendInt(dst, prompt+u.OutputTokens)
	dst = append(dst, `,"prompt_tokens_details":{"cached_tokens":`...)
	dst = jsonfast.AppendInt(dst, u.CacheReadTokens)
	return append(dst, `}}`...)
}

// appendAnthropicUsage appends an Anthropic usage object for u, with the
// TTL split that newer clients read.
func appendAnthropicUsage(dst []byte, u Usage) []byte {
	dst = append(dst, `{"input_tokens":`...)
	dst = jsonfast.AppendInt(dst, u.InputTokens)
	dst = append(dst, `,"cache_creation_input_tokens":`...)
	dst = jsonfast.AppendInt(dst, u.CacheCreation())
	dst = append(dst, `,"cache_read_input_tokens":`...)
	dst = jsonfast.AppendInt(dst, u.CacheReadTokens)
	dst = append(dst, `,"cache_creation":{"ephemeral_5m_input_tokens":`...)
	dst = jsonfast.AppendInt(dst, u.CacheCreation5m)
	dst = append(dst, `,"ephemeral_1h_input_tokens":`...)
	dst = jsonfast.AppendInt(dst, u.CacheCreation1h)
	dst = append(dst, `},"output_tokens":`...)
	dst = jsonfast.AppendInt(dst, u.OutputTokens)
	return append(dst, '}')
}

// finishFromStop maps an Anthropic stop_reason to an OpenAI finish_reason
// (docs/wire-formats.md §5.3).
func finishFromStop(stop string) string {
	switch stop {
	case "max_tokens", "model_context_window_exceeded":
		return "length"
	case "tool_use":
		return "tool_calls"
	case "refusal":
		return "content_filter"
	}
	return "stop"
}

// stopFromFinish maps an OpenAI finish_reason to an Anthropic stop_reason.
func stopFromFinish(finish string) string {
	switch finish {
	case "length":
		return "max_tokens"
	case "tool_calls", "function_call":
		return "tool_use"
	case "content_filter":
		return "refusal"
	}
	return "end_turn"
}
