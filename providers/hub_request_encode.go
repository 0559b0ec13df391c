package providers

import "github.com/modelgate/modelgate/internal/jsonfast"

// encodeChat is a spoke's built chat request as bytes, in a buffer about
// the size of the client's request (size), which the hub request is.
func encodeChat(r *chatRequest, err error, size int) ([]byte, error) {
	if err != nil {
		return nil, err
	}
	return appendChatRequest(make([]byte, 0, size+512), r), nil
}

// appendChatRequest writes the hub's chat request exactly as json.Marshal
// would (FuzzResponsesRequest pins it), without reflection.
func appendChatRequest(dst []byte, r *chatRequest) []byte {
	dst = jsonfast.AppendStringMember(append(dst, '{'), "model", r.Model, true)
	dst = append(jsonfast.AppendKey(dst, "messages", false), '[')
	for i := range r.Messages {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendChatMessage(dst, &r.Messages[i])
	}
	dst = append(dst, ']')
	if r.MaxTokens != nil {
		dst = jsonfast.AppendInt(jsonfast.AppendKey(dst, "max_tokens", false), *r.MaxTokens)
	}
	if r.MaxCompletionTokens != nil {
		dst = jsonfast.AppendInt(jsonfast.AppendKey(dst, "max_completion_tokens", false), *r.MaxCompletionTokens)
	}
	if r.Stream {
		dst = append(dst, `,"stream":true`...)
	}
	if r.StreamOptions != nil {
		dst = append(jsonfast.AppendKey(dst, "stream_options", false), '{')
		if r.StreamOptions.IncludeUsage {
			dst = append(dst, `"include_usage":true`...)
		}
		dst = append(dst, '}')
	}
	if r.Temperature != nil {
		dst = jsonfast.AppendMarshalFloat(jsonfast.AppendKey(dst, "temperature", false), *r.Temperature)
	}
	if r.TopP != nil {
		dst = jsonfast.AppendMarshalFloat(jsonfast.AppendKey(dst, "top_p", false), *r.TopP)
	}
	if r.N != nil {
		dst = jsonfast.AppendInt(jsonfast.AppendKey(dst, "n", false), *r.N)
	}
	if len(r.Stop) > 0 {
		dst = append(jsonfast.AppendKey(dst, "stop", false), '[')
		for i, s := range r.Stop {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = jsonfast.AppendMarshalString(dst, s)
		}
		dst = append(dst, ']')
	}
	if r.Seed != nil {
		dst = jsonfast.AppendInt(jsonfast.AppendKey(dst, "seed", false), *r.Seed)
	}
	if r.FrequencyPenalty != nil {
		dst = jsonfast.AppendMarshalFloat(jsonfast.AppendKey(dst, "frequency_penalty", false), *r.FrequencyPenalty)
	}
	if r.PresencePenalty != nil {
		dst = jsonfast.AppendMarshalFloat(jsonfast.AppendKey(dst, "presence_penalty", false), *r.PresencePenalty)
	}
	if len(r.Tools) > 0 {
		dst = append(jsonfast.AppendKey(dst, "tools", false), '[')
		for i := range r.Tools {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = jsonfast.AppendStringMember(append(dst, '{'), "type", r.Tools[i].Type, true)
			dst = append(appendOpenAIFunction(jsonfast.AppendKey(dst, "function", false), &r.Tools[i].Function), '}')
		}
		dst = append(dst, ']')
	}
	if len(r.ToolChoice) > 0 {
		dst = jsonfast.AppendCompactRaw(jsonfast.AppendKey(dst, "tool_choice", false), r.ToolChoice)
	}
	if r.ParallelToolCalls != nil {
		dst = jsonfast.AppendBool(jsonfast.AppendKey(dst, "parallel_tool_calls", false), *r.ParallelToolCalls)
	}
	if r.User != "" {
		dst = jsonfast.AppendStringMember(dst, "user", r.User, false)
	}
	if len(r.ResponseFormat) > 0 {
		dst = jsonfast.AppendCompactRaw(jsonfast.AppendKey(dst, "response_format", false), r.ResponseFormat)
	}
	if r.ReasoningEffort != "" {
		dst = jsonfast.AppendStringMember(dst, "reasoning_effort", r.ReasoningEffort, false)
	}
	return append(dst, '}')
}

func appendChatMessage(dst []byte, m *chatMessage) []byte {
	dst = jsonfast.AppendStringMember(append(dst, '{'), "role", m.Role, true)
	dst = jsonfast.AppendKey(dst, "content", false)
	switch c := m.Content.(type) {
	case string:
		dst = jsonfast.AppendMarshalString(dst, c)
	case []chatPart:
		if c == nil {
			dst = append(dst, "null"...)
			break
		}
		dst = append(dst, '[')
		for i := range c {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendChatPart(dst, &c[i])
		}
		dst = append(dst, ']')
	default:
		dst = append(dst, "null"...)
	}
	if len(m.ToolCalls) > 0 {
		dst = appendOpenAIToolCalls(dst, m.ToolCalls)
	}
	if m.ToolCallID != "" {
		dst = jsonfast.AppendStringMember(dst, "tool_call_id", m.ToolCallID, false)
	}
	if len(m.ThinkingBlocks) > 0 {
		dst = appendAnthropicBlocks(jsonfast.AppendKey(dst, "thinking_blocks", false), m.ThinkingBlocks)
	}
	return append(dst, '}')
}

func appendChatPart(dst []byte, p *chatPart) []byte {
	dst = jsonfast.AppendStringMember(append(dst, '{'), "type", p.Type, true)
	if p.Text != "" {
		dst = jsonfast.AppendStringMember(dst, "text", p.Text, false)
	}
	if u := p.ImageURL; u != nil {
		dst = jsonfast.AppendStringMember(append(jsonfast.AppendKey(dst, "image_url", false), '{'), "url", u.URL, true)
		if u.Detail != "" {
			dst = jsonfast.AppendStringMember(dst, "detail", u.Detail, false)
		}
		dst = append(dst, '}')
	}
	if f := p.File; f != nil {
		dst = append(jsonfast.AppendKey(dst, "file", false), '{')
		first := true
		for _, kv := range [...][2]string{{"filename", f.Filename}, {"file_data", f.FileData}, {"file_id", f.FileID}} {
			if kv[1] != "" {
				dst = jsonfast.AppendStringMember(dst, kv[0], kv[1], first)
				first = false
			}
		}
		dst = append(dst, '}')
	}
	if a := p.InputAudio; a != nil {
		dst = jsonfast.AppendStringMember(append(jsonfast.AppendKey(dst, "input_audio", false), '{'), "data", a.Data, true)
		dst = append(jsonfast.AppendStringMember(dst, "format", a.Format, false), '}')
	}
	return append(dst, '}')
}
