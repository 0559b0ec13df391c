package providers

import (
	"encoding/json"

	"github.com/modelgate/modelgate/internal/jsonfast"
)

// The chat request's per-type readers: plain functions over
// jsonfast.Reader, one per struct, kept here beside the structs they fill
// so a field added to a struct and not to its reader is caught next door
// (TestOpenAIRequestReaderHandlesEveryField). Each takes the index where
// its value starts and returns the index just past it, as the Reader's
// own methods do; anything the Reader refuses sends the caller to
// json.Unmarshal.

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
	r := jsonfast.NewReader(body)
	var mask uint32
	r.Object(jsonfast.SkipSpace(body, 0), func(k []byte, i int) int {
		switch string(k) {
		case "model":
			r.Seen(&mask, 1<<0)
			return r.Str(i, &in.Model)
		case "messages":
			r.Seen(&mask, 1<<1)
			if r.IsNull(i) {
				return i + len("null")
			}
			in.Messages = make([]OpenAIMessage, 0, 8)
			return r.Array(i, func(i int) int {
				in.Messages = append(in.Messages, OpenAIMessage{})
				return readOpenAIMessage(&r, i, &in.Messages[len(in.Messages)-1])
			})
		case "max_tokens":
			r.Seen(&mask, 1<<2)
			return r.IntPtr(i, &in.MaxTokens)
		case "max_completion_tokens":
			r.Seen(&mask, 1<<3)
			return r.IntPtr(i, &in.MaxCompletionTokens)
		case "stream":
			r.Seen(&mask, 1<<4)
			return r.Bool(i, &in.Stream)
		case "stream_options":
			r.Seen(&mask, 1<<5)
			if r.IsNull(i) {
				return i + len("null")
			}
			in.StreamOptions = &OpenAIStreamOpts{}
			var m uint32
			return r.Object(i, func(k []byte, i int) int {
				if string(k) == "include_usage" {
					r.Seen(&m, 1)
					return r.Bool(i, &in.StreamOptions.IncludeUsage)
				}
				return r.Unknown(i, k, "include_usage")
			})
		case "temperature":
			r.Seen(&mask, 1<<6)
			return r.FloatPtr(i, &in.Temperature)
		case "top_p":
			r.Seen(&mask, 1<<7)
			return r.FloatPtr(i, &in.TopP)
		case "n":
			r.Seen(&mask, 1<<8)
			return r.IntPtr(i, &in.N)
		case "stop":
			r.Seen(&mask, 1<<9)
			return r.Raw(i, &in.Stop)
		case "tools":
			r.Seen(&mask, 1<<10)
			if r.IsNull(i) {
				return i + len("null")
			}
			return r.Array(i, func(i int) int {
				in.Tools = append(in.Tools, OpenAITool{})
				return readOpenAITool(&r, i, &in.Tools[len(in.Tools)-1])
			})
		case "tool_choice":
			r.Seen(&mask, 1<<11)
			return r.Raw(i, &in.ToolChoice)
		case "parallel_tool_calls":
			r.Seen(&mask, 1<<12)
			return r.BoolPtr(i, &in.ParallelToolCalls)
		case "user":
			r.Seen(&mask, 1<<13)
			return r.Str(i, &in.User)
		case "seed":
			r.Seen(&mask, 1<<14)
			return r.IntPtr(i, &in.Seed)
		case "frequency_penalty":
			r.Seen(&mask, 1<<15)
			return r.FloatPtr(i, &in.FrequencyPenalty)
		case "presence_penalty":
			r.Seen(&mask, 1<<16)
			return r.FloatPtr(i, &in.PresencePenalty)
		case "response_format":
			r.Seen(&mask, 1<<17)
			return r.Raw(i, &in.ResponseFormat)
		case "reasoning_effort":
			r.Seen(&mask, 1<<18)
			return r.Str(i, &in.ReasoningEffort)
		}
		return r.Unknown(i, k, "model", "messages", "max_tokens", "max_completion_tokens", "stream",
			"stream_options", "temperature", "top_p", "n", "stop", "tools", "tool_choice",
			"parallel_tool_calls", "user", "seed", "frequency_penalty", "presence_penalty",
			"response_format", "reasoning_effort")
	})
	return r.OK()
}

