package providers

import (
	"encoding/json"
	"time"
)

// chatToResponses turns a chat completion into the Response: items in the
// order reasoning, message, calls (docs/wire-formats.md §7).
func (t *ResponsesTurn) chatToResponses(chat []byte) ([]byte, error) {
	out, _, err := t.chatToResponsesUsage(chat)
	return out, err
}

// chatToResponsesUsage is chatToResponses that also reads the ledger usage.
func (t *ResponsesTurn) chatToResponsesUsage(chat []byte) ([]byte, Usage, error) {
	var a chatAnswer
	if !readChatAnswer(chat, &a) {
		a = chatAnswer{}
		if err := json.Unmarshal(chat, &a); err != nil {
			return nil, Usage{}, err
		}
	}
	if len(a.Choices) == 0 {
		return nil, Usage{}, constError("the answer holds no choice")
	}
	t.Answered = a.Model
	c := &a.Choices[0]
	var items []*outputItem
	if r := c.Message.reasoning(); r != "" {
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
