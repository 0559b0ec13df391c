package providers

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/modelgate/modelgate/providers/internal/jsonfast"
)

// A reflection-free reader for chat requests, the input side of the
// encoders built on internal/jsonfast. It fills the same structs json.Unmarshal
// fills, for the shapes clients actually send; for anything where the two
// could differ (a duplicate or case-folded key, a value of the wrong type,
// a number out of range) it gives up and the caller runs json.Unmarshal,
// so results and error messages stay exactly those of encoding/json.
// Callers check the whole document with jsonfast.Valid first, which lets the
// reader skip values without validating them again.

// fastReader walks one validated document in a single pass; ok turns
// false at the first thing it does not handle. Every reader takes the
// index where a value starts and returns the index just past it.
type fastReader struct {
	b []byte
	// s is b as one string: plain string values are cut out of it, so
	// the whole document costs one allocation instead of one per string.
	s  string
	ok bool
}

func newFastReader(b []byte) fastReader { return fastReader{b: b, s: string(b), ok: true} }

// fail stops the walk; the returned index ends every loop.
func (r *fastReader) fail() int {
	r.ok = false
	return len(r.b)
}

// object calls fn for each member of the object at i with the key's raw
// bytes (without quotes) and the index of its value. Keys with escapes or
// non-ASCII bytes are refused because encoding/json matches them after
// unescaping and Unicode folding.
func (r *fastReader) object(i int, fn func(key []byte, j int) int) int {
	b := r.b
	if !r.ok || b[i] != '{' {
		return r.fail()
	}
	i = jsonfast.SkipSpace(b, i+1)
	if b[i] == '}' {
		return i + 1
	}
	for r.ok {
		kend, err := skipString(b, i)
		if err != nil {
			return r.fail()
		}
		key := b[i+1 : kend-1]
		for _, c := range key {
			if c == '\\' || c >= utf8.RuneSelf {
				return r.fail()
			}
		}
		i = jsonfast.SkipSpace(b, jsonfast.SkipSpace(b, kend)+1)
		i = jsonfast.SkipSpace(b, fn(key, i))
		if !r.ok {
			break
		}
		if b[i] == '}' {
			return i + 1
		}
		i = jsonfast.SkipSpace(b, i+1)
	}
	return len(b)
}

// array calls fn for each element of the array at i.
func (r *fastReader) array(i int, fn func(j int) int) int {
	b := r.b
	if !r.ok || b[i] != '[' {
		return r.fail()
	}
	i = jsonfast.SkipSpace(b, i+1)
	if b[i] == ']' {
		return i + 1
	}
	for r.ok {
		i = jsonfast.SkipSpace(b, fn(i))
		if !r.ok {
			break
		}
		if b[i] == ']' {
			return i + 1
		}
		i = jsonfast.SkipSpace(b, i+1)
	}
	return len(b)
}

func (r *fastReader) skip(i int) int {
	end, err := skipValue(r.b, i)
	if err != nil {
		return r.fail()
	}
	return end
}

// seen refuses a second member with the same key (bit), which
// encoding/json resolves by decoding into the same value again.
func (r *fastReader) seen(mask *uint32, bit uint32) {
	if *mask&bit != 0 {
		r.ok = false
	}
	*mask |= bit
}

// unknown skips a member the struct has no field for, unless its key
// differs from a known one only in case (encoding/json would match it).
func (r *fastReader) unknown(i int, key []byte, known ...string) int {
	for _, k := range known {
		if strings.EqualFold(string(key), k) {
			return r.fail()
		}
	}
	return r.skip(i)
}

func (r *fastReader) isNull(i int) bool { return r.b[i] == 'n' }

func (r *fastReader) raw(i int, dst *json.RawMessage) int {
	end := r.skip(i)
	if r.ok {
		*dst = r.b[i:end:end]
	}
	return end
}

// str reads a string; null leaves the field as it is, as json.Unmarshal
// does.
func (r *fastReader) str(i int, dst *string) int {
	switch r.b[i] {
	case 'n':
		return i + len("null")
	case '"':
	default:
		return r.fail()
	}
	end, err := skipString(r.b, i)
	if err != nil {
		return r.fail()
	}
	if inner := r.b[i+1 : end-1]; isPlainString(inner) {
		*dst = r.s[i+1 : end-1]
	} else {
		*dst = unescapeJSON(inner)
	}
	return end
}

