package providers

import "github.com/modelgate/modelgate/internal/jsonfast"

// Hand-written encoders for the translators' output structs, here the
// Anthropic ones (the chat ones are in hub_*_encode.go, Ollama's in
// upstream_ollama_request_encode.go). Each writes the fields in
// declaration order with the omitempty rules of the struct tags, so the
// bytes match json.Marshal of the same value (the differential tests in
// translate_encode_test.go hold them to that).

func appendAnthropicRequest(dst []byte, r *anthropicOutRequest) []byte {
	dst = jsonfast.AppendStringMember(append(dst, '{'), "model", r.Model, true)
	dst = jsonfast.AppendInt(jsonfast.AppendKey(dst, "max_tokens", false), r.MaxTokens)
	if r.System != "" {
		dst = jsonfast.AppendStringMember(dst, "system", r.System, false)
	}
	dst = jsonfast.AppendKey(dst, "messages", false)
	if r.Messages == nil {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, '[')
		for i := range r.Messages {
			m := &r.Messages[i]
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = jsonfast.AppendStringMember(append(dst, '{'), "role", m.Role, true)
			dst = appendAnthropicBlocks(jsonfast.AppendKey(dst, "content", false), m.Content)
			dst = append(dst, '}')
		}
		dst = append(dst, ']')
	}
	if len(r.StopSequences) > 0 {
		dst = jsonfast.AppendStringList(jsonfast.AppendKey(dst, "stop_sequences", false), r.StopSequences)
	}
	if r.Stream {
		dst = append(dst, `,"stream":true`...)
	}
	if r.Temperature != nil {
		dst = jsonfast.AppendMarshalFloat(jsonfast.AppendKey(dst, "temperature", false), *r.Temperature)
	}
	if r.TopP != nil {
		dst = jsonfast.AppendMarshalFloat(jsonfast.AppendKey(dst, "top_p", false), *r.TopP)
	}
	if len(r.Tools) > 0 {
		dst = append(jsonfast.AppendKey(dst, "tools", false), '[')
		for i := range r.Tools {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendAnthropicTool(dst, &r.Tools[i])
		}
		dst = append(dst, ']')
	}
	if tc := r.ToolChoice; tc != nil {
		dst = jsonfast.AppendStringMember(append(jsonfast.AppendKey(dst, "tool_choice", false), '{'), "type", tc.Type, true)
		if tc.Name != "" {
			dst = jsonfast.AppendStringMember(dst, "name", tc.Name, false)
		}
		if tc.DisableParallelToolUse {
			dst = append(dst, `,"disable_parallel_tool_use":true`...)
		}
		dst = append(dst, '}')
	}
	if r.Metadata != nil {
		dst = append(jsonfast.AppendKey(dst, "metadata", false), '{')
		if r.Metadata.UserID != "" {
			dst = jsonfast.AppendStringMember(dst, "user_id", r.Metadata.UserID, true)
		}
		dst = append(dst, '}')
	}
	if r.Thinking != nil {
		dst = jsonfast.AppendStringMember(append(jsonfast.AppendKey(dst, "thinking", false), '{'), "type", r.Thinking.Type, true)
		dst = jsonfast.AppendInt(jsonfast.AppendKey(dst, "budget_tokens", false), r.Thinking.BudgetTokens)
		dst = append(dst, '}')
	}
	return append(dst, '}')
}

func appendAnthropicTool(dst []byte, t *AnthropicTool) []byte {
	dst = append(dst, '{')
	if t.Type != "" {
		dst = jsonfast.AppendStringMember(dst, "type", t.Type, true)
	}
	dst = jsonfast.AppendStringMember(dst, "name", t.Name, t.Type == "")
	if t.Description != "" {
		dst = jsonfast.AppendStringMember(dst, "description", t.Description, false)
	}
	if len(t.InputSchema) > 0 {
		dst = jsonfast.AppendCompactRaw(jsonfast.AppendKey(dst, "input_schema", false), t.InputSchema)
	}
	if len(t.CacheControl) > 0 {
		dst = jsonfast.AppendCompactRaw(jsonfast.AppendKey(dst, "cache_control", false), t.CacheControl)
	}
	return append(dst, '}')
}

