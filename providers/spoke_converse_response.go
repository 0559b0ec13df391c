package providers

import (
	"encoding/json"
	"time"
)

// converseSpoke is the Bedrock Converse client format on the hub: the
// turn parsed from the request (RequestInfo.Turn) is written as chat, and
// answers come back as Converse's output and ConverseStream's events.
type converseSpoke struct{}

func (converseSpoke) toChat(_ []byte, info RequestInfo, model string, o chatOptions) ([]byte, error) {
	return info.converse().toChat(model, info.Stream, o)
}

func (converseSpoke) fromChat(chat []byte, info RequestInfo) ([]byte, Usage, error) {
	if !looksLikeObject(chat) {
		return nil, Usage{}, ErrNotJSONObject
	}
	var a chatAnswer
	if err := readChatChunk(chat, &a); err != nil {
		return nil, Usage{}, err
	}
	usage := a.ledgerUsage()
	var blocks []converseOutBlock
	finish := ""
	if len(a.Choices) > 0 {
		ch := &a.Choices[0]
		m := &ch.Message
		finish = ch.FinishReason
		if r := m.reasoning(); r != "" {
			blocks = append(blocks, converseOutBlock{ReasoningContent: &converseOutReasoning{ReasoningText: &converseReasoningText{Text: r}}})
		}
		if text := derefString(m.Content) + derefString(m.Refusal); text != "" {
			blocks = append(blocks, converseOutBlock{Text: &text})
		}
		if derefString(m.Refusal) != "" {
			finish = "content_filter"
		}
		for _, tc := range m.ToolCalls {
			id := tc.ID
			if id == "" {
				id = newCallID()
			}
			blocks = append(blocks, converseOutBlock{ToolUse: &converseOutToolUse{ToolUseID: id, Name: tc.Function.Name, Input: toolInput(tc.Function.Arguments)}})
		}
	}
	out, err := info.converse().encode(blocks, converseStopFromChat(finish), usage)
	return out, usage, err
}

func (converseSpoke) fromAnthropic(raw []byte, info RequestInfo) ([]byte, Usage, error) {
	if !looksLikeObject(raw) {
		return nil, Usage{}, ErrNotJSONObject
	}
	var a AnthropicResponse
	if err := json.Unmarshal(raw, &a); err != nil {
		return nil, Usage{}, err
	}
	usage := usageFromAnthropic(&a.Usage)
	var blocks []converseOutBlock
	for i := range a.Content {
		b := &a.Content[i]
		switch b.Type {
		case "text":
			text := b.Text
			blocks = append(blocks, converseOutBlock{Text: &text})
		case "tool_use":
			blocks = append(blocks, converseOutBlock{ToolUse: &converseOutToolUse{ToolUseID: b.ID, Name: b.Name, Input: toolInput(string(b.Input))}})
		case "thinking":
			blocks = append(blocks, converseOutBlock{ReasoningContent: &converseOutReasoning{ReasoningText: &converseReasoningText{Text: b.Thinking, Signature: b.Signature}}})
		case "redacted_thinking":
			blocks = append(blocks, converseOutBlock{ReasoningContent: &converseOutReasoning{RedactedContent: b.Data}})
		}
	}
	out, err := info.converse().encode(blocks, converseStopFromAnthropic(derefString(a.StopReason)), usage)
	return out, usage, err
}

func (converseSpoke) newStream(_ string, info RequestInfo) StreamTranslator {
	return newConverseStream(info.converse())
}

// The Converse response, as the AWS API reference defines it.
type converseResponse struct {
	Output struct {
		Message converseOutMessage `json:"message"`
	} `json:"output"`
	StopReason string          `json:"stopReason"`
	Usage      converseUsage   `json:"usage"`
	Metrics    converseMetrics `json:"metrics"`
}

type converseOutMessage struct {
	Role    string             `json:"role"`
	Content []converseOutBlock `json:"content"`
}

type converseOutBlock struct {
	Text             *string               `json:"text,omitempty"`
	ToolUse          *converseOutToolUse   `json:"toolUse,omitempty"`
	ReasoningContent *converseOutReasoning `json:"reasoningContent,omitempty"`
}

type converseOutToolUse struct {
	ToolUseID string          `json:"toolUseId"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
}

type converseOutReasoning struct {
	ReasoningText   *converseReasoningText `json:"reasoningText,omitempty"`
	RedactedContent string                 `json:"redactedContent,omitempty"`
}

type converseReasoningText struct {
	Text      string `json:"text"`
	Signature string `json:"signature,omitempty"`
}

// converseUsage is TokenUsage: inputTokens without the cached tokens,
// which are counted apart (as Anthropic counts them).
type converseUsage struct {
	InputTokens           int64 `json:"inputTokens"`
	OutputTokens          int64 `json:"outputTokens"`
	TotalTokens           int64 `json:"totalTokens"`
	CacheReadInputTokens  int64 `json:"cacheReadInputTokens,omitempty"`
	CacheWriteInputTokens int64 `json:"cacheWriteInputTokens,omitempty"`
}

type converseMetrics struct {
	LatencyMs int64 `json:"latencyMs"`
}

func converseUsageOf(u Usage) converseUsage {
	c := converseUsage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens,
		CacheReadInputTokens: u.CacheReadTokens, CacheWriteInputTokens: u.CacheCreation5m + u.CacheCreation1h}
	c.TotalTokens = c.InputTokens + c.OutputTokens + c.CacheReadInputTokens + c.CacheWriteInputTokens
	return c
}

// latency is the time since the request was read, as metrics.latencyMs.
func (t *ConverseTurn) latency() converseMetrics {
	return converseMetrics{LatencyMs: time.Since(t.start).Milliseconds()}
}

// encode writes a whole Converse response.
func (t *ConverseTurn) encode(blocks []converseOutBlock, stop string, u Usage) ([]byte, error) {
	var r converseResponse
	r.Output.Message = converseOutMessage{Role: "assistant", Content: blocks}
	if r.Output.Message.Content == nil {
		r.Output.Message.Content = []converseOutBlock{}
	}
	r.StopReason, r.Usage, r.Metrics = stop, converseUsageOf(u), t.latency()
	return json.Marshal(r)
}

// converseStopFromChat is the stopReason for a chat finish_reason:
// Anthropic's word for it, but for a refusal.
func converseStopFromChat(finish string) string {
	return converseStopFromAnthropic(stopFromFinish(finish))
}

// converseStopFromAnthropic is the stopReason for an Anthropic
// stop_reason: the same words, but for a refusal.
func converseStopFromAnthropic(reason string) string {
	switch reason {
	case "max_tokens", "stop_sequence", "tool_use", "model_context_window_exceeded":
		return reason
	case "refusal":
		return "content_filtered"
	}
	return "end_turn"
}