func readOpenAIMessage(r *jsonfast.Reader, i int, m *OpenAIMessage) int {
	var mask uint32
	return r.Object(i, func(k []byte, i int) int {
		switch string(k) {
		case "role":
			r.Seen(&mask, 1<<0)
			return r.Str(i, &m.Role)
		case "content":
			r.Seen(&mask, 1<<1)
			return r.Raw(i, &m.Content)
		case "name":
			r.Seen(&mask, 1<<2)
			return r.Str(i, &m.Name)
		case "tool_calls":
			r.Seen(&mask, 1<<3)
			if r.IsNull(i) {
				return i + len("null")
			}
			return r.Array(i, func(i int) int {
				m.ToolCalls = append(m.ToolCalls, OpenAIToolCall{})
				return readOpenAIToolCall(r, i, &m.ToolCalls[len(m.ToolCalls)-1])
			})
		case "tool_call_id":
			r.Seen(&mask, 1<<4)
			return r.Str(i, &m.ToolCallID)
		case "reasoning":
			r.Seen(&mask, 1<<5)
			return r.Str(i, &m.Reasoning)
		case "thinking_blocks":
			r.Seen(&mask, 1<<6)
			return r.Raw(i, &m.ThinkingBlocks)
		}
		return r.Unknown(i, k, "role", "content", "name", "tool_calls", "tool_call_id", "reasoning", "thinking_blocks")
	})
}

func readOpenAIToolCall(r *jsonfast.Reader, i int, tc *OpenAIToolCall) int {
	var mask uint32
	return r.Object(i, func(k []byte, i int) int {
		switch string(k) {
		case "index":
			r.Seen(&mask, 1<<0)
			var n *int64
			end := r.IntPtr(i, &n)
			if n != nil {
				tc.Index = new(int(*n))
			}
			return end
		case "id":
			r.Seen(&mask, 1<<1)
			return r.Str(i, &tc.ID)
		case "type":
			r.Seen(&mask, 1<<2)
			return r.Str(i, &tc.Type)
		case "function":
			r.Seen(&mask, 1<<3)
			if r.IsNull(i) {
				return i + len("null")
			}
			var fm uint32
			return r.Object(i, func(k []byte, i int) int {
				switch string(k) {
				case "name":
					r.Seen(&fm, 1<<0)
					return r.Str(i, &tc.Function.Name)
				case "arguments":
					r.Seen(&fm, 1<<1)
					return r.Str(i, &tc.Function.Arguments)
				}
				return r.Unknown(i, k, "name", "arguments")
			})
		case "extra_content":
			r.Seen(&mask, 1<<4)
			return r.Raw(i, &tc.ExtraContent)
		}
		return r.Unknown(i, k, "index", "id", "type", "function", "extra_content")
	})
}

func readOpenAITool(r *jsonfast.Reader, i int, t *OpenAITool) int {
	var mask uint32
	return r.Object(i, func(k []byte, i int) int {
		switch string(k) {
		case "type":
			r.Seen(&mask, 1<<0)
			return r.Str(i, &t.Type)
		case "function":
			r.Seen(&mask, 1<<1)
			if r.IsNull(i) {
				return i + len("null")
			}
			f := &t.Function
			var fm uint32
			return r.Object(i, func(k []byte, i int) int {
				switch string(k) {
				case "name":
					r.Seen(&fm, 1<<0)
					return r.Str(i, &f.Name)
				case "description":
					r.Seen(&fm, 1<<1)
					return r.Str(i, &f.Description)
				case "parameters":
					r.Seen(&fm, 1<<2)
					return r.Raw(i, &f.Parameters)
				case "strict":
					r.Seen(&fm, 1<<3)
					return r.BoolPtr(i, &f.Strict)
				}
				return r.Unknown(i, k, "name", "description", "parameters", "strict")
			})
		}
		return r.Unknown(i, k, "type", "function")
	})
}

// readContentParts decodes an array of content parts the way
// json.Unmarshal into []OpenAIContentPart would; ok is false when the
// caller must fall back to it. raw is part of a validated document.
func readContentParts(raw json.RawMessage) ([]OpenAIContentPart, bool) {
	r := jsonfast.NewReader(raw)
	start := jsonfast.SkipSpace(raw, 0)
	if start >= len(raw) || raw[start] != '[' {
		return nil, false
	}
	parts := make([]OpenAIContentPart, 0, 2)
	r.Array(start, func(i int) int {
		if r.IsNull(i) {
			return r.Fail()
		}
		parts = append(parts, OpenAIContentPart{})
		p := &parts[len(parts)-1]
		var mask uint32
		return r.Object(i, func(k []byte, i int) int {
			switch string(k) {
			case "type":
				r.Seen(&mask, 1<<0)
				return r.Str(i, &p.Type)
			case "text":
				r.Seen(&mask, 1<<1)
				return r.Str(i, &p.Text)
			case "image_url":
				r.Seen(&mask, 1<<2)
				if r.IsNull(i) {
					return i + len("null")
				}
				p.ImageURL = &OpenAIImageURL{}
				var um uint32
				return r.Object(i, func(k []byte, i int) int {
					switch string(k) {
					case "url":
						r.Seen(&um, 1<<0)
						return r.Str(i, &p.ImageURL.URL)
					case "detail":
						r.Seen(&um, 1<<1)
						return r.Str(i, &p.ImageURL.Detail)
					}
					return r.Unknown(i, k, "url", "detail")
				})
			}
			return r.Unknown(i, k, "type", "text", "image_url")
		})
	})
	return parts, r.OK()
}
