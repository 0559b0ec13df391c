package providers

// Hand-written encoders for the non-streaming translators' output structs.
// Each writes the fields in declaration order with the omitempty rules of
// the struct tags, so the bytes match json.Marshal of the same value (the
// differential tests hold them to that).

func appendAnthropicRequest(dst []byte, r *anthropicOutRequest) []byte {
	dst = appendStringMember(append(dst, '{'), "model", r.Model, true)
	dst = appendInt(appendKey(dst, "max_tokens", false), r.MaxTokens)
	if r.System != "" {
		dst = appendStringMember(dst, "system", r.System, false)
	}
	dst = appendKey(dst, "messages", false)
	if r.Messages == nil {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, '[')
		for i := range r.Messages {
			m := &r.Messages[i]
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendStringMember(append(dst, '{'), "role", m.Role, true)
			dst = appendAnthropicBlocks(appendKey(dst, "content", false), m.Content)
			dst = append(dst, '}')
		}
		dst = append(dst, ']')
	}
	if len(r.StopSequences) > 0 {
		dst = appendStringList(appendKey(dst, "stop_sequences", false), r.StopSequences)
	}
	if r.Stream {
		dst = append(dst, `,"stream":true`...)
	}
	if r.Temperature != nil {
		dst = appendMarshalFloat(appendKey(dst, "temperature", false), *r.Temperature)
	}
	if r.TopP != nil {
		dst = appendMarshalFloat(appendKey(dst, "top_p", false), *r.TopP)
	}
	if len(r.Tools) > 0 {
		dst = append(appendKey(dst, "tools", false), '[')
		for i := range r.Tools {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendAnthropicTool(dst, &r.Tools[i])
		}
		dst = append(dst, ']')
	}
	if tc := r.ToolChoice; tc != nil {
		dst = appendStringMember(append(appendKey(dst, "tool_choice", false), '{'), "type", tc.Type, true)
		if tc.Name != "" {
			dst = appendStringMember(dst, "name", tc.Name, false)
		}
		if tc.DisableParallelToolUse {
			dst = append(dst, `,"disable_parallel_tool_use":true`...)
		}
		dst = append(dst, '}')
	}
	if r.Metadata != nil {
		dst = append(appendKey(dst, "metadata", false), '{')
		if r.Metadata.UserID != "" {
			dst = appendStringMember(dst, "user_id", r.Metadata.UserID, true)
		}
		dst = append(dst, '}')
	}
	if r.Thinking != nil {
		dst = appendStringMember(append(appendKey(dst, "thinking", false), '{'), "type", r.Thinking.Type, true)
		dst = appendInt(appendKey(dst, "budget_tokens", false), r.Thinking.BudgetTokens)
		dst = append(dst, '}')
	}
	return append(dst, '}')
}