func (r *fastReader) boolean(i int, dst *bool) int {
	switch r.b[i] {
	case 't':
		*dst = true
		return i + len("true")
	case 'f':
		*dst = false
		return i + len("false")
	case 'n':
		return i + len("null")
	}
	return r.fail()
}

func (r *fastReader) boolPtr(i int, dst **bool) int {
	if r.isNull(i) {
		*dst = nil
		return i + len("null")
	}
	b := new(bool)
	*dst = b
	return r.boolean(i, b)
}

// number returns the end of the number token at i, refusing other values.
func (r *fastReader) number(i int) int {
	b := r.b
	if c := b[i]; c != '-' && (c < '0' || c > '9') {
		return r.fail()
	}
	j := i + 1
	for j < len(b) && (b[j] >= '0' && b[j] <= '9' || b[j] == '.' || b[j] == 'e' || b[j] == 'E' || b[j] == '+' || b[j] == '-') {
		j++
	}
	return j
}

func (r *fastReader) intPtr(i int, dst **int64) int {
	if r.isNull(i) {
		*dst = nil
		return i + len("null")
	}
	end := r.number(i)
	if !r.ok {
		return end
	}
	n, err := strconv.ParseInt(string(r.b[i:end]), 10, 64)
	if err != nil {
		return r.fail()
	}
	*dst = &n
	return end
}

func (r *fastReader) floatPtr(i int, dst **float64) int {
	if r.isNull(i) {
		*dst = nil
		return i + len("null")
	}
	end := r.number(i)
	if !r.ok {
		return end
	}
	f, err := strconv.ParseFloat(string(r.b[i:end]), 64)
	if err != nil {
		return r.fail()
	}
	*dst = &f
	return end
}

// unquoteFast decodes a valid JSON string token. Tokens without escapes
// and with valid UTF-8, the common case, are copied as they are.
func unquoteFast(tok []byte) string {
	if inner := tok[1 : len(tok)-1]; !isPlainString(inner) {
		return unescapeJSON(inner)
	}
	return string(tok[1 : len(tok)-1])
}

// isPlainString reports whether the inside of a string token decodes to
// itself: no escapes, valid UTF-8.
func isPlainString(inner []byte) bool {
	for _, c := range inner {
		if c == '\\' || c >= utf8.RuneSelf {
			return bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner)
		}
	}
	return true
}

// unescapeJSON decodes the inside of a valid JSON string with
// encoding/json's rules: a lone or mismatched surrogate escape and every
// invalid UTF-8 byte become U+FFFD.
func unescapeJSON(s []byte) string {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRune(s[i:])
			out = utf8.AppendRune(out, r)
			i += size
			continue
		}
		if c != '\\' {
			out = append(out, c)
			i++
			continue
		}
		switch e := s[i+1]; e {
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r := hex4(s[i+2:])
			i += 6
			if utf16.IsSurrogate(r) {
				if len(s) >= i+6 && s[i] == '\\' && s[i+1] == 'u' {
					if d := utf16.DecodeRune(r, hex4(s[i+2:])); d != utf8.RuneError {
						out = utf8.AppendRune(out, d)
						i += 6
						continue
					}
				}
				r = utf8.RuneError
			}
			out = utf8.AppendRune(out, r)
			continue
		default: // '"', '\\', '/'
			out = append(out, e)
		}
		i += 2
	}
	return string(out)
}

// hex4 reads the four hex digits of a \u escape in a valid document.
func hex4(s []byte) rune {
	var r rune
	for _, c := range s[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		default:
			c = c - 'A' + 10
		}
		r = r<<4 | rune(c)
	}
	return r
}

// unmarshalOpenAIRequest decodes a chat completions body into in exactly
// as json.Unmarshal would, taking the fast path when it can.
func unmarshalOpenAIRequest(body []byte, in *OpenAIRequest) error {
	if jsonfast.Valid(body) && readOpenAIRequest(body, in) {
		return nil
	}
	*in = OpenAIRequest{}
	return json.Unmarshal(body, in)
}

