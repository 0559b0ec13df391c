package providers

import (
	"bytes"
	"encoding/json"
	"net/http"
	"time"
)

// OllamaToOpenAIResponse translates a non-streaming /api/chat response into
// an OpenAI chat.completion and reports its usage.
func OllamaToOpenAIResponse(body []byte) ([]byte, Usage, error) {
	out, u, err := buildOpenAIResponseFromOllama(body)
	if err != nil {
		return nil, u, err
	}
	// The output is about the size of the input; one allocation holds it.
	return appendOpenAIResponse(make([]byte, 0, len(body)+256), &out), u, nil
}

// buildOpenAIResponseFromOllama decodes the body and maps it to the output struct, which OllamaToOpenAIResponse
// encodes by hand, byte for byte as json.Marshal would (FuzzOpenAIRequestDifferential
// and FuzzResponseDifferential check that).
func buildOpenAIResponseFromOllama(body []byte) (OpenAIResponse, Usage, error) {
	var in OllamaResponse
	if err := json.Unmarshal(body, &in); err != nil {
		return OpenAIResponse{}, Usage{}, &APIError{Status: http.StatusBadGateway, Message: "invalid response from ollama: " + err.Error()}
	}
	if in.Error != "" {
		return OpenAIResponse{}, Usage{}, &APIError{Status: http.StatusBadGateway, Message: in.Error}
	}
	msg := OpenAIResponseMessage{Role: "assistant", Reasoning: in.Message.Thinking}
	for i := range in.Message.ToolCalls {
		tc := &in.Message.ToolCalls[i]
		args, err := openAIArguments(tc.Function.Arguments)
		if err != nil {
			return OpenAIResponse{}, Usage{}, &APIError{Status: http.StatusBadGateway, Message: "invalid tool call arguments from ollama"}
		}
		id := tc.ID
		if id == "" {
			id = newCallID()
		}
		msg.ToolCalls = append(msg.ToolCalls, OpenAIToolCall{
			ID: id, Type: "function",
			Function: OpenAIFunctionCall{Name: tc.Function.Name, Arguments: args},
		})
	}
	// OpenAI sends null content beside tool calls.
	if in.Message.Content != "" || len(msg.ToolCalls) == 0 {
		msg.Content = &in.Message.Content
	}
	finish := ollamaFinishReason(in.DoneReason, len(msg.ToolCalls) > 0)
	u := Usage{InputTokens: in.PromptEvalCount, OutputTokens: in.EvalCount, Seen: in.Done}
	fp := "fp_ollama"
	out := OpenAIResponse{
		ID:                newCompletionID(),
		Object:            "chat.completion",
		Created:           ollamaCreated(in.CreatedAt),
		Model:             in.Model,
		SystemFingerprint: &fp,
		Choices:           []OpenAIChoice{{Message: msg, FinishReason: finish}},
		Usage:             appendOpenAIUsage(nil, u),
	}
	return out, u, nil
}

// openAIArguments re-encodes Ollama's arguments object as the compact JSON
// string OpenAI clients parse.
func openAIArguments(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "{}", nil
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return "", err
	}
	return b.String(), nil
}

// ollamaFinishReason follows docs/wire-formats.md §5.3: a stop that produced tool
// calls is a tool_calls finish; other reasons pass through.
func ollamaFinishReason(doneReason string, toolCalls bool) string {
	switch doneReason {
	case "", "stop":
		if toolCalls {
			return "tool_calls"
		}
		return "stop"
	}
	return doneReason
}

func ollamaCreated(createdAt string) int64 {
	if t, err := time.Parse(time.RFC3339Nano, createdAt); err == nil {
		return t.Unix()
	}
	return time.Now().Unix()
}
