package providers

import (
	"encoding/json"

	"github.com/modelgate/modelgate/internal/jsonfast"
)

// chatAnswer is a chat completion, or one chunk of its stream, as the hub
// reads it: whole answers carry each choice's message, chunks its delta,
// both in the same shape (with the non-standard reasoning fields of local
// servers and the hub's own thinking deltas). One type and one reader
// serve both.
type chatAnswer struct {
	Choices     []chatChoice `json:"choices"`
	Usage       *chatUsage   `json:"usage"`
	ServiceTier string       `json:"service_tier"`
	// Model is the model the upstream says answered; the Responses and
	// Gemini spokes name it in their answers, as chat answers do.
	Model string `json:"model"`
}

type chatChoice struct {
	// Message is a whole answer's, Delta a chunk's.
	Message      chatDelta `json:"message"`
	Delta        chatDelta `json:"delta"`
	FinishReason string    `json:"finish_reason"`
}

// chatDelta is an assistant message, whole or in part.
type chatDelta struct {
	Content          *string `json:"content"`
	Refusal          *string `json:"refusal"`
	Reasoning        *string `json:"reasoning"`
	ReasoningContent *string `json:"reasoning_content"`
	// The hub's own deltas for Anthropic thinking (see
	// newAnthropicToHubStream).
	ReasoningSignature *string          `json:"reasoning_signature"`
	ReasoningRedacted  *string          `json:"reasoning_redacted"`
	ToolCalls          []OpenAIToolCall `json:"tool_calls"`
}

// reasoning is the message's reasoning text, under either name.
func (d *chatDelta) reasoning() string {
	return derefString(d.ReasoningContent) + derefString(d.Reasoning)
}

