package providers

import "github.com/modelgate/modelgate/internal/jsonfast"

// Hand-written encoders for chat answers and the tool calls and functions
// chat requests and answers share, byte for byte what json.Marshal writes
// (translate_encode_test.go holds them to that).

// appendOpenAIToolCalls writes a non-empty tool_calls member.
func appendOpenAIToolCalls(dst []byte, calls []OpenAIToolCall) []byte {
	dst = append(jsonfast.AppendKey(dst, "tool_calls", false), '[')
	for i := range calls {
		tc := &calls[i]
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, '{')
		first := true
		if tc.Index != nil {
			dst = jsonfast.AppendInt(jsonfast.AppendKey(dst, "index", true), int64(*tc.Index))
			first = false
		}
		if tc.ID != "" {
			dst = jsonfast.AppendStringMember(dst, "id", tc.ID, first)
			first = false
		}
		if tc.Type != "" {
			dst = jsonfast.AppendStringMember(dst, "type", tc.Type, first)
			first = false
		}
		dst = append(jsonfast.AppendKey(dst, "function", first), '{')
		if tc.Function.Name != "" {
			dst = jsonfast.AppendStringMember(dst, "name", tc.Function.Name, true)
		}
		dst = jsonfast.AppendStringMember(dst, "arguments", tc.Function.Arguments, tc.Function.Name == "")
		dst = append(dst, '}', '}')
	}
	return append(dst, ']')
}

func appendOptString(dst []byte, s *string) []byte {
	if s == nil {
		return append(dst, "null"...)
	}
	return jsonfast.AppendMarshalString(dst, *s)
}

func appendOpenAIFunction(dst []byte, f *OpenAIFunction) []byte {
	dst = jsonfast.AppendStringMember(append(dst, '{'), "name", f.Name, true)
	if f.Description != "" {
		dst = jsonfast.AppendStringMember(dst, "description", f.Description, false)
	}
	if len(f.Parameters) > 0 {
		dst = jsonfast.AppendCompactRaw(jsonfast.AppendKey(dst, "parameters", false), f.Parameters)
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
	dst = jsonfast.AppendStringMember(append(dst, '{'), "id", r.ID, true)
	dst = jsonfast.AppendStringMember(dst, "object", r.Object, false)
	dst = jsonfast.AppendInt(jsonfast.AppendKey(dst, "created", false), r.Created)
	dst = jsonfast.AppendStringMember(dst, "model", r.Model, false)
	if r.SystemFingerprint != nil {
		dst = jsonfast.AppendStringMember(dst, "system_fingerprint", *r.SystemFingerprint, false)
	}
	dst = jsonfast.AppendKey(dst, "choices", false)
	if r.Choices == nil {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, '[')
		for i := range r.Choices {
			c := &r.Choices[i]
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = jsonfast.AppendInt(jsonfast.AppendKey(append(dst, '{'), "index", true), int64(c.Index))
			m := &c.Message
			dst = jsonfast.AppendStringMember(append(jsonfast.AppendKey(dst, "message", false), '{'), "role", m.Role, true)
			dst = appendOptString(jsonfast.AppendKey(dst, "content", false), m.Content)
			dst = appendOptString(jsonfast.AppendKey(dst, "refusal", false), m.Refusal)
			if len(m.ToolCalls) > 0 {
				dst = appendOpenAIToolCalls(dst, m.ToolCalls)
			}
			if m.Reasoning != "" {
				dst = jsonfast.AppendStringMember(dst, "reasoning", m.Reasoning, false)
			}
			dst = append(dst, '}')
			dst = jsonfast.AppendRawOrNull(jsonfast.AppendKey(dst, "logprobs", false), c.Logprobs)
			dst = jsonfast.AppendStringMember(dst, "finish_reason", c.FinishReason, false)
			dst = append(dst, '}')
		}
		dst = append(dst, ']')
	}
	dst = jsonfast.AppendRawOrNull(jsonfast.AppendKey(dst, "usage", false), r.Usage)
	return append(dst, '}')
}
