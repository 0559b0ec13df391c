package providers

import (
	"encoding/json"
	"time"
)

// hubAnswer is a whole chat completion as the hub reads it: the
// non-standard reasoning fields of local servers included.
type hubAnswer struct {
	Choices []struct {
		Message struct {
			Content          *string          `json:"content"`
			Refusal          *string          `json:"refusal"`
			Reasoning        string           `json:"reasoning"`
			ReasoningContent string           `json:"reasoning_content"`
			ToolCalls        []OpenAIToolCall `json:"tool_calls"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage       *chatUsage `json:"usage"`
	ServiceTier string     `json:"service_tier"`
}

// chatToResponses turns a chat completion into the Response: items in the
// order reasoning, message, calls (responses-api.md §6.2).
func (t *ResponsesTurn) chatToResponses(chat []byte) ([]byte, error) {
	var a hubAnswer
	if err := json.Unmarshal(chat, &a); err != nil {
		return nil, err
	}
	if len(a.Choices) == 0 {
		return nil, constError("the answer holds no choice")
	}
	c := a.Choices[0]
	var items []*outputItem
	if r := c.Message.ReasoningContent + c.Message.Reasoning; r != "" {
		it := newOutputItem("reasoning")
		it.summary = t.summaryWanted()
		it.text.WriteString(r)
		items = append(items, it)
	}
	if c.Message.Content != nil && *c.Message.Content != "" {
		it := newOutputItem("message")
		it.text.WriteString(*c.Message.Content)
		items = append(items, it)
	}
	if c.Message.Refusal != nil && *c.Message.Refusal != "" {
		it := newOutputItem("message")
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
	body, err := json.Marshal(&o)
	if err != nil {
		return nil, err
	}
	t.finalize(status, output, body)
	return body, nil
}
