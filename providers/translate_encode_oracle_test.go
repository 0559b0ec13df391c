package providers

// The translators as they were before the hand-written encoders, kept only
// as the oracle of the differential tests in translate_encode_test.go.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

func oldOpenAIToAnthropicRequest(body []byte, upstreamModel string, defaultMaxTokens int64) ([]byte, error) {
	var in OpenAIRequest
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, BadRequest("messages", "invalid request body: "+jsonErrText(err))
	}
	if in.N != nil && *in.N != 1 {
		return nil, BadRequest("n", "n must be 1 for this model")
	}
	out := anthropicOutRequest{Model: upstreamModel, Stream: in.Stream, TopP: in.TopP}

	switch {
	case in.MaxCompletionTokens != nil:
		out.MaxTokens = *in.MaxCompletionTokens
	case in.MaxTokens != nil:
		out.MaxTokens = *in.MaxTokens
	case defaultMaxTokens > 0:
		out.MaxTokens = defaultMaxTokens
	default:
		out.MaxTokens = fallbackMaxTokens
	}
	if out.MaxTokens < 1 {
		param := "max_tokens"
		if in.MaxCompletionTokens != nil {
			param = "max_completion_tokens"
		}
		return nil, BadRequest(param, param+" must be at least 1")
	}
	if t := in.Temperature; t != nil {
		v := min(*t, 1)
		out.Temperature = &v
	}
	stops, err := decodeStop(in.Stop)
	if err != nil {
		return nil, err
	}
	out.StopSequences = stops
	if in.User != "" {
		out.Metadata = &AnthropicMetadata{UserID: in.User}
	}

	var system strings.Builder
	for i := range in.Messages {
		m := &in.Messages[i]
		switch m.Role {
		case "system", "developer":
			text, err := oldOpenAIText(m.Content, i)
			if err != nil {
				return nil, err
			}
			if system.Len() > 0 {
				system.WriteByte('\n')
			}
			system.WriteString(text)
		case "user":
			blocks, err := oldOpenAIUserBlocks(m.Content, i)
			if err != nil {
				return nil, err
			}
			out.Messages = appendTurn(out.Messages, "user", blocks)
		case "assistant":
			blocks, err := oldOpenAIAssistantBlocks(m, i)
			if err != nil {
				return nil, err
			}
			out.Messages = appendTurn(out.Messages, "assistant", blocks)
		case "tool":
			if m.ToolCallID == "" {
				return nil, BadRequest(fmt.Sprintf("messages[%d].tool_call_id", i), "tool message has no tool_call_id")
			}
			content, err := oldToolResultContent(m.Content, i)
			if err != nil {
				return nil, err
			}
			// A tool_result must lead its user turn; appendTurn merges
			// consecutive results into one turn in order.
			out.Messages = appendTurn(out.Messages, "user", []AnthropicBlock{{
				Type: "tool_result", ToolUseID: sanitizeID(m.ToolCallID), Content: content}})
		default:
			return nil, BadRequest(fmt.Sprintf("messages[%d].role", i), "unsupported message role "+strconv.Quote(m.Role))
		}
	}
	if len(out.Messages) == 0 {
		return nil, BadRequest("messages", "messages must contain at least one user or assistant message")
	}
	out.System = system.String()

	for i, t := range in.Tools {
		if t.Type != "" && t.Type != "function" {
			return nil, BadRequest(fmt.Sprintf("tools[%d].type", i), "unsupported tool type "+strconv.Quote(t.Type))
		}
		if t.Function.Name == "" {
			return nil, BadRequest(fmt.Sprintf("tools[%d].function.name", i), "tool has no name")
		}
		schema := t.Function.Parameters
		if len(schema) == 0 || bytes.Equal(schema, []byte("null")) {
			schema = json.RawMessage(emptyObjectSchema)
		}
		out.Tools = append(out.Tools, AnthropicTool{
			Name: t.Function.Name, Description: t.Function.Description, InputSchema: schema})
	}
	if len(out.Tools) > 0 {
		tc, err := anthropicToolChoice(in.ToolChoice)
		if err != nil {
			return nil, err
		}
		if in.ParallelToolCalls != nil && !*in.ParallelToolCalls {
			if tc == nil {
				tc = &AnthropicToolChoice{Type: "auto"}
			}
			if tc.Type != "none" {
				tc.DisableParallelToolUse = true
			}
		}
		out.ToolChoice = tc
	}
	return json.Marshal(&out)
}

