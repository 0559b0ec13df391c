package providers

import (
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"
)

// A reflection-free reader for OpenAI chat requests, the input side of the
// encoders in json_encode.go. It fills the same structs json.Unmarshal
// fills, for the shapes clients actually send; for anything where the two
// could differ (a duplicate or case-folded key, a value of the wrong type,
// a number out of range) it gives up and the caller runs json.Unmarshal,
// so results and error messages stay exactly those of encoding/json.
// Callers check the whole document with json.Valid first, which lets the
// reader skip values without validating them again.

// fastReader walks one validated document; ok turns false at the first
// thing it does not handle.
type fastReader struct {
	b  []byte
	ok bool
}

// members calls fn for each member of the object at v with the key's raw
// bytes (without quotes). Keys with escapes or non-ASCII bytes are refused
// because encoding/json matches them after unescaping and Unicode folding.
func (r *fastReader) members(v span, fn func(key []byte, v span)) {
	if !r.ok || r.b[v.start] != '{' {
		r.ok = false
		return
	}
	_, err := eachMember(r.b, v.start, func(k []byte, v span) {
		if !r.ok {
			return
		}
		k = k[1 : len(k)-1]
		for _, c := range k {
			if c == '\\' || c >= utf8.RuneSelf {
				r.ok = false
				return
			}
		}
		fn(k, v)
	})
	if err != nil {
		r.ok = false
	}
}

// elements calls fn for each element of the array at v.
func (r *fastReader) elements(v span, fn func(v span)) {
	if !r.ok || r.b[v.start] != '[' {
		r.ok = false
		return
	}
	b := r.b
	i := skipSpace(b, v.start+1)
	if b[i] == ']' {
		return
	}
	for r.ok {
		end, err := skipValue(b, i)
		if err != nil {
			r.ok = false
			return
		}
		fn(span{i, end})
		i = skipSpace(b, end)
		if b[i] == ']' {
			return
		}
		i = skipSpace(b, i+1)
	}
}

// seen refuses a second member with the same key (bit) or an unknown key
// that differs from a known one only in case, both of which encoding/json
// resolves in ways not worth copying.
func (r *fastReader) seen(mask *uint32, bit uint32) {
	if *mask&bit != 0 {
		r.ok = false
	}
	*mask |= bit
}

func (r *fastReader) unknown(key []byte, known ...string) {
	for _, k := range known {
		if strings.EqualFold(string(key), k) {
			r.ok = false
			return
		}
	}
}

func (r *fastReader) isNull(v span) bool { return r.b[v.start] == 'n' }

func (r *fastReader) raw(v span) json.RawMessage { return r.b[v.start:v.end:v.end] }

// str reads a string member; null leaves the field as it is, as
// json.Unmarshal does.
func (r *fastReader) str(v span, dst *string) {
	tok := r.b[v.start:v.end]
	switch tok[0] {
	case 'n':
		return
	case '"':
	default:
		r.ok = false
		return
	}
	s, ok := unquoteFast(tok)
	if !ok {
		r.ok = false
		return
	}
	*dst = s
}

func (r *fastReader) boolean(v span, dst *bool) {
	switch r.b[v.start] {
	case 't':
		*dst = true
	case 'f':
		*dst = false
	case 'n':
	default:
		r.ok = false
	}
}

func (r *fastReader) boolPtr(v span, dst **bool) {
	if r.isNull(v) {
		*dst = nil
		return
	}
	var b bool
	r.boolean(v, &b)
	*dst = &b
}

func (r *fastReader) intPtr(v span, dst **int64) {
	if r.isNull(v) {
		*dst = nil
		return
	}
	n, err := strconv.ParseInt(string(r.b[v.start:v.end]), 10, 64)
	if err != nil {
		r.ok = false
		return
	}
	*dst = &n
}

func (r *fastReader) floatPtr(v span, dst **float64) {
	c := r.b[v.start]
	if c == 'n' {
		*dst = nil
		return
	}
	if c != '-' && (c < '0' || c > '9') {
		r.ok = false
		return
	}
	f, err := strconv.ParseFloat(string(r.b[v.start:v.end]), 64)
	if err != nil {
		r.ok = false
		return
	}
	*dst = &f
}

// unquoteFast decodes a valid JSON string token. Tokens without escapes
// and with valid UTF-8 are copied as they are; the rest go through
// encoding/json, which owns the rules for bad surrogates and bytes.
func unquoteFast(tok []byte) (string, bool) {
	inner := tok[1 : len(tok)-1]
	ascii := true
	for _, c := range inner {
		if c == '\\' {
			var s string
			if json.Unmarshal(tok, &s) != nil {
				return "", false
			}
			return s, true
		}
		if c >= utf8.RuneSelf {
			ascii = false
		}
	}
	if !ascii && !utf8.Valid(inner) {
		var s string
		if json.Unmarshal(tok, &s) != nil {
			return "", false
		}
		return s, true
	}
	return string(inner), true
}

