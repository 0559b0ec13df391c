package providers

import (
	"encoding/json"
	"time"
)

// hubAnswer is a whole chat completion as the hub reads it: the
// non-standard reasoning fields of local servers included.
type hubAnswer struct {
	Choices     []hubChoice `json:"choices"`
	Usage       *chatUsage  `json:"usage"`
	ServiceTier string      `json:"service_tier"`
}

type hubChoice struct {
	Message      hubAnswerMessage `json:"message"`
	FinishReason string           `json:"finish_reason"`
}

type hubAnswerMessage struct {
	Content          *string          `json:"content"`
	Refusal          *string          `json:"refusal"`
	Reasoning        string           `json:"reasoning"`
	ReasoningContent string           `json:"reasoning_content"`
	ToolCalls        []OpenAIToolCall `json:"tool_calls"`
}

// readHubAnswer is the fast path for hubAnswer: one walk after
// json.Valid, or false to leave the body to json.Unmarshal.
func readHubAnswer(raw []byte, a *hubAnswer) bool {
	if !validJSON(raw) {
		return false
	}
	r := newFastReader(raw)
	var m uint32
	r.object(skipSpace(raw, 0), func(k []byte, i int) int {
		switch string(k) {
		case "choices":
			r.seen(&m, 1)
			if r.isNull(i) {
				a.Choices = nil
				return i + len("null")
			}
			a.Choices = []hubChoice{}
			return r.array(i, func(j int) int {
				a.Choices = append(a.Choices, hubChoice{})
				c := &a.Choices[len(a.Choices)-1]
				var cm uint32
				return r.object(j, func(k []byte, j int) int {
					switch string(k) {
					case "message":
						r.seen(&cm, 1)
						return r.hubMessage(j, &c.Message)
					case "finish_reason":
						r.seen(&cm, 2)
						return r.str(j, &c.FinishReason)
					}
					return r.unknown(j, k, "message", "finish_reason")
				})
			})
		case "usage":
			r.seen(&m, 2)
			return r.chatUsage(i, &a.Usage)
		case "service_tier":
			r.seen(&m, 4)
			return r.str(i, &a.ServiceTier)
		}
		return r.unknown(i, k, "choices", "usage", "service_tier")
	})
	return r.ok
}

func (r *fastReader) hubMessage(i int, m *hubAnswerMessage) int {
	if r.isNull(i) {
		return i + len("null")
	}
	var mask uint32
	return r.object(i, func(k []byte, j int) int {
		switch string(k) {
		case "content":
			r.seen(&mask, 1)
			return r.strPtr(j, &m.Content)
		case "refusal":
			r.seen(&mask, 2)
			return r.strPtr(j, &m.Refusal)
		case "reasoning":
			r.seen(&mask, 4)
			return r.str(j, &m.Reasoning)
		case "reasoning_content":
			r.seen(&mask, 8)
			return r.str(j, &m.ReasoningContent)
		case "tool_calls":
			r.seen(&mask, 16)
			if r.isNull(j) {
				m.ToolCalls = nil
				return j + len("null")
			}
			m.ToolCalls = []OpenAIToolCall{}
			return r.array(j, func(j int) int {
				m.ToolCalls = append(m.ToolCalls, OpenAIToolCall{})
				return r.toolCall(j, &m.ToolCalls[len(m.ToolCalls)-1])
			})
		}
		return r.unknown(j, k, "content", "refusal", "reasoning", "reasoning_content", "tool_calls")
	})
}