func oldOpenAIParts(raw json.RawMessage, i int) ([]OpenAIContentPart, error) {
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, BadRequest(fmt.Sprintf("messages[%d].content", i), "invalid content")
		}
		return []OpenAIContentPart{{Type: "text", Text: s}}, nil
	}
	var parts []OpenAIContentPart
	if err := json.Unmarshal(raw, &parts); err != nil {
		return nil, BadRequest(fmt.Sprintf("messages[%d].content", i), "content must be a string or an array of content parts")
	}
	return parts, nil
}

func oldOpenAIText(raw json.RawMessage, i int) (string, error) {
	parts, err := oldOpenAIParts(raw, i)
	if err != nil {
		return "", err
	}
	if len(parts) == 1 && parts[0].Type == "text" {
		return parts[0].Text, nil
	}
	var b strings.Builder
	for j, p := range parts {
		if p.Type != "text" {
			return "", BadRequest(fmt.Sprintf("messages[%d].content[%d].type", i, j), "only text parts are allowed here")
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(p.Text)
	}
	return b.String(), nil
}

func oldOpenAIUserBlocks(raw json.RawMessage, i int) ([]AnthropicBlock, error) {
	parts, err := oldOpenAIParts(raw, i)
	if err != nil {
		return nil, err
	}
	blocks := make([]AnthropicBlock, 0, len(parts))
	for j := range parts {
		p := &parts[j]
		switch p.Type {
		case "text":
			// Anthropic rejects empty text blocks; they carry nothing.
			if p.Text != "" {
				blocks = append(blocks, AnthropicBlock{Type: "text", Text: p.Text})
			}
		case "image_url":
			if p.ImageURL == nil {
				return nil, BadRequest(fmt.Sprintf("messages[%d].content[%d].image_url", i, j), "image part has no image_url")
			}
			src, ok := imageSource(p.ImageURL.URL)
			if !ok {
				return nil, BadRequest(fmt.Sprintf("messages[%d].content[%d].image_url.url", i, j),
					"image url must be an http(s) url or a base64 data uri")
			}
			blocks = append(blocks, AnthropicBlock{Type: "image", Source: src})
		default:
			return nil, BadRequest(fmt.Sprintf("messages[%d].content[%d].type", i, j),
				"unsupported content part type "+strconv.Quote(p.Type))
		}
	}
	return blocks, nil
}

func oldOpenAIAssistantBlocks(m *OpenAIMessage, i int) ([]AnthropicBlock, error) {
	parts, err := oldOpenAIParts(m.Content, i)
	if err != nil {
		return nil, err
	}
	blocks := make([]AnthropicBlock, 0, len(parts)+len(m.ToolCalls))
	for j, p := range parts {
		switch p.Type {
		case "text":
			if p.Text != "" {
				blocks = append(blocks, AnthropicBlock{Type: "text", Text: p.Text})
			}
		case "refusal":
			// A refusal is the assistant's text for history purposes.
		default:
			return nil, BadRequest(fmt.Sprintf("messages[%d].content[%d].type", i, j),
				"unsupported assistant content part type "+strconv.Quote(p.Type))
		}
	}
	for j := range m.ToolCalls {
		tc := &m.ToolCalls[j]
		if tc.ID == "" {
			return nil, BadRequest(fmt.Sprintf("messages[%d].tool_calls[%d].id", i, j), "tool call has no id")
		}
		input := json.RawMessage(tc.Function.Arguments)
		if strings.TrimSpace(tc.Function.Arguments) == "" {
			input = json.RawMessage("{}")
		} else if !json.Valid(input) || input[skipSpace(input, 0)] != '{' {
			return nil, BadRequest(fmt.Sprintf("messages[%d].tool_calls[%d].function.arguments", i, j),
				"tool call arguments must be a json object")
		}
		blocks = append(blocks, AnthropicBlock{
			Type: "tool_use", ID: sanitizeID(tc.ID), Name: tc.Function.Name, Input: input})
	}
	return blocks, nil
}

func oldToolResultContent(raw json.RawMessage, i int) (json.RawMessage, error) {
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return json.RawMessage(`""`), nil
	}
	if raw[0] == '"' {
		return raw, nil
	}
	blocks, err := oldOpenAIUserBlocks(raw, i)
	if err != nil {
		return nil, err
	}
	if len(blocks) == 0 {
		return json.RawMessage(`""`), nil
	}
	return json.Marshal(blocks)
}

