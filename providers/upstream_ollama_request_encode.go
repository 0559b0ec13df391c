package providers

import "github.com/modelgate/modelgate/internal/jsonfast"

// The Ollama request encoder, byte for byte what json.Marshal writes
// (translate_encode_test.go holds it to that).

func appendOllamaRequest(dst []byte, r *OllamaRequest) []byte {
	dst = jsonfast.AppendStringMember(append(dst, '{'), "model", r.Model, true)
	dst = jsonfast.AppendKey(dst, "messages", false)
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
		dst = append(jsonfast.AppendKey(dst, "tools", false), '[')
		for i := range r.Tools {
			t := &r.Tools[i]
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = jsonfast.AppendStringMember(append(dst, '{'), "type", t.Type, true)
			dst = appendOpenAIFunction(jsonfast.AppendKey(dst, "function", false), &t.Function)
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
		dst = jsonfast.AppendCompactRaw(jsonfast.AppendKey(dst, "format", false), r.Format)
	}
	if o := r.Options; o != nil {
		dst = append(jsonfast.AppendKey(dst, "options", false), '{')
		first := true
		intOpt := func(key string, p *int64) {
			if p != nil {
				dst = jsonfast.AppendInt(jsonfast.AppendKey(dst, key, first), *p)
				first = false
			}
		}
		floatOpt := func(key string, p *float64) {
			if p != nil {
				dst = jsonfast.AppendMarshalFloat(jsonfast.AppendKey(dst, key, first), *p)
				first = false
			}
		}
		intOpt("num_predict", o.NumPredict)
		floatOpt("temperature", o.Temperature)
		floatOpt("top_p", o.TopP)
		intOpt("top_k", o.TopK)
		if len(o.Stop) > 0 {
			dst = jsonfast.AppendStringList(jsonfast.AppendKey(dst, "stop", first), o.Stop)
			first = false
		}
		intOpt("seed", o.Seed)
		floatOpt("frequency_penalty", o.FrequencyPenalty)
		floatOpt("presence_penalty", o.PresencePenalty)
		dst = append(dst, '}')
	}
	if len(r.Think) > 0 {
		dst = jsonfast.AppendCompactRaw(jsonfast.AppendKey(dst, "think", false), r.Think)
	}
	if r.KeepAlive != "" {
		dst = jsonfast.AppendStringMember(dst, "keep_alive", r.KeepAlive, false)
	}
	return append(dst, '}')
}

func appendOllamaMessage(dst []byte, m *OllamaMessage) []byte {
	dst = jsonfast.AppendStringMember(append(dst, '{'), "role", m.Role, true)
	dst = jsonfast.AppendStringMember(dst, "content", m.Content, false)
	if len(m.Images) > 0 {
		dst = jsonfast.AppendStringList(jsonfast.AppendKey(dst, "images", false), m.Images)
	}
	if len(m.ToolCalls) > 0 {
		dst = append(jsonfast.AppendKey(dst, "tool_calls", false), '[')
		for i := range m.ToolCalls {
			tc := &m.ToolCalls[i]
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, '{')
			if tc.ID != "" {
				dst = jsonfast.AppendStringMember(dst, "id", tc.ID, true)
			}
			dst = append(jsonfast.AppendKey(dst, "function", tc.ID == ""), '{')
			first := true
			if tc.Function.Index != nil {
				dst = jsonfast.AppendInt(jsonfast.AppendKey(dst, "index", true), int64(*tc.Function.Index))
				first = false
			}
			dst = jsonfast.AppendStringMember(dst, "name", tc.Function.Name, first)
			dst = jsonfast.AppendRawOrNull(jsonfast.AppendKey(dst, "arguments", false), tc.Function.Arguments)
			dst = append(dst, '}', '}')
		}
		dst = append(dst, ']')
	}
	if m.ToolName != "" {
		dst = jsonfast.AppendStringMember(dst, "tool_name", m.ToolName, false)
	}
	if m.ToolCallID != "" {
		dst = jsonfast.AppendStringMember(dst, "tool_call_id", m.ToolCallID, false)
	}
	if m.Thinking != "" {
		dst = jsonfast.AppendStringMember(dst, "thinking", m.Thinking, false)
	}
	return append(dst, '}')
}
