package providers

import (
	"encoding/json"

	"github.com/modelgate/modelgate/internal/jsonfast"
)

// The fast path reads a Messages request in one walk of the document
// (after one jsonfast.Valid) with jsonfast.Reader, as the Gemini and
// Responses spokes do, and decodes every message's content blocks and the
// system prompt's in the same walk. encoding/json read the body once and
// then each content again (a validity scan and a reflective decode every
// time): over half of a translated Messages request's CPU. Anything the
// fast path does not read exactly as encoding/json would (a duplicate or
// case-folded key, a wrong type, content that is neither a string, a list
// of blocks nor null) sends the caller to the encoding/json path, whose
// results and errors it must equal (FuzzMessagesRequestFastPath).

// messagesRead is a Messages request with its contents decoded: in as
// json.Unmarshal fills it, and each content as anthropicBlocks reads it.
type messagesRead struct {
	in AnthropicRequest
	// system is in.System's blocks.
	system []AnthropicBlock
	// blocks holds every message's blocks in order: message i's are
	// blocks[ends[i-1]:ends[i]] (from 0 for the first).
	blocks []AnthropicBlock
	ends   []int
	// decoded: the fast path filled system, blocks and ends; otherwise
	// only in is filled (by encoding/json) and each content is decoded
	// when the translation reaches it, with its own error.
	decoded bool
}

// systemText is the system prompt's text, as anthropicSystemText reads it.
func (q *messagesRead) systemText() (string, error) {
	if !q.decoded {
		return anthropicSystemText(q.in.System)
	}
	return joinText(q.system), nil
}

// content returns message i's blocks, as anthropicBlocks reads them (into
// dst, a buffer the caller reuses, on the encoding/json path).
func (q *messagesRead) content(dst []AnthropicBlock, i int) ([]AnthropicBlock, error) {
	if !q.decoded {
		return anthropicBlocks(dst, q.in.Messages[i].Content, i)
	}
	start := 0
	if i > 0 {
		start = q.ends[i-1]
	}
	return q.blocks[start:q.ends[i]:q.ends[i]], nil
}

// readMessagesRequest fills q from body; false: use encoding/json instead.
func readMessagesRequest(body []byte, q *messagesRead) bool {
	if !jsonfast.Valid(body) {
		return false
	}
	r := jsonfast.NewReader(body)
	in := &q.in
	var mask uint32
	r.Object(jsonfast.SkipSpace(body, 0), func(k []byte, i int) int {
		switch string(k) {
		case "model":
			r.Seen(&mask, 1<<0)
			return r.Str(i, &in.Model)
		case "max_tokens":
			r.Seen(&mask, 1<<1)
			return r.Int(i, &in.MaxTokens)
		case "messages":
			r.Seen(&mask, 1<<2)
			if r.IsNull(i) {
				return i + len("null")
			}
			in.Messages = make([]AnthropicMessage, 0, 8)
			q.ends = make([]int, 0, 8)
			// A block or so a message: one allocation for a short
			// conversation, not one per doubling.
			q.blocks = make([]AnthropicBlock, 0, 4)
			return r.Array(i, func(j int) int {
				in.Messages = append(in.Messages, AnthropicMessage{})
				end := readAnthropicMessage(&r, j, &in.Messages[len(in.Messages)-1], &q.blocks)
				q.ends = append(q.ends, len(q.blocks))
				return end
			})
		case "system":
			r.Seen(&mask, 1<<3)
			return readAnthropicContent(&r, i, &in.System, &q.system)
		case "stop_sequences":
			r.Seen(&mask, 1<<4)
			return jsonfast.ListOf(&r, i, &in.StopSequences, r.Str)
		case "stream":
			r.Seen(&mask, 1<<5)
			return r.Bool(i, &in.Stream)
		case "temperature":
			r.Seen(&mask, 1<<6)
			return r.FloatPtr(i, &in.Temperature)
		case "top_p":
			r.Seen(&mask, 1<<7)
			return r.FloatPtr(i, &in.TopP)
		case "top_k":
			r.Seen(&mask, 1<<8)
			return r.IntPtr(i, &in.TopK)
		case "tools":
			r.Seen(&mask, 1<<9)
			return jsonfast.ListOf(&r, i, &in.Tools, func(j int, t *AnthropicTool) int { return readAnthropicTool(&r, j, t) })
		case "tool_choice":
			r.Seen(&mask, 1<<10)
			return jsonfast.OrNull(&r, i, &in.ToolChoice, func(j int, tc *AnthropicToolChoice) int { return readAnthropicToolChoice(&r, j, tc) })
		case "thinking":
			r.Seen(&mask, 1<<11)
			return r.Raw(i, &in.Thinking)
		case "metadata":
			r.Seen(&mask, 1<<12)
			return jsonfast.OrNull(&r, i, &in.Metadata, func(j int, m *AnthropicMetadata) int {
				var mm uint32
				return r.Object(j, func(k []byte, e int) int {
					if string(k) == "user_id" {
						r.Seen(&mm, 1)
						return r.Str(e, &m.UserID)
					}
					return r.Unknown(e, k, "user_id")
				})
			})
		case "service_tier":
			r.Seen(&mask, 1<<13)
			return r.Str(i, &in.ServiceTier)
		}
		return r.Unknown(i, k, "model", "max_tokens", "messages", "system", "stop_sequences", "stream",
			"temperature", "top_p", "top_k", "tools", "tool_choice", "thinking", "metadata", "service_tier")
	})
	if !r.OK() {
		*q = messagesRead{}
		return false
	}
	q.decoded = true
	return true
}