func oldAnthropicToOpenAIResponse(body []byte) ([]byte, Usage, error) {
	var in AnthropicResponse
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, Usage{}, errors.New("upstream anthropic response: " + jsonErrText(err))
	}
	if in.Type != "" && in.Type != "message" {
		return nil, Usage{}, errors.New("upstream anthropic response has type " + in.Type)
	}
	u := usageFromAnthropic(&in.Usage)
	u.Seen = in.Usage.InputTokens != nil || in.Usage.OutputTokens != 0
	msg := openAIOutRespMsg{Role: "assistant"}
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
	out := openAIOutResponse{
		ID:      openAICompletionID(in.ID),
		Object:  "chat.completion",
		Created: time.Now().Unix(),
		Model:   in.Model,
		Choices: []openAIOutChoice{{Message: msg, FinishReason: finishFromStop(stop)}},
		Usage:   appendOpenAIUsage(nil, u),
	}
	b, err := json.Marshal(&out)
	return b, u, err
}

func oldOpenAIToOllamaRequest(body []byte, upstreamModel string) ([]byte, error) {
	var in OpenAIRequest
	if err := oldDecodeOpenAIRequest(body, &in); err != nil {
		return nil, err
	}
	if in.N != nil && *in.N != 1 {
		return nil, BadRequest("n", "n: only 1 is supported by this model")
	}
	out := OllamaRequest{
		Model:    upstreamModel,
		Messages: make([]OllamaMessage, 0, len(in.Messages)),
		Stream:   in.Stream,
	}
	var err error
	if out.Messages, err = oldOllamaMessages(out.Messages, in.Messages); err != nil {
		return nil, err
	}
	if out.Tools, err = ollamaTools(in.Tools, in.ToolChoice); err != nil {
		return nil, err
	}
	if out.Options, err = ollamaOptions(&in); err != nil {
		return nil, err
	}
	if out.Format, err = ollamaFormat(in.ResponseFormat); err != nil {
		return nil, err
	}
	if out.Think, err = ollamaThink(in.ReasoningEffort); err != nil {
		return nil, err
	}
	return json.Marshal(&out)
}

func oldDecodeOpenAIRequest(body []byte, in *OpenAIRequest) *APIError {
	if err := json.Unmarshal(body, in); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return BadRequest(te.Field, te.Field+": unexpected JSON "+te.Value)
		}
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return BadRequest("", "invalid JSON body: "+se.Error())
		}
		return BadRequest("", "invalid JSON body")
	}
	if len(in.Messages) == 0 {
		return BadRequest("messages", "messages: must be a non-empty array")
	}
	return nil
}

func oldOllamaMessages(dst []OllamaMessage, msgs []OpenAIMessage) ([]OllamaMessage, error) {
	// Ollama wants the function name on a tool result, OpenAI only sends
	// the call id, so remember the names the assistant used.
	type call struct{ id, name string }
	var calls []call
	for i := range msgs {
		m := &msgs[i]
		p := "messages[" + strconv.Itoa(i) + "]"
		var om OllamaMessage
		switch m.Role {
		case "system", "developer":
			om.Role = "system"
		case "user", "assistant", "tool":
			om.Role = m.Role
		case "function":
			// Deprecated OpenAI role: a function result named by Name.
			om.Role = "tool"
			om.ToolName = m.Name
		default:
			return nil, BadRequest(p+".role", p+".role: unsupported role "+strconv.Quote(m.Role))
		}
		text, images, err := oldOllamaContent(m.Content, p+".content")
		if err != nil {
			return nil, err
		}
		om.Content, om.Images = text, images
		if m.Role == "assistant" {
			om.Thinking = m.Reasoning
			for j := range m.ToolCalls {
				tc := &m.ToolCalls[j]
				args, err := ollamaArguments(tc.Function.Arguments)
				if err != nil {
					q := p + ".tool_calls[" + strconv.Itoa(j) + "].function.arguments"
					return nil, BadRequest(q, q+": "+err.Error())
				}
				om.ToolCalls = append(om.ToolCalls, OllamaToolCall{
					ID:       tc.ID,
					Function: OllamaFunctionCall{Name: tc.Function.Name, Arguments: args},
				})
				if tc.ID != "" {
					calls = append(calls, call{tc.ID, tc.Function.Name})
				}
			}
		}
		if m.Role == "tool" {
			om.ToolCallID = m.ToolCallID
			om.ToolName = m.Name
			for k := len(calls) - 1; k >= 0; k-- {
				if calls[k].id == m.ToolCallID {
					om.ToolName = calls[k].name
					break
				}
			}
		}
		dst = append(dst, om)
	}
	return dst, nil
}