// unmarshalOpenAIRequest decodes a chat completions body into in exactly
// as json.Unmarshal would, taking the fast path when it can.
func unmarshalOpenAIRequest(body []byte, in *OpenAIRequest) error {
	if json.Valid(body) && readOpenAIRequest(body, in) {
		return nil
	}
	*in = OpenAIRequest{}
	return json.Unmarshal(body, in)
}

func readOpenAIRequest(body []byte, in *OpenAIRequest) bool {
	start := skipSpace(body, 0)
	r := fastReader{b: body, ok: true}
	var mask uint32
	r.members(span{start, len(body)}, func(k []byte, v span) {
		switch string(k) {
		case "model":
			r.seen(&mask, 1<<0)
			r.str(v, &in.Model)
		case "messages":
			r.seen(&mask, 1<<1)
			if r.isNull(v) {
				return
			}
			r.elements(v, func(v span) {
				in.Messages = append(in.Messages, OpenAIMessage{})
				r.message(v, &in.Messages[len(in.Messages)-1])
			})
		case "max_tokens":
			r.seen(&mask, 1<<2)
			r.intPtr(v, &in.MaxTokens)
		case "max_completion_tokens":
			r.seen(&mask, 1<<3)
			r.intPtr(v, &in.MaxCompletionTokens)
		case "stream":
			r.seen(&mask, 1<<4)
			r.boolean(v, &in.Stream)
		case "stream_options":
			r.seen(&mask, 1<<5)
			if r.isNull(v) {
				return
			}
			in.StreamOptions = &OpenAIStreamOpts{}
			var m uint32
			r.members(v, func(k []byte, v span) {
				if string(k) == "include_usage" {
					r.seen(&m, 1)
					r.boolean(v, &in.StreamOptions.IncludeUsage)
					return
				}
				r.unknown(k, "include_usage")
			})
		case "temperature":
			r.seen(&mask, 1<<6)
			r.floatPtr(v, &in.Temperature)
		case "top_p":
			r.seen(&mask, 1<<7)
			r.floatPtr(v, &in.TopP)
		case "n":
			r.seen(&mask, 1<<8)
			r.intPtr(v, &in.N)
		case "stop":
			r.seen(&mask, 1<<9)
			in.Stop = r.raw(v)
		case "tools":
			r.seen(&mask, 1<<10)
			if r.isNull(v) {
				return
			}
			r.elements(v, func(v span) {
				in.Tools = append(in.Tools, OpenAITool{})
				r.tool(v, &in.Tools[len(in.Tools)-1])
			})
		case "tool_choice":
			r.seen(&mask, 1<<11)
			in.ToolChoice = r.raw(v)
		case "parallel_tool_calls":
			r.seen(&mask, 1<<12)
			r.boolPtr(v, &in.ParallelToolCalls)
		case "user":
			r.seen(&mask, 1<<13)
			r.str(v, &in.User)
		case "seed":
			r.seen(&mask, 1<<14)
			r.intPtr(v, &in.Seed)
		case "frequency_penalty":
			r.seen(&mask, 1<<15)
			r.floatPtr(v, &in.FrequencyPenalty)
		case "presence_penalty":
			r.seen(&mask, 1<<16)
			r.floatPtr(v, &in.PresencePenalty)
		case "response_format":
			r.seen(&mask, 1<<17)
			in.ResponseFormat = r.raw(v)
		case "reasoning_effort":
			r.seen(&mask, 1<<18)
			r.str(v, &in.ReasoningEffort)
		default:
			r.unknown(k, "model", "messages", "max_tokens", "max_completion_tokens", "stream",
				"stream_options", "temperature", "top_p", "n", "stop", "tools", "tool_choice",
				"parallel_tool_calls", "user", "seed", "frequency_penalty", "presence_penalty",
				"response_format", "reasoning_effort")
		}
	})
	return r.ok
}