func appendAnthropicTool(dst []byte, t *AnthropicTool) []byte {
	dst = append(dst, '{')
	if t.Type != "" {
		dst = appendStringMember(dst, "type", t.Type, true)
	}
	dst = appendStringMember(dst, "name", t.Name, t.Type == "")
	if t.Description != "" {
		dst = appendStringMember(dst, "description", t.Description, false)
	}
	if len(t.InputSchema) > 0 {
		dst = appendCompactRaw(appendKey(dst, "input_schema", false), t.InputSchema)
	}
	if len(t.CacheControl) > 0 {
		dst = appendCompactRaw(appendKey(dst, "cache_control", false), t.CacheControl)
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
	dst = appendStringMember(append(dst, '{'), "type", b.Type, true)
	if b.Text != "" {
		dst = appendStringMember(dst, "text", b.Text, false)
	}
	if s := b.Source; s != nil {
		dst = appendStringMember(append(appendKey(dst, "source", false), '{'), "type", s.Type, true)
		if s.MediaType != "" {
			dst = appendStringMember(dst, "media_type", s.MediaType, false)
		}
		if s.Data != "" {
			dst = appendStringMember(dst, "data", s.Data, false)
		}
		if s.URL != "" {
			dst = appendStringMember(dst, "url", s.URL, false)
		}
		dst = append(dst, '}')
	}
	if b.ID != "" {
		dst = appendStringMember(dst, "id", b.ID, false)
	}
	if b.Name != "" {
		dst = appendStringMember(dst, "name", b.Name, false)
	}
	if len(b.Input) > 0 {
		dst = appendCompactRaw(appendKey(dst, "input", false), b.Input)
	}
	if b.ToolUseID != "" {
		dst = appendStringMember(dst, "tool_use_id", b.ToolUseID, false)
	}
	if len(b.Content) > 0 {
		dst = appendCompactRaw(appendKey(dst, "content", false), b.Content)
	}
	if b.IsError {
		dst = append(dst, `,"is_error":true`...)
	}
	if b.Thinking != "" {
		dst = appendStringMember(dst, "thinking", b.Thinking, false)
	}
	if b.Signature != "" {
		dst = appendStringMember(dst, "signature", b.Signature, false)
	}
	if b.Data != "" {
		dst = appendStringMember(dst, "data", b.Data, false)
	}
	if len(b.CacheControl) > 0 {
		dst = appendCompactRaw(appendKey(dst, "cache_control", false), b.CacheControl)
	}
	return append(dst, '}')
}

// appendOpenAIToolCalls writes a non-empty tool_calls member.
func appendOpenAIToolCalls(dst []byte, calls []OpenAIToolCall) []byte {
	dst = append(appendKey(dst, "tool_calls", false), '[')
	for i := range calls {
		tc := &calls[i]
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, '{')
		first := true
		if tc.Index != nil {
			dst = appendInt(appendKey(dst, "index", true), int64(*tc.Index))
			first = false
		}
		if tc.ID != "" {
			dst = appendStringMember(dst, "id", tc.ID, first)
			first = false
		}
		if tc.Type != "" {
			dst = appendStringMember(dst, "type", tc.Type, first)
			first = false
		}
		dst = append(appendKey(dst, "function", first), '{')
		if tc.Function.Name != "" {
			dst = appendStringMember(dst, "name", tc.Function.Name, true)
		}
		dst = appendStringMember(dst, "arguments", tc.Function.Arguments, tc.Function.Name == "")
		dst = append(dst, '}', '}')
	}
	return append(dst, ']')
}

func appendOptString(dst []byte, s *string) []byte {
	if s == nil {
		return append(dst, "null"...)
	}
	return appendMarshalString(dst, *s)
}

func appendOllamaRequest(dst []byte, r *OllamaRequest) []byte {
	dst = appendStringMember(append(dst, '{'), "model", r.Model, true)
	dst = appendKey(dst, "messages", false)
	if r.Messages == nil {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, '[')
		for i := range r.Messages {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendOllamaMessage(dst, &r.Messages[i])
		}
		dst = append(dst, ']')
	}
	if len(r.Tools) > 0 {
		dst = append(appendKey(dst, "tools", false), '[')
		for i := range r.Tools {
			t := &r.Tools[i]
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendStringMember(append(dst, '{'), "type", t.Type, true)
			dst = appendOpenAIFunction(appendKey(dst, "function", false), &t.Function)
			dst = append(dst, '}')
		}
		dst = append(dst, ']')
	}
	if r.Stream {
		dst = append(dst, `,"stream":true`...)
	} else {
		dst = append(dst, `,"stream":false`...)
	}
	if len(r.Format) > 0 {
		dst = appendCompactRaw(appendKey(dst, "format", false), r.Format)
	}
	if o := r.Options; o != nil {
		dst = append(appendKey(dst, "options", false), '{')
		first := true
		intOpt := func(key string, p *int64) {
			if p != nil {
				dst = appendInt(appendKey(dst, key, first), *p)
				first = false
			}
		}
		floatOpt := func(key string, p *float64) {
			if p != nil {
				dst = appendMarshalFloat(appendKey(dst, key, first), *p)
				first = false
			}
		}
		intOpt("num_predict", o.NumPredict)
		floatOpt("temperature", o.Temperature)
		floatOpt("top_p", o.TopP)
		intOpt("top_k", o.TopK)
		if len(o.Stop) > 0 {
			dst = appendStringList(appendKey(dst, "stop", first), o.Stop)
			first = false
		}
		intOpt("seed", o.Seed)
		floatOpt("frequency_penalty", o.FrequencyPenalty)
		floatOpt("presence_penalty", o.PresencePenalty)
		dst = append(dst, '}')
	}
	if len(r.Think) > 0 {
		dst = appendCompactRaw(appendKey(dst, "think", false), r.Think)
	}
	if r.KeepAlive != "" {
		dst = appendStringMember(dst, "keep_alive", r.KeepAlive, false)
	}
	return append(dst, '}')
}

