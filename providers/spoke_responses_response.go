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
	var a chatAnswer // on the stack: encoding/json gets its own value
	if !readChatAnswer(chat, &a) {
		slow := new(chatAnswer)
		if err := json.Unmarshal(chat, slow); err != nil {
			return nil, Usage{}, err
		}
		a = *slow
	}
	if len(a.Choices) == 0 {
		return nil, Usage{}, constError("the answer holds no choice")
	}
	t.Answered = a.Model
	c := &a.Choices[0]
	// Every item is written into one buffer the output list slices, and
	// the usual item, the message, lives on the stack.
	m := &c.Message
	reasoning, content, refusal := m.reasoning(), derefString(m.Content), derefString(m.Refusal)
	n, size := len(m.ToolCalls), len(reasoning)+len(content)+len(refusal)
	for _, s := range [...]string{reasoning, content, refusal} {
		if s != "" {
			n++
		}
	}
	for i := range m.ToolCalls {
		size += len(m.ToolCalls[i].Function.Arguments)
	}
	output := make([]json.RawMessage, 0, n)
	buf := make([]byte, 0, size+n*160)
	put := func(it *outputItem, text string) {
		it.text.WriteString(text)
		start := len(buf)
		buf = it.appendJSON(buf, true)
		output = append(output, buf[start:len(buf):len(buf)])
	}
	if reasoning != "" {
		it := t.newOutputItem("reasoning")
		it.summary = t.summaryWanted()
		put(it, reasoning)
	}
	if content != "" {
		msg := outputItem{kind: "message", id: t.newID("message")}
		put(&msg, content)
	}
	if refusal != "" {
		it := t.newOutputItem("message")
		it.refusal = !t.RefusalAsText
		put(it, refusal)
	}
	for _, tc := range m.ToolCalls {
		it := t.toolCallItem(tc.ID, tc.Function.Name)
		args := tc.Function.Arguments
		if it.kind == "custom_tool_call" {
			args = customInput(args)
		}
		put(it, args)
	}
	// The Response echoes the request's parameters but not its input:
	// room for those, the output written above and the fixed members.
	return t.chatResponse(&a, output, len(buf)+max(0, t.size-len(t.Req.Input))+1024)
}

// chatResponse writes the Response for a chat answer a whose output items
// are written, into a buffer of size bytes, and finalizes the turn.
func (t *ResponsesTurn) chatResponse(a *chatAnswer, output []json.RawMessage, size int) ([]byte, Usage, error) {
	status, incomplete := finishStatus(a.Choices[0].FinishReason)
	usage := a.Usage.responses()
	o := t.object(status, output, &usage)
	o.IncompleteDetails = incomplete
	now := time.Now().Unix()
	o.CompletedAt = &now
	if a.ServiceTier != "" {
		o.ServiceTier = a.ServiceTier
	}
	body := appendResponseObject(make([]byte, 0, size), &o)
	t.finalize(status, output, body)
	return body, a.ledgerUsage(), nil
}