func readOpenAIRequest(body []byte, in *OpenAIRequest) bool {
	r := newFastReader(body)
	var mask uint32
	r.object(jsonfast.SkipSpace(body, 0), func(k []byte, i int) int {
		switch string(k) {
		case "model":
			r.seen(&mask, 1<<0)
			return r.str(i, &in.Model)
		case "messages":
			r.seen(&mask, 1<<1)
			if r.isNull(i) {
				return i + len("null")
			}
			in.Messages = make([]OpenAIMessage, 0, 8)
			return r.array(i, func(i int) int {
				in.Messages = append(in.Messages, OpenAIMessage{})
				return r.message(i, &in.Messages[len(in.Messages)-1])
			})
		case "max_tokens":
			r.seen(&mask, 1<<2)
			return r.intPtr(i, &in.MaxTokens)
		case "max_completion_tokens":
			r.seen(&mask, 1<<3)
			return r.intPtr(i, &in.MaxCompletionTokens)
		case "stream":
			r.seen(&mask, 1<<4)
			return r.boolean(i, &in.Stream)
		case "stream_options":
			r.seen(&mask, 1<<5)
			if r.isNull(i) {
				return i + len("null")
			}
			in.StreamOptions = &OpenAIStreamOpts{}
			var m uint32
			return r.object(i, func(k []byte, i int) int {
				if string(k) == "include_usage" {
					r.seen(&m, 1)
					return r.boolean(i, &in.StreamOptions.IncludeUsage)
				}
				return r.unknown(i, k, "include_usage")
			})
		case "temperature":
			r.seen(&mask, 1<<6)
			return r.floatPtr(i, &in.Temperature)
		case "top_p":
			r.seen(&mask, 1<<7)
			return r.floatPtr(i, &in.TopP)
		case "n":
			r.seen(&mask, 1<<8)
			return r.intPtr(i, &in.N)
		case "stop":
			r.seen(&mask, 1<<9)
			return r.raw(i, &in.Stop)
		case "tools":
			r.seen(&mask, 1<<10)
			if r.isNull(i) {
				return i + len("null")
			}
			return r.array(i, func(i int) int {
				in.Tools = append(in.Tools, OpenAITool{})
				return r.tool(i, &in.Tools[len(in.Tools)-1])
			})
		case "tool_choice":
			r.seen(&mask, 1<<11)
			return r.raw(i, &in.ToolChoice)
		case "parallel_tool_calls":
			r.seen(&mask, 1<<12)
			return r.boolPtr(i, &in.ParallelToolCalls)
		case "user":
			r.seen(&mask, 1<<13)
			return r.str(i, &in.User)
		case "seed":
			r.seen(&mask, 1<<14)
			return r.intPtr(i, &in.Seed)
		case "frequency_penalty":
			r.seen(&mask, 1<<15)
			return r.floatPtr(i, &in.FrequencyPenalty)
		case "presence_penalty":
			r.seen(&mask, 1<<16)
			return r.floatPtr(i, &in.PresencePenalty)
		case "response_format":
			r.seen(&mask, 1<<17)
			return r.raw(i, &in.ResponseFormat)
		case "reasoning_effort":
			r.seen(&mask, 1<<18)
			return r.str(i, &in.ReasoningEffort)
		}
		return r.unknown(i, k, "model", "messages", "max_tokens", "max_completion_tokens", "stream",
			"stream_options", "temperature", "top_p", "n", "stop", "tools", "tool_choice",
			"parallel_tool_calls", "user", "seed", "frequency_penalty", "presence_penalty",
			"response_format", "reasoning_effort")
	})
	return r.ok
}

func (r *fastReader) message(i int, m *OpenAIMessage) int {
	var mask uint32
	return r.object(i, func(k []byte, i int) int {
		switch string(k) {
		case "role":
			r.seen(&mask, 1<<0)
			return r.str(i, &m.Role)
		case "content":
			r.seen(&mask, 1<<1)
			return r.raw(i, &m.Content)
		case "name":
			r.seen(&mask, 1<<2)
			return r.str(i, &m.Name)
		case "tool_calls":
			r.seen(&mask, 1<<3)
			if r.isNull(i) {
				return i + len("null")
			}
			return r.array(i, func(i int) int {
				m.ToolCalls = append(m.ToolCalls, OpenAIToolCall{})
				return r.toolCall(i, &m.ToolCalls[len(m.ToolCalls)-1])
			})
		case "tool_call_id":
			r.seen(&mask, 1<<4)
			return r.str(i, &m.ToolCallID)
		case "reasoning":
			r.seen(&mask, 1<<5)
			return r.str(i, &m.Reasoning)
		case "thinking_blocks":
			r.seen(&mask, 1<<6)
			return r.raw(i, &m.ThinkingBlocks)
		}
		return r.unknown(i, k, "role", "content", "name", "tool_calls", "tool_call_id", "reasoning", "thinking_blocks")
	})
}