func (r *fastReader) chatUsage(i int, dst **chatUsage) int {
	if r.isNull(i) {
		*dst = nil
		return i + len("null")
	}
	u := &chatUsage{}
	*dst = u
	var mask uint32
	count := func(j int, n *int64) int {
		var p *int64
		end := r.intPtr(j, &p)
		if p != nil {
			*n = *p
		}
		return end
	}
	return r.object(i, func(k []byte, j int) int {
		switch string(k) {
		case "prompt_tokens":
			r.seen(&mask, 1)
			return count(j, &u.PromptTokens)
		case "completion_tokens":
			r.seen(&mask, 2)
			return count(j, &u.CompletionTokens)
		case "total_tokens":
			r.seen(&mask, 4)
			return count(j, &u.TotalTokens)
		case "prompt_tokens_details":
			r.seen(&mask, 8)
			if r.isNull(j) {
				u.PromptTokensDetails = nil
				return j + len("null")
			}
			u.PromptTokensDetails = &struct {
				CachedTokens     int64 `json:"cached_tokens"`
				CacheWriteTokens int64 `json:"cache_write_tokens"`
			}{}
			var dm uint32
			return r.object(j, func(k []byte, j int) int {
				switch string(k) {
				case "cached_tokens":
					r.seen(&dm, 1)
					return count(j, &u.PromptTokensDetails.CachedTokens)
				case "cache_write_tokens":
					r.seen(&dm, 2)
					return count(j, &u.PromptTokensDetails.CacheWriteTokens)
				}
				return r.unknown(j, k, "cached_tokens", "cache_write_tokens")
			})
		case "completion_tokens_details":
			r.seen(&mask, 16)
			if r.isNull(j) {
				u.CompletionTokensDetails = nil
				return j + len("null")
			}
			u.CompletionTokensDetails = &struct {
				ReasoningTokens int64 `json:"reasoning_tokens"`
			}{}
			var dm uint32
			return r.object(j, func(k []byte, j int) int {
				if string(k) == "reasoning_tokens" {
					r.seen(&dm, 1)
					return count(j, &u.CompletionTokensDetails.ReasoningTokens)
				}
				return r.unknown(j, k, "reasoning_tokens")
			})
		}
		return r.unknown(j, k, "prompt_tokens", "completion_tokens", "total_tokens", "prompt_tokens_details", "completion_tokens_details")
	})
}

// ledgerUsage is the answer's usage in the ledger's terms, as the chat
// pass-through reads it.
func (a *hubAnswer) ledgerUsage() Usage {
	if a.Usage == nil {
		return Usage{ServiceTier: a.ServiceTier}
	}
	ou := OpenAIUsage{PromptTokens: a.Usage.PromptTokens, CompletionTokens: a.Usage.CompletionTokens, TotalTokens: a.Usage.TotalTokens}
	if d := a.Usage.PromptTokensDetails; d != nil {
		ou.PromptTokensDetails = &OpenAIPromptTokenDetails{CachedTokens: d.CachedTokens, CacheWriteTokens: d.CacheWriteTokens}
	}
	u := usageFromOpenAI(&ou)
	u.ServiceTier = a.ServiceTier
	return u
}

// chatToResponses turns a chat completion into the Response: items in the
// order reasoning, message, calls (responses-api.md §6.2).
func (t *ResponsesTurn) chatToResponses(chat []byte) ([]byte, error) {
	out, _, err := t.chatToResponsesUsage(chat)
	return out, err
}

// chatToResponsesUsage is chatToResponses that also reads the ledger usage.
func (t *ResponsesTurn) chatToResponsesUsage(chat []byte) ([]byte, Usage, error) {
	var a hubAnswer
	if !readHubAnswer(chat, &a) {
		a = hubAnswer{}
		if err := json.Unmarshal(chat, &a); err != nil {
			return nil, Usage{}, err
		}
	}
	if len(a.Choices) == 0 {
		return nil, Usage{}, constError("the answer holds no choice")
	}
	c := a.Choices[0]
	var items []*outputItem
	if r := c.Message.ReasoningContent + c.Message.Reasoning; r != "" {
		it := t.newOutputItem("reasoning")
		it.summary = t.summaryWanted()
		it.text.WriteString(r)
		items = append(items, it)
	}
	if c.Message.Content != nil && *c.Message.Content != "" {
		it := t.newOutputItem("message")
		it.text.WriteString(*c.Message.Content)
		items = append(items, it)
	}
	if c.Message.Refusal != nil && *c.Message.Refusal != "" {
		it := t.newOutputItem("message")
		it.refusal = !t.RefusalAsText
		it.text.WriteString(*c.Message.Refusal)
		items = append(items, it)
	}
	for _, tc := range c.Message.ToolCalls {
		it := t.toolCallItem(tc.ID, tc.Function.Name)
		args := tc.Function.Arguments
		if it.kind == "custom_tool_call" {
			args = customInput(args)
		}
		it.text.WriteString(args)
		items = append(items, it)
	}
	output := make([]json.RawMessage, len(items))
	for i, it := range items {
		output[i] = it.appendJSON(nil, true)
	}
	status, incomplete := finishStatus(c.FinishReason)
	usage := a.Usage.responses()
	o := t.object(status, output, &usage)
	o.IncompleteDetails = incomplete
	now := time.Now().Unix()
	o.CompletedAt = &now
	if a.ServiceTier != "" {
		o.ServiceTier = a.ServiceTier
	}
	body := appendResponseObject(make([]byte, 0, len(chat)+t.size+1024), &o)
	t.finalize(status, output, body)
	return body, a.ledgerUsage(), nil
}
