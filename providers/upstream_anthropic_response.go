package providers

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"time"
)

// AnthropicToOpenAIResponse renders an upstream Anthropic Messages
// response as an OpenAI chat completion and returns the usage it carried.
// An error means the upstream body was not a Messages response.
func AnthropicToOpenAIResponse(body []byte) ([]byte, Usage, error) {
	out, u, err := buildOpenAIResponseFromAnthropic(body)
	if err != nil {
		return nil, u, err
	}
	// The output is about the size of the input; one allocation holds it.
	return appendOpenAIResponse(make([]byte, 0, len(body)+256), &out), u, nil
}

// buildOpenAIResponseFromAnthropic decodes the body and maps it to the output struct, which AnthropicToOpenAIResponse
// encodes by hand, byte for byte as json.Marshal would (FuzzOpenAIRequestDifferential
// and FuzzResponseDifferential check that).
func buildOpenAIResponseFromAnthropic(body []byte) (OpenAIResponse, Usage, error) {
	var in AnthropicResponse
	if err := json.Unmarshal(body, &in); err != nil {
		return OpenAIResponse{}, Usage{}, errors.New("upstream anthropic response: " + jsonErrText(err))
	}
	if in.Type != "" && in.Type != "message" {
		return OpenAIResponse{}, Usage{}, errors.New("upstream anthropic response has type " + in.Type)
	}
	u := usageFromAnthropic(&in.Usage)
	u.Seen = in.Usage.InputTokens != nil || in.Usage.OutputTokens != 0
	msg := OpenAIResponseMessage{Role: "assistant"}
	var text strings.Builder
	for i := range in.Content {
		b := &in.Content[i]
		switch b.Type {
		case "text":
			text.WriteString(b.Text)
		case "tool_use":
			args := "{}"
			if v := bytes.TrimSpace(b.Input); len(v) > 0 && !bytes.Equal(v, []byte("null")) {
				args = string(v)
			}
			msg.ToolCalls = append(msg.ToolCalls, OpenAIToolCall{ID: b.ID, Type: "function",
				Function: OpenAIFunctionCall{Name: b.Name, Arguments: args}})
		}
	}
	if text.Len() > 0 || len(msg.ToolCalls) == 0 {
		s := text.String()
		msg.Content = &s
	}
	stop := ""
	if in.StopReason != nil {
		stop = *in.StopReason
	}
	out := OpenAIResponse{
		ID:      openAICompletionID(in.ID),
		Object:  "chat.completion",
		Created: time.Now().Unix(),
		Model:   in.Model,
		Choices: []OpenAIChoice{{Message: msg, FinishReason: finishFromStop(stop)}},
		Usage:   appendOpenAIUsage(nil, u),
	}
	return out, u, nil
}

// anthropicOutResponse is a Messages response rendered for an Anthropic
// client.
type anthropicOutResponse struct {
	ID           string           `json:"id"`
	Type         string           `json:"type"`
	Role         string           `json:"role"`
	Model        string           `json:"model"`
	Content      []AnthropicBlock `json:"content"`
	StopReason   string           `json:"stop_reason"`
	StopSequence *string          `json:"stop_sequence"`
	Usage        json.RawMessage  `json:"usage"`
}
