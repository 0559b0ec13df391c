package providers

import (
	"bytes"
	"encoding/json"
	"errors"
	"time"
)

// anthropicToResponses turns a whole Anthropic answer into the Response
// directly, not through chat, so thinking keeps its signatures: items in
// block order, thinking → reasoning (sealed in encrypted_content), text →
// message, tool_use → call (docs/wire-formats.md §7).
func (t *ResponsesTurn) anthropicToResponses(raw []byte) ([]byte, Usage, error) {
	var in AnthropicResponse
	if err := json.Unmarshal(raw, &in); err != nil {
		return nil, Usage{}, errors.New("upstream anthropic response: " + jsonErrText(err))
	}
	if in.Type != "" && in.Type != "message" {
		return nil, Usage{}, errors.New("upstream anthropic response has type " + in.Type)
	}
	t.Answered = in.Model
	u := usageFromAnthropic(&in.Usage)
	u.Seen = in.Usage.InputTokens != nil || in.Usage.OutputTokens != 0
	var items []*outputItem
	var reasoning, message *outputItem
	for i := range in.Content {
		b := &in.Content[i]
		switch b.Type {
		case "thinking", "redacted_thinking":
			if reasoning == nil {
				reasoning = t.newOutputItem("reasoning")
				reasoning.summary = t.summaryWanted()
				items = append(items, reasoning)
			}
			if b.Type == "thinking" {
				reasoning.think(b.Thinking)
				reasoning.sign(b.Signature)
			} else {
				reasoning.blocks = append(reasoning.blocks, AnthropicBlock{Type: "redacted_thinking", Data: b.Data})
			}
			message = nil
		case "text":
			if message == nil {
				message = t.newOutputItem("message")
				items = append(items, message)
			}
			message.text.WriteString(b.Text)
			reasoning = nil
		case "tool_use":
			args := "{}"
			if v := bytes.TrimSpace(b.Input); len(v) > 0 && !bytes.Equal(v, []byte("null")) {
				args = string(v)
			}
			it := t.toolCallItem(b.ID, b.Name)
			if it.kind == "custom_tool_call" {
				args = customInput(args)
			}
			it.text.WriteString(args)
			items = append(items, it)
			reasoning, message = nil, nil
		}
	}
	stop := ""
	if in.StopReason != nil {
		stop = *in.StopReason
	}
	if stop == "refusal" && message != nil {
		message.refusal = !t.RefusalAsText
	}
	status, incomplete := finishStatus(finishFromStop(stop))
	if stop == "refusal" {
		status, incomplete = "completed", nil
	}
	output := make([]json.RawMessage, len(items))
	for i, it := range items {
		output[i] = it.appendJSON(nil, true)
	}
	usage := responsesUsage{InputTokens: u.TotalInput(), OutputTokens: u.OutputTokens}
	usage.InputTokensDetails.CachedTokens = u.CacheReadTokens
	usage.TotalTokens = usage.InputTokens + usage.OutputTokens
	o := t.object(status, output, &usage)
	o.IncompleteDetails = incomplete
	now := time.Now().Unix()
	o.CompletedAt = &now
	body := appendResponseObject(nil, &o)
	t.finalize(status, output, body)
	return body, u, nil
}