func (r *fastReader) message(v span, m *OpenAIMessage) {
	var mask uint32
	r.members(v, func(k []byte, v span) {
		switch string(k) {
		case "role":
			r.seen(&mask, 1<<0)
			r.str(v, &m.Role)
		case "content":
			r.seen(&mask, 1<<1)
			m.Content = r.raw(v)
		case "name":
			r.seen(&mask, 1<<2)
			r.str(v, &m.Name)
		case "tool_calls":
			r.seen(&mask, 1<<3)
			if r.isNull(v) {
				return
			}
			r.elements(v, func(v span) {
				m.ToolCalls = append(m.ToolCalls, OpenAIToolCall{})
				r.toolCall(v, &m.ToolCalls[len(m.ToolCalls)-1])
			})
		case "tool_call_id":
			r.seen(&mask, 1<<4)
			r.str(v, &m.ToolCallID)
		case "reasoning":
			r.seen(&mask, 1<<5)
			r.str(v, &m.Reasoning)
		default:
			r.unknown(k, "role", "content", "name", "tool_calls", "tool_call_id", "reasoning")
		}
	})
}

func (r *fastReader) toolCall(v span, tc *OpenAIToolCall) {
	var mask uint32
	r.members(v, func(k []byte, v span) {
		switch string(k) {
		case "index":
			r.seen(&mask, 1<<0)
			var n *int64
			r.intPtr(v, &n)
			if n != nil {
				i := int(*n)
				if int64(i) != *n {
					r.ok = false
				}
				tc.Index = &i
			}
		case "id":
			r.seen(&mask, 1<<1)
			r.str(v, &tc.ID)
		case "type":
			r.seen(&mask, 1<<2)
			r.str(v, &tc.Type)
		case "function":
			r.seen(&mask, 1<<3)
			if r.isNull(v) {
				return
			}
			var fm uint32
			r.members(v, func(k []byte, v span) {
				switch string(k) {
				case "name":
					r.seen(&fm, 1<<0)
					r.str(v, &tc.Function.Name)
				case "arguments":
					r.seen(&fm, 1<<1)
					r.str(v, &tc.Function.Arguments)
				default:
					r.unknown(k, "name", "arguments")
				}
			})
		default:
			r.unknown(k, "index", "id", "type", "function")
		}
	})
}

func (r *fastReader) tool(v span, t *OpenAITool) {
	var mask uint32
	r.members(v, func(k []byte, v span) {
		switch string(k) {
		case "type":
			r.seen(&mask, 1<<0)
			r.str(v, &t.Type)
		case "function":
			r.seen(&mask, 1<<1)
			if r.isNull(v) {
				return
			}
			f := &t.Function
			var fm uint32
			r.members(v, func(k []byte, v span) {
				switch string(k) {
				case "name":
					r.seen(&fm, 1<<0)
					r.str(v, &f.Name)
				case "description":
					r.seen(&fm, 1<<1)
					r.str(v, &f.Description)
				case "parameters":
					r.seen(&fm, 1<<2)
					f.Parameters = r.raw(v)
				case "strict":
					r.seen(&fm, 1<<3)
					r.boolPtr(v, &f.Strict)
				default:
					r.unknown(k, "name", "description", "parameters", "strict")
				}
			})
		default:
			r.unknown(k, "type", "function")
		}
	})
}

// readContentParts decodes an array of content parts the way
// json.Unmarshal into []OpenAIContentPart would; ok is false when the
// caller must fall back to it. raw is part of a validated document.
func readContentParts(raw json.RawMessage) ([]OpenAIContentPart, bool) {
	r := fastReader{b: raw, ok: true}
	start := skipSpace(raw, 0)
	if start >= len(raw) || raw[start] != '[' {
		return nil, false
	}
	parts := []OpenAIContentPart{}
	r.elements(span{start, len(raw)}, func(v span) {
		if r.isNull(v) {
			r.ok = false
			return
		}
		parts = append(parts, OpenAIContentPart{})
		p := &parts[len(parts)-1]
		var mask uint32
		r.members(v, func(k []byte, v span) {
			switch string(k) {
			case "type":
				r.seen(&mask, 1<<0)
				r.str(v, &p.Type)
			case "text":
				r.seen(&mask, 1<<1)
				r.str(v, &p.Text)
			case "image_url":
				r.seen(&mask, 1<<2)
				if r.isNull(v) {
					return
				}
				p.ImageURL = &OpenAIImageURL{}
				var um uint32
				r.members(v, func(k []byte, v span) {
					switch string(k) {
					case "url":
						r.seen(&um, 1<<0)
						r.str(v, &p.ImageURL.URL)
					case "detail":
						r.seen(&um, 1<<1)
						r.str(v, &p.ImageURL.Detail)
					default:
						r.unknown(k, "url", "detail")
					}
				})
			default:
				r.unknown(k, "type", "text", "image_url")
			}
		})
	})
	return parts, r.ok
}