func derefString(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// readChatChunk reads raw into c, reusing c.Choices' storage: the fast
// reader, or encoding/json where it gives up.
func readChatChunk(raw []byte, c *chatAnswer) error {
	*c = chatAnswer{Choices: c.Choices[:0]}
	if readChatAnswer(raw, c) {
		return nil
	}
	*c = chatAnswer{}
	return json.Unmarshal(raw, c)
}

// readChatAnswer is the fast path for chatAnswer: one walk after
// json.Valid, or false to leave the body to json.Unmarshal. It reuses
// c.Choices' storage, so a stream reads its chunks into one value.
func readChatAnswer(raw []byte, c *chatAnswer) bool {
	if !jsonfast.Valid(raw) {
		return false
	}
	r := jsonfast.NewReader(raw)
	var m uint32
	r.Object(jsonfast.SkipSpace(raw, 0), func(k []byte, i int) int {
		switch string(k) {
		case "choices":
			r.Seen(&m, 1)
			if r.IsNull(i) {
				c.Choices = nil
				return i + len("null")
			}
			c.Choices = c.Choices[:0]
			if c.Choices == nil {
				c.Choices = []chatChoice{}
			}
			return r.Array(i, func(j int) int {
				c.Choices = append(c.Choices, chatChoice{})
				ch := &c.Choices[len(c.Choices)-1]
				var cm uint32
				return r.Object(j, func(k []byte, j int) int {
					switch string(k) {
					case "message":
						r.Seen(&cm, 1)
						return readChatDelta(&r, j, &ch.Message)
					case "delta":
						r.Seen(&cm, 2)
						return readChatDelta(&r, j, &ch.Delta)
					case "finish_reason":
						r.Seen(&cm, 4)
						return r.Str(j, &ch.FinishReason)
					}
					return r.Unknown(j, k, "message", "delta", "finish_reason")
				})
			})
		case "usage":
			r.Seen(&m, 2)
			return readChatUsage(&r, i, &c.Usage)
		case "service_tier":
			r.Seen(&m, 4)
			return r.Str(i, &c.ServiceTier)
		case "model":
			r.Seen(&m, 8)
			return r.Str(i, &c.Model)
		}
		return r.Unknown(i, k, "choices", "usage", "service_tier", "model")
	})
	return r.OK()
}

func readChatDelta(r *jsonfast.Reader, i int, d *chatDelta) int {
	if r.IsNull(i) {
		return i + len("null")
	}
	var mask uint32
	return r.Object(i, func(k []byte, j int) int {
		switch string(k) {
		case "content":
			r.Seen(&mask, 1)
			return r.StrPtr(j, &d.Content)
		case "refusal":
			r.Seen(&mask, 2)
			return r.StrPtr(j, &d.Refusal)
		case "reasoning":
			r.Seen(&mask, 4)
			return r.StrPtr(j, &d.Reasoning)
		case "reasoning_content":
			r.Seen(&mask, 8)
			return r.StrPtr(j, &d.ReasoningContent)
		case "reasoning_signature":
			r.Seen(&mask, 16)
			return r.StrPtr(j, &d.ReasoningSignature)
		case "reasoning_redacted":
			r.Seen(&mask, 32)
			return r.StrPtr(j, &d.ReasoningRedacted)
		case "tool_calls":
			r.Seen(&mask, 64)
			if r.IsNull(j) {
				d.ToolCalls = nil
				return j + len("null")
			}
			d.ToolCalls = []OpenAIToolCall{}
			return r.Array(j, func(j int) int {
				d.ToolCalls = append(d.ToolCalls, OpenAIToolCall{})
				return readOpenAIToolCall(r, j, &d.ToolCalls[len(d.ToolCalls)-1])
			})
		}
		return r.Unknown(j, k, "content", "refusal", "reasoning", "reasoning_content", "reasoning_signature", "reasoning_redacted", "tool_calls")
	})
}

func readChatUsage(r *jsonfast.Reader, i int, dst **chatUsage) int {
	if r.IsNull(i) {
		*dst = nil
		return i + len("null")
	}
	u := &chatUsage{}
	*dst = u
	var mask uint32
	return r.Object(i, func(k []byte, j int) int {
		switch string(k) {
		case "prompt_tokens":
			r.Seen(&mask, 1)
			return r.Int(j, &u.PromptTokens)
		case "completion_tokens":
			r.Seen(&mask, 2)
			return r.Int(j, &u.CompletionTokens)
		case "total_tokens":
			r.Seen(&mask, 4)
			return r.Int(j, &u.TotalTokens)
		case "prompt_tokens_details":
			r.Seen(&mask, 8)
			if r.IsNull(j) {
				u.PromptTokensDetails = nil
				return j + len("null")
			}
			u.PromptTokensDetails = &struct {
				CachedTokens     int64 `json:"cached_tokens"`
				CacheWriteTokens int64 `json:"cache_write_tokens"`
			}{}
			var dm uint32
			return r.Object(j, func(k []byte, j int) int {
				switch string(k) {
				case "cached_tokens":
					r.Seen(&dm, 1)
					return r.Int(j, &u.PromptTokensDetails.CachedTokens)
				case "cache_write_tokens":
					r.Seen(&dm, 2)
					return r.Int(j, &u.PromptTokensDetails.CacheWriteTokens)
				}
				return r.Unknown(j, k, "cached_tokens", "cache_write_tokens")
			})
		case "completion_tokens_details":
			r.Seen(&mask, 16)
			if r.IsNull(j) {
				u.CompletionTokensDetails = nil
				return j + len("null")
			}
			u.CompletionTokensDetails = &struct {
				ReasoningTokens int64 `json:"reasoning_tokens"`
			}{}
			var dm uint32
			return r.Object(j, func(k []byte, j int) int {
				if string(k) == "reasoning_tokens" {
					r.Seen(&dm, 1)
					return r.Int(j, &u.CompletionTokensDetails.ReasoningTokens)
				}
				return r.Unknown(j, k, "reasoning_tokens")
			})
		}
		return r.Unknown(j, k, "prompt_tokens", "completion_tokens", "total_tokens", "prompt_tokens_details", "completion_tokens_details")
	})
}

// ledgerUsage is the answer's usage in the ledger's terms, as the chat
// pass-through reads it.
func (a *chatAnswer) ledgerUsage() Usage {
	if a.Usage == nil {
		return Usage{ServiceTier: a.ServiceTier}
	}
	ou := a.Usage.openAI()
	u := usageFromOpenAI(&ou)
	u.ServiceTier = a.ServiceTier
	return u
}

// openAI is u as the pass-through's OpenAIUsage, for usageFromOpenAI.
func (u *chatUsage) openAI() OpenAIUsage {
	ou := OpenAIUsage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, TotalTokens: u.TotalTokens}
	if d := u.PromptTokensDetails; d != nil {
		ou.PromptTokensDetails = &OpenAIPromptTokenDetails{CachedTokens: d.CachedTokens, CacheWriteTokens: d.CacheWriteTokens}
	}
	return ou
}