// appendAnthropicBlocks writes a []AnthropicBlock, null when nil.
func appendAnthropicBlocks(dst []byte, blocks []AnthropicBlock) []byte {
	if blocks == nil {
		return append(dst, "null"...)
	}
	dst = append(dst, '[')
	for i := range blocks {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendAnthropicBlock(dst, &blocks[i])
	}
	return append(dst, ']')
}

func appendAnthropicBlock(dst []byte, b *AnthropicBlock) []byte {
	dst = jsonfast.AppendStringMember(append(dst, '{'), "type", b.Type, true)
	if b.Text != "" {
		dst = jsonfast.AppendStringMember(dst, "text", b.Text, false)
	}
	if s := b.Source; s != nil {
		dst = jsonfast.AppendStringMember(append(jsonfast.AppendKey(dst, "source", false), '{'), "type", s.Type, true)
		if s.MediaType != "" {
			dst = jsonfast.AppendStringMember(dst, "media_type", s.MediaType, false)
		}
		if s.Data != "" {
			dst = jsonfast.AppendStringMember(dst, "data", s.Data, false)
		}
		if s.URL != "" {
			dst = jsonfast.AppendStringMember(dst, "url", s.URL, false)
		}
		dst = append(dst, '}')
	}
	if b.ID != "" {
		dst = jsonfast.AppendStringMember(dst, "id", b.ID, false)
	}
	if b.Name != "" {
		dst = jsonfast.AppendStringMember(dst, "name", b.Name, false)
	}
	if len(b.Input) > 0 {
		dst = jsonfast.AppendCompactRaw(jsonfast.AppendKey(dst, "input", false), b.Input)
	}
	if b.ToolUseID != "" {
		dst = jsonfast.AppendStringMember(dst, "tool_use_id", b.ToolUseID, false)
	}
	if len(b.Content) > 0 {
		dst = jsonfast.AppendCompactRaw(jsonfast.AppendKey(dst, "content", false), b.Content)
	}
	if b.IsError {
		dst = append(dst, `,"is_error":true`...)
	}
	if b.ToolName != "" {
		dst = jsonfast.AppendStringMember(dst, "tool_name", b.ToolName, false)
	}
	if b.Thinking != "" {
		dst = jsonfast.AppendStringMember(dst, "thinking", b.Thinking, false)
	}
	if b.Signature != "" {
		dst = jsonfast.AppendStringMember(dst, "signature", b.Signature, false)
	}
	if b.Data != "" {
		dst = jsonfast.AppendStringMember(dst, "data", b.Data, false)
	}
	if len(b.CacheControl) > 0 {
		dst = jsonfast.AppendCompactRaw(jsonfast.AppendKey(dst, "cache_control", false), b.CacheControl)
	}
	return append(dst, '}')
}

// appendAnthropicOutResponse writes a whole Messages answer.
func appendAnthropicOutResponse(dst []byte, r *anthropicOutResponse) []byte {
	dst = jsonfast.AppendStringMember(append(dst, '{'), "id", r.ID, true)
	dst = jsonfast.AppendStringMember(dst, "type", r.Type, false)
	dst = jsonfast.AppendStringMember(dst, "role", r.Role, false)
	dst = jsonfast.AppendStringMember(dst, "model", r.Model, false)
	dst = appendAnthropicBlocks(jsonfast.AppendKey(dst, "content", false), r.Content)
	dst = jsonfast.AppendStringMember(dst, "stop_reason", r.StopReason, false)
	dst = jsonfast.AppendKey(dst, "stop_sequence", false)
	if r.StopSequence == nil {
		dst = append(dst, "null"...)
	} else {
		dst = jsonfast.AppendMarshalString(dst, *r.StopSequence)
	}
	dst = jsonfast.AppendRawOrNull(jsonfast.AppendKey(dst, "usage", false), r.Usage)
	return append(dst, '}')
}
