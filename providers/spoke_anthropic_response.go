package providers

import (
	"encoding/json"
	"errors"
	"strings"

	"github.com/modelgate/modelgate/internal/jsonfast"
)

// OpenAIToAnthropicResponse renders an upstream OpenAI chat completion as
// an Anthropic Messages response and returns the usage it carried. Only
// the first choice is used (requests are translated with n=1).
func OpenAIToAnthropicResponse(body []byte) ([]byte, Usage, error) {
	var in chatInAnswer
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, Usage{}, errors.New("upstream openai response: " + jsonErrText(err))
	}
	var u Usage
	if in.Usage != nil {
		u = usageFromOpenAI(in.Usage)
		u.ServiceTier = in.ServiceTier
	}
	out := anthropicOutResponse{
		ID: anthropicMessageID(in.ID), Type: "message", Role: "assistant", Model: in.Model,
		Content: []AnthropicBlock{}, StopReason: "end_turn",
		Usage: appendAnthropicUsage(nil, u),
	}
	if len(in.Choices) > 0 {
		c := &in.Choices[0]
		text := openAIResponseText(c.Message.Content)
		if text == "" && c.Message.Refusal != nil {
			text = *c.Message.Refusal
		}
		if text != "" {
			out.Content = append(out.Content, AnthropicBlock{Type: "text", Text: text})
		}
		for _, tc := range c.Message.ToolCalls {
			id := sanitizeID(tc.ID)
			if id == "" {
				id = newToolUseID()
			}
			out.Content = append(out.Content, AnthropicBlock{Type: "tool_use", ID: id,
				Name: tc.Function.Name, Input: toolInput(tc.Function.Arguments)})
		}
		if c.FinishReason != nil {
			out.StopReason = stopFromFinish(*c.FinishReason)
		}
		if len(c.Message.ToolCalls) > 0 && out.StopReason == "end_turn" {
			// Some local servers report "stop" while calling tools.
			out.StopReason = "tool_use"
		}
	}
	b, err := json.Marshal(&out)
	return b, u, err
}

// openAIResponseText reads message content that is a string, text parts or
// null.
func openAIResponseText(raw json.RawMessage) string {
	if len(raw) == 0 || raw[0] == 'n' {
		return ""
	}
	if raw[0] == '"' {
		s, _ := jsonfast.DecodeStringToken(raw)
		return s
	}
	var parts []OpenAIContentPart
	if json.Unmarshal(raw, &parts) != nil {
		return ""
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Type == "text" {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// toolInput parses a call's JSON-encoded arguments into a tool_use input,
// which must be an object. Models sometimes emit broken JSON; rather than
// fail the whole response, the raw text is kept under "arguments" so the
// client can still see what was attempted.
func toolInput(args string) json.RawMessage {
	trimmed := strings.TrimSpace(args)
	if trimmed == "" {
		return json.RawMessage("{}")
	}
	if trimmed[0] == '{' && json.Valid([]byte(trimmed)) {
		return json.RawMessage(trimmed)
	}
	b := append([]byte(`{"arguments":`), jsonfast.AppendJSONString(nil, args)...)
	return append(b, '}')
}

// chatInAnswer is a whole chat answer as the Messages spoke reads it:
// unlike chatAnswer it takes content as a string or a list of parts, and
// keeps the id and model Anthropic clients see.
type chatInAnswer struct {
	ID          string `json:"id"`
	Model       string `json:"model"`
	ServiceTier string `json:"service_tier"`
	Choices     []struct {
		Message struct {
			Content   json.RawMessage  `json:"content"`
			Refusal   *string          `json:"refusal"`
			ToolCalls []OpenAIToolCall `json:"tool_calls"`
		} `json:"message"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *OpenAIUsage `json:"usage"`
}