func readAnthropicMessage(r *jsonfast.Reader, i int, m *AnthropicMessage, blocks *[]AnthropicBlock) int {
	var mask uint32
	return r.Object(i, func(k []byte, j int) int {
		switch string(k) {
		case "role":
			r.Seen(&mask, 1<<0)
			return r.Str(j, &m.Role)
		case "content":
			r.Seen(&mask, 1<<1)
			return readAnthropicContent(r, j, &m.Content, blocks)
		}
		return r.Unknown(j, k, "role", "content")
	})
}

// readAnthropicContent keeps the content at i as raw (the request's
// json.RawMessage field) and appends its blocks as anthropicBlocks reads
// them: a string is one text block, null none, a list its blocks. Any
// other value gives the walk up: anthropicBlocks refuses it, and the
// encoding/json path says so in the request's own words.
func readAnthropicContent(r *jsonfast.Reader, i int, raw *json.RawMessage, blocks *[]AnthropicBlock) int {
	var end int
	switch r.Bytes()[i] {
	case 'n':
		end = i + len("null")
	case '"':
		var s string
		end = r.Str(i, &s)
		*blocks = append(*blocks, AnthropicBlock{Type: "text", Text: s})
	case '[':
		end = r.Array(i, func(j int) int {
			*blocks = append(*blocks, AnthropicBlock{})
			return readAnthropicBlock(r, j, &(*blocks)[len(*blocks)-1])
		})
	default:
		return r.Fail()
	}
	if r.OK() {
		b := r.Bytes()
		*raw = b[i:end:end]
	}
	return end
}

func readAnthropicBlock(r *jsonfast.Reader, i int, b *AnthropicBlock) int {
	var mask uint32
	return r.Object(i, func(k []byte, j int) int {
		switch string(k) {
		case "type":
			r.Seen(&mask, 1<<0)
			return r.Str(j, &b.Type)
		case "text":
			r.Seen(&mask, 1<<1)
			return r.Str(j, &b.Text)
		case "source":
			r.Seen(&mask, 1<<2)
			return jsonfast.OrNull(r, j, &b.Source, func(e int, s *AnthropicSource) int { return readAnthropicSource(r, e, s) })
		case "id":
			r.Seen(&mask, 1<<3)
			return r.Str(j, &b.ID)
		case "name":
			r.Seen(&mask, 1<<4)
			return r.Str(j, &b.Name)
		case "input":
			r.Seen(&mask, 1<<5)
			return r.Raw(j, &b.Input)
		case "tool_use_id":
			r.Seen(&mask, 1<<6)
			return r.Str(j, &b.ToolUseID)
		case "content":
			r.Seen(&mask, 1<<7)
			return r.Raw(j, &b.Content)
		case "is_error":
			r.Seen(&mask, 1<<8)
			return r.Bool(j, &b.IsError)
		case "tool_name":
			r.Seen(&mask, 1<<9)
			return r.Str(j, &b.ToolName)
		case "thinking":
			r.Seen(&mask, 1<<10)
			return r.Str(j, &b.Thinking)
		case "signature":
			r.Seen(&mask, 1<<11)
			return r.Str(j, &b.Signature)
		case "data":
			r.Seen(&mask, 1<<12)
			return r.Str(j, &b.Data)
		case "cache_control":
			r.Seen(&mask, 1<<13)
			return r.Raw(j, &b.CacheControl)
		}
		return r.Unknown(j, k, "type", "text", "source", "id", "name", "input", "tool_use_id", "content",
			"is_error", "tool_name", "thinking", "signature", "data", "cache_control")
	})
}

func readAnthropicSource(r *jsonfast.Reader, i int, s *AnthropicSource) int {
	var mask uint32
	return r.Object(i, func(k []byte, j int) int {
		switch string(k) {
		case "type":
			r.Seen(&mask, 1<<0)
			return r.Str(j, &s.Type)
		case "media_type":
			r.Seen(&mask, 1<<1)
			return r.Str(j, &s.MediaType)
		case "data":
			r.Seen(&mask, 1<<2)
			return r.Str(j, &s.Data)
		case "url":
			r.Seen(&mask, 1<<3)
			return r.Str(j, &s.URL)
		}
		return r.Unknown(j, k, "type", "media_type", "data", "url")
	})
}

func readAnthropicTool(r *jsonfast.Reader, i int, t *AnthropicTool) int {
	var mask uint32
	return r.Object(i, func(k []byte, j int) int {
		switch string(k) {
		case "type":
			r.Seen(&mask, 1<<0)
			return r.Str(j, &t.Type)
		case "name":
			r.Seen(&mask, 1<<1)
			return r.Str(j, &t.Name)
		case "description":
			r.Seen(&mask, 1<<2)
			return r.Str(j, &t.Description)
		case "input_schema":
			r.Seen(&mask, 1<<3)
			return r.Raw(j, &t.InputSchema)
		case "cache_control":
			r.Seen(&mask, 1<<4)
			return r.Raw(j, &t.CacheControl)
		}
		return r.Unknown(j, k, "type", "name", "description", "input_schema", "cache_control")
	})
}

func readAnthropicToolChoice(r *jsonfast.Reader, i int, tc *AnthropicToolChoice) int {
	var mask uint32
	return r.Object(i, func(k []byte, j int) int {
		switch string(k) {
		case "type":
			r.Seen(&mask, 1<<0)
			return r.Str(j, &tc.Type)
		case "name":
			r.Seen(&mask, 1<<1)
			return r.Str(j, &tc.Name)
		case "disable_parallel_tool_use":
			r.Seen(&mask, 1<<2)
			return r.Bool(j, &tc.DisableParallelToolUse)
		}
		return r.Unknown(j, k, "type", "name", "disable_parallel_tool_use")
	})
}
