package providers

// The Ollama request encoder, byte for byte what json.Marshal writes
// (translate_encode_test.go holds it to that).

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
