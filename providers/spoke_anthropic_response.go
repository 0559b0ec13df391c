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
	out, u, err := buildAnthropicResponseFromOpenAI(body)
	if err != nil {
		return nil, Usage{}, err
	}
	return appendAnthropicOutResponse(make([]byte, 0, len(body)+128), &out), u, nil
}

// buildAnthropicResponseFromOpenAI reads the chat answer (the fast reader,
// or encoding/json where it gives up) and maps it to the output struct,
// which OpenAIToAnthropicResponse encodes by hand, byte for byte as
// json.Marshal would (FuzzChatAnswerToMessages checks both).
func buildAnthropicResponseFromOpenAI(body []byte) (anthropicOutResponse, Usage, error) {
	var in chatInAnswer
	if !readChatInAnswer(body, &in) {
		// Its own value: in given to json.Unmarshal would be on the heap
		// for the fast path too.
		slow := new(chatInAnswer)
		if err := json.Unmarshal(body, slow); err != nil {
			return anthropicOutResponse{}, Usage{}, errors.New("upstream openai response: " + jsonErrText(err))
		}
		in = *slow
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
	return out, u, nil
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
	ID          string         `json:"id"`
	Model       string         `json:"model"`
	ServiceTier string         `json:"service_tier"`
	Choices     []chatInChoice `json:"choices"`
	Usage       *OpenAIUsage   `json:"usage"`
}

type chatInChoice struct {
	Message struct {
		Content   json.RawMessage  `json:"content"`
		Refusal   *string          `json:"refusal"`
		ToolCalls []OpenAIToolCall `json:"tool_calls"`
	} `json:"message"`
	FinishReason *string `json:"finish_reason"`
}

// readChatInAnswer is the fast path for chatInAnswer: one walk after
// jsonfast.Valid, or false to leave the body to json.Unmarshal (which
// judges, word for word, whatever the walk would not read as it does).
func readChatInAnswer(raw []byte, a *chatInAnswer) bool {
	if !jsonfast.Valid(raw) {
		return false
	}
	r := jsonfast.NewReader(raw)
	var mask uint32
	r.Object(jsonfast.SkipSpace(raw, 0), func(k []byte, i int) int {
		switch string(k) {
		case "id":
			r.Seen(&mask, 1<<0)
			return r.Str(i, &a.ID)
		case "model":
			r.Seen(&mask, 1<<1)
			return r.Str(i, &a.Model)
		case "service_tier":
			r.Seen(&mask, 1<<2)
			return r.Str(i, &a.ServiceTier)
		case "choices":
			r.Seen(&mask, 1<<3)
			return jsonfast.ListOf(&r, i, &a.Choices, func(j int, c *chatInChoice) int { return readChatInChoice(&r, j, c) })
		case "usage":
			r.Seen(&mask, 1<<4)
			// The hub's usage reader; its reading of the members
			// usageFromOpenAI looks at is encoding/json's.
			var cu *chatUsage
			end := readChatUsage(&r, i, &cu)
			if cu != nil {
				a.Usage = new(cu.openAI())
			}
			return end
		}
		return r.Unknown(i, k, "id", "model", "service_tier", "choices", "usage")
	})
	return r.OK()
}

func readChatInChoice(r *jsonfast.Reader, i int, c *chatInChoice) int {
	var mask uint32
	return r.Object(i, func(k []byte, j int) int {
		switch string(k) {
		case "message":
			r.Seen(&mask, 1<<0)
			if r.IsNull(j) {
				return j + len("null")
			}
			m := &c.Message
			var mm uint32
			return r.Object(j, func(k []byte, e int) int {
				switch string(k) {
				case "content":
					r.Seen(&mm, 1<<0)
					return r.Raw(e, &m.Content)
				case "refusal":
					r.Seen(&mm, 1<<1)
					return r.StrPtr(e, &m.Refusal)
				case "tool_calls":
					r.Seen(&mm, 1<<2)
					return jsonfast.ListOf(r, e, &m.ToolCalls, func(x int, tc *OpenAIToolCall) int { return readOpenAIToolCall(r, x, tc) })
				}
				return r.Unknown(e, k, "content", "refusal", "tool_calls")
			})
		case "finish_reason":
			r.Seen(&mask, 1<<1)
			return r.StrPtr(j, &c.FinishReason)
		}
		return r.Unknown(j, k, "message", "finish_reason")
	})
}