func appendOllamaMessage(dst []byte, m *OllamaMessage) []byte {
	dst = appendStringMember(append(dst, '{'), "role", m.Role, true)
	dst = appendStringMember(dst, "content", m.Content, false)
	if len(m.Images) > 0 {
		dst = appendStringList(appendKey(dst, "images", false), m.Images)
	}
	if len(m.ToolCalls) > 0 {
		dst = append(appendKey(dst, "tool_calls", false), '[')
		for i := range m.ToolCalls {
			tc := &m.ToolCalls[i]
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, '{')
			if tc.ID != "" {
				dst = appendStringMember(dst, "id", tc.ID, true)
			}
			dst = append(appendKey(dst, "function", tc.ID == ""), '{')
			first := true
			if tc.Function.Index != nil {
				dst = appendInt(appendKey(dst, "index", true), int64(*tc.Function.Index))
				first = false
			}
			dst = appendStringMember(dst, "name", tc.Function.Name, first)
			dst = appendRawOrNull(appendKey(dst, "arguments", false), tc.Function.Arguments)
			dst = append(dst, '}', '}')
		}
		dst = append(dst, ']')
	}
	if m.ToolName != "" {
		dst = appendStringMember(dst, "tool_name", m.ToolName, false)
	}
	if m.ToolCallID != "" {
		dst = appendStringMember(dst, "tool_call_id", m.ToolCallID, false)
	}
	if m.Thinking != "" {
		dst = appendStringMember(dst, "thinking", m.Thinking, false)
	}
	return append(dst, '}')
}

func appendOpenAIFunction(dst []byte, f *OpenAIFunction) []byte {
	dst = appendStringMember(append(dst, '{'), "name", f.Name, true)
	if f.Description != "" {
		dst = appendStringMember(dst, "description", f.Description, false)
	}
	if len(f.Parameters) > 0 {
		dst = appendCompactRaw(appendKey(dst, "parameters", false), f.Parameters)
	}
	if f.Strict != nil {
		if *f.Strict {
			dst = append(dst, `,"strict":true`...)
		} else {
			dst = append(dst, `,"strict":false`...)
		}
	}
	return append(dst, '}')
}

// appendOpenAIResponse writes a chat completion for an OpenAI client, the
// same bytes json.Marshal would (FuzzResponseDifferential checks).
func appendOpenAIResponse(dst []byte, r *OpenAIResponse) []byte {
	dst = appendStringMember(append(dst, '{'), "id", r.ID, true)
	dst = appendStringMember(dst, "object", r.Object, false)
	dst = appendInt(appendKey(dst, "created", false), r.Created)
	dst = appendStringMember(dst, "model", r.Model, false)
	if r.SystemFingerprint != nil {
		dst = appendStringMember(dst, "system_fingerprint", *r.SystemFingerprint, false)
	}
	dst = appendKey(dst, "choices", false)
	if r.Choices == nil {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, '[')
		for i := range r.Choices {
			c := &r.Choices[i]
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendInt(appendKey(append(dst, '{'), "index", true), int64(c.Index))
			m := &c.Message
			dst = appendStringMember(append(appendKey(dst, "message", false), '{'), "role", m.Role, true)
			dst = appendOptString(appendKey(dst, "content", false), m.Content)
			dst = appendOptString(appendKey(dst, "refusal", false), m.Refusal)
			if len(m.ToolCalls) > 0 {
				dst = appendOpenAIToolCalls(dst, m.ToolCalls)
			}
			if m.Reasoning != "" {
				dst = appendStringMember(dst, "reasoning", m.Reasoning, false)
			}
			dst = append(dst, '}')
			dst = appendRawOrNull(appendKey(dst, "logprobs", false), c.Logprobs)
			dst = appendStringMember(dst, "finish_reason", c.FinishReason, false)
			dst = append(dst, '}')
		}
		dst = append(dst, ']')
	}
	dst = appendRawOrNull(appendKey(dst, "usage", false), r.Usage)
	return append(dst, '}')
}
