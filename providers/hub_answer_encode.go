package providers

// Hand-written encoders for chat answers and the tool calls and functions
// chat requests and answers share, byte for byte what json.Marshal writes
// (translate_encode_test.go holds them to that).

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