func oldOllamaContent(raw json.RawMessage, param string) (string, []string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil, nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", nil, BadRequest(param, param+": invalid string")
		}
		return s, nil, nil
	}
	var parts []OpenAIContentPart
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", nil, BadRequest(param, param+": must be a string or an array of content parts")
	}
	var text strings.Builder
	var images []string
	for j := range parts {
		pp := param + "[" + strconv.Itoa(j) + "]"
		switch parts[j].Type {
		case "text":
			if text.Len() > 0 {
				text.WriteByte('\n')
			}
			text.WriteString(parts[j].Text)
		case "image_url":
			if parts[j].ImageURL == nil {
				return "", nil, BadRequest(pp+".image_url", pp+".image_url: missing")
			}
			data, err := dataURIBase64(parts[j].ImageURL.URL)
			if err != nil {
				return "", nil, BadRequest(pp+".image_url.url", pp+".image_url.url: "+err.Error())
			}
			images = append(images, data)
		default:
			return "", nil, BadRequest(pp+".type", pp+".type: unsupported content part type "+strconv.Quote(parts[j].Type))
		}
	}
	return text.String(), images, nil
}

func oldOllamaToOpenAIResponse(body []byte) ([]byte, Usage, error) {
	var in OllamaResponse
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, Usage{}, &APIError{Status: http.StatusBadGateway, Message: "invalid response from ollama: " + err.Error()}
	}
	if in.Error != "" {
		return nil, Usage{}, &APIError{Status: http.StatusBadGateway, Message: in.Error}
	}
	msg := OpenAIMessage{Role: "assistant", Reasoning: in.Message.Thinking}
	for i := range in.Message.ToolCalls {
		tc := &in.Message.ToolCalls[i]
		args, err := oldOpenAIArguments(tc.Function.Arguments)
		if err != nil {
			return nil, Usage{}, &APIError{Status: http.StatusBadGateway, Message: "invalid tool call arguments from ollama"}
		}
		id := tc.ID
		if id == "" {
			id = newID("call_")
		}
		msg.ToolCalls = append(msg.ToolCalls, OpenAIToolCall{
			ID: id, Type: "function",
			Function: OpenAIFunctionCall{Name: tc.Function.Name, Arguments: args},
		})
	}
	// OpenAI sends null content beside tool calls.
	if in.Message.Content != "" || len(msg.ToolCalls) == 0 {
		msg.Content, _ = json.Marshal(in.Message.Content)
	} else {
		msg.Content = json.RawMessage("null")
	}
	finish := ollamaFinishReason(in.DoneReason, len(msg.ToolCalls) > 0)
	u := Usage{InputTokens: in.PromptEvalCount, OutputTokens: in.EvalCount, Seen: in.Done}
	fp := "fp_ollama"
	out := OpenAIResponse{
		ID:                newID("chatcmpl-"),
		Object:            "chat.completion",
		Created:           ollamaCreated(in.CreatedAt),
		Model:             in.Model,
		SystemFingerprint: &fp,
		Choices:           []OpenAIChoice{{Message: msg, FinishReason: &finish}},
		Usage: &OpenAIUsage{
			PromptTokens:     u.InputTokens,
			CompletionTokens: u.OutputTokens,
			TotalTokens:      u.InputTokens + u.OutputTokens,
		},
	}
	b, err := json.Marshal(&out)
	return b, u, err
}

func oldOpenAIArguments(raw json.RawMessage) (string, error) {
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