func (r *fastReader) toolCall(i int, tc *OpenAIToolCall) int {
	var mask uint32
	return r.object(i, func(k []byte, i int) int {
		switch string(k) {
		case "index":
			r.seen(&mask, 1<<0)
			var n *int64
			end := r.intPtr(i, &n)
			if n != nil {
				tc.Index = new(int(*n))
			}
			return end
		case "id":
			r.seen(&mask, 1<<1)
			return r.str(i, &tc.ID)
		case "type":
			r.seen(&mask, 1<<2)
			return r.str(i, &tc.Type)
		case "function":
			r.seen(&mask, 1<<3)
			if r.isNull(i) {
				return i + len("null")
			}
			var fm uint32
			return r.object(i, func(k []byte, i int) int {
				switch string(k) {
				case "name":
					r.seen(&fm, 1<<0)
					return r.str(i, &tc.Function.Name)
				case "arguments":
					r.seen(&fm, 1<<1)
					return r.str(i, &tc.Function.Arguments)
				}
				return r.unknown(i, k, "name", "arguments")
			})
		case "extra_content":
			r.seen(&mask, 1<<4)
			return r.raw(i, &tc.ExtraContent)
		}
		return r.unknown(i, k, "index", "id", "type", "function", "extra_content")
	})
}

func (r *fastReader) tool(i int, t *OpenAITool) int {
	var mask uint32
	return r.object(i, func(k []byte, i int) int {
		switch string(k) {
		case "type":
			r.seen(&mask, 1<<0)
			return r.str(i, &t.Type)
		case "function":
			r.seen(&mask, 1<<1)
			if r.isNull(i) {
				return i + len("null")
			}
			f := &t.Function
			var fm uint32
			return r.object(i, func(k []byte, i int) int {
				switch string(k) {
				case "name":
					r.seen(&fm, 1<<0)
					return r.str(i, &f.Name)
				case "description":
					r.seen(&fm, 1<<1)
					return r.str(i, &f.Description)
				case "parameters":
					r.seen(&fm, 1<<2)
					return r.raw(i, &f.Parameters)
				case "strict":
					r.seen(&fm, 1<<3)
					return r.boolPtr(i, &f.Strict)
				}
				return r.unknown(i, k, "name", "description", "parameters", "strict")
			})
		}
		return r.unknown(i, k, "type", "function")
	})
}

// readContentParts decodes an array of content parts the way
// json.Unmarshal into []OpenAIContentPart would; ok is false when the
// caller must fall back to it. raw is part of a validated document.
func readContentParts(raw json.RawMessage) ([]OpenAIContentPart, bool) {
	r := newFastReader(raw)
	start := jsonfast.SkipSpace(raw, 0)
	if start >= len(raw) || raw[start] != '[' {
		return nil, false
	}
	parts := make([]OpenAIContentPart, 0, 2)
	r.array(start, func(i int) int {
		if r.isNull(i) {
			return r.fail()
		}
		parts = append(parts, OpenAIContentPart{})
		p := &parts[len(parts)-1]
		var mask uint32
		return r.object(i, func(k []byte, i int) int {
			switch string(k) {
			case "type":
				r.seen(&mask, 1<<0)
				return r.str(i, &p.Type)
			case "text":
				r.seen(&mask, 1<<1)
				return r.str(i, &p.Text)
			case "image_url":
				r.seen(&mask, 1<<2)
				if r.isNull(i) {
					return i + len("null")
				}
				p.ImageURL = &OpenAIImageURL{}
				var um uint32
				return r.object(i, func(k []byte, i int) int {
					switch string(k) {
					case "url":
						r.seen(&um, 1<<0)
						return r.str(i, &p.ImageURL.URL)
					case "detail":
						r.seen(&um, 1<<1)
						return r.str(i, &p.ImageURL.Detail)
					}
					return r.unknown(i, k, "url", "detail")
				})
			}
			return r.unknown(i, k, "type", "text", "image_url")
		})
	})
	return parts, r.ok
}
