package providers

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/modelgate/modelgate/internal/jsonfast"
)

// OpenAI chunks in, Anthropic events out (docs/wire-formats.md §5.5).

// chatInChunk is the part of a chat chunk the Messages spoke's stream
// reads: unlike chatAnswer it keeps the id, the model and an in-band error.
type chatInChunk struct {
	ID          string `json:"id"`
	Model       string `json:"model"`
	ServiceTier string `json:"service_tier"`
	Choices     []struct {
		Delta struct {
			Content   string           `json:"content"`
			Refusal   string           `json:"refusal"`
			ToolCalls []OpenAIToolCall `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *OpenAIUsage `json:"usage"`
	Error *struct {
		Message string `json:"message"`
		Type    string `json:"type"`
	} `json:"error"`
}

const (
	blockNone = iota
	blockText
	blockTool
)

// openAIToAnthropicStream turns OpenAI chunks into Anthropic events.
type openAIToAnthropicStream struct {
	model    string
	started  bool
	done     bool
	next     int // index of the next content block
	open     int // blockNone, blockText or blockTool
	openTool int // OpenAI tool index of the open tool block
	seen     []bool
	stop     string
	usage    Usage
	chunk    chatInChunk
	// sawEnd: the upstream sent [DONE].
	sawEnd bool
}

// NewOpenAIToAnthropicStream translates an OpenAI upstream stream for an
// Anthropic client. model is the name reported in message_start (the
// alias the client asked for); empty means the upstream's.
func NewOpenAIToAnthropicStream(model string) StreamTranslator {
	return &openAIToAnthropicStream{model: model}
}

func (t *openAIToAnthropicStream) Usage() Usage { return t.usage }

func appendEventHead(dst []byte, name string) []byte {
	dst = append(dst, "event: "...)
	dst = append(dst, name...)
	dst = append(dst, "\ndata: "...)
	return dst
}

func (t *openAIToAnthropicStream) start(dst []byte, id, model string) []byte {
	t.started = true
	if t.model != "" {
		model = t.model
	}
	dst = appendEventHead(dst, "message_start")
	dst = append(dst, `{"type":"message_start","message":{"id":`...)
	dst = jsonfast.AppendJSONString(dst, anthropicMessageID(id))
	dst = append(dst, `,"type":"message","role":"assistant","content":[],"model":`...)
	dst = jsonfast.AppendJSONString(dst, model)
	// Input is unknown until the usage chunk; the real figures go out in
	// message_delta, which newer clients read.
	dst = append(dst, `,"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":0}}}`+"\n\n"...)
	return append(dst, "event: ping\ndata: {\"type\":\"ping\"}\n\n"...)
}

func (t *openAIToAnthropicStream) closeBlock(dst []byte) []byte {
	if t.open == blockNone {
		return dst
	}
	dst = appendEventHead(dst, "content_block_stop")
	dst = append(dst, `{"type":"content_block_stop","index":`...)
	dst = strconv.AppendInt(dst, int64(t.next-1), 10)
	t.open = blockNone
	return append(dst, "}\n\n"...)
}

func (t *openAIToAnthropicStream) blockStart(dst []byte) []byte {
	dst = appendEventHead(dst, "content_block_start")
	dst = append(dst, `{"type":"content_block_start","index":`...)
	dst = strconv.AppendInt(dst, int64(t.next), 10)
	t.next++
	return append(dst, `,"content_block":`...)
}

func (t *openAIToAnthropicStream) deltaHead(dst []byte) []byte {
	dst = appendEventHead(dst, "content_block_delta")
	dst = append(dst, `{"type":"content_block_delta","index":`...)
	dst = strconv.AppendInt(dst, int64(t.next-1), 10)
	return dst
}

// textDeltaHead opens a text block if none is open and starts a
// text_delta event; the JSON string and closeDelta follow.
func (t *openAIToAnthropicStream) textDeltaHead(dst []byte) []byte {
	if t.open != blockText {
		dst = t.closeBlock(dst)
		dst = t.blockStart(dst)
		dst = append(dst, `{"type":"text","text":""}}`+"\n\n"...)
		t.open = blockText
	}
	dst = t.deltaHead(dst)
	return append(dst, `,"delta":{"type":"text_delta","text":`...)
}

func closeDelta(dst []byte) []byte { return append(dst, "}}\n\n"...) }

func (t *openAIToAnthropicStream) appendText(dst []byte, text string) []byte {
	dst = t.textDeltaHead(dst)
	dst = jsonfast.AppendJSONString(dst, text)
	return closeDelta(dst)
}

// fastChunk handles plain content chunks, nearly all of a stream, by
// copying the upstream's already-encoded content string. Anything else
// (tool calls, a finish reason, usage, errors, several choices) returns
// ok false for the full path.
func (t *openAIToAnthropicStream) fastChunk(dst, data []byte) ([]byte, bool) {
	var choices jsonfast.Span
	hasChoices, other := false, false
	_, err := jsonfast.EachMember(data, 0, func(k []byte, v jsonfast.Span) {
		switch {
		case jsonfast.KeyIs(k, "choices"):
			choices, hasChoices = v, true
		case jsonfast.KeyIs(k, "usage"), jsonfast.KeyIs(k, "error"):
			other = other || !v.IsNull(data)
		}
	})
	if err != nil || !hasChoices || other || data[choices.Start] != '[' {
		return dst, false
	}
	first := jsonfast.SkipSpace(data, choices.Start+1)
	if first >= choices.End || data[first] != '{' {
		return dst, false
	}
	var delta jsonfast.Span
	hasDelta := false
	end, err := jsonfast.EachMember(data, first, func(k []byte, v jsonfast.Span) {
		switch {
		case jsonfast.KeyIs(k, "delta"):
			delta, hasDelta = v, true
		case jsonfast.KeyIs(k, "finish_reason"):
			other = other || !v.IsNull(data)
		}
	})
	if err != nil || other || !hasDelta || data[delta.Start] != '{' || jsonfast.SkipSpace(data, end) != choices.End-1 {
		return dst, false
	}
	var content jsonfast.Span
	hasContent := false
	_, err = jsonfast.EachMember(data, delta.Start, func(k []byte, v jsonfast.Span) {
		switch {
		case jsonfast.KeyIs(k, "content"):
			content, hasContent = v, true
		case jsonfast.KeyIs(k, "tool_calls"):
			other = other || !v.IsNull(data) && !isEmptyArray(data[v.Start:v.End])
		case jsonfast.KeyIs(k, "refusal"):
			other = other || !v.IsNull(data)
		}
	})
	if err != nil || other {
		return dst, false
	}
	if !hasContent || content.IsNull(data) {
		return dst, true
	}
	tok := data[content.Start:content.End]
	if !jsonfast.ValidStringToken(tok) {
		return dst, false
	}
	if len(tok) == 2 {
		return dst, true
	}
	dst = t.textDeltaHead(dst)
	dst = append(dst, tok...)
	return closeDelta(dst), true
}

func (t *openAIToAnthropicStream) appendToolCall(dst []byte, tc *OpenAIToolCall, pos int) []byte {
	idx := pos
	if tc.Index != nil {
		idx = *tc.Index
	}
	if idx < 0 || idx > 1<<16 {
		return dst
	}
	if t.open != blockTool || t.openTool != idx {
		for len(t.seen) <= idx {
			t.seen = append(t.seen, false)
		}
		if t.seen[idx] {
			// A late fragment of a call whose block is already closed:
			// Anthropic blocks cannot reopen, so it is dropped.
			return dst
		}
		t.seen[idx] = true
		dst = t.closeBlock(dst)
		id := sanitizeID(tc.ID)
		if id == "" {
			id = newToolUseID()
		}
		dst = t.blockStart(dst)
		dst = append(dst, `{"type":"tool_use","id":`...)
		dst = jsonfast.AppendJSONString(dst, id)
		dst = append(dst, `,"name":`...)
		dst = jsonfast.AppendJSONString(dst, tc.Function.Name)
		dst = append(dst, `,"input":{}}}`+"\n\n"...)
		t.open, t.openTool = blockTool, idx
	}
	if tc.Function.Arguments == "" {
		return dst
	}
	dst = t.deltaHead(dst)
	dst = append(dst, `,"delta":{"type":"input_json_delta","partial_json":`...)
	dst = jsonfast.AppendJSONString(dst, tc.Function.Arguments)
	return append(dst, "}}\n\n"...)
}

func (t *openAIToAnthropicStream) Translate(dst []byte, ev Event) ([]byte, error) {
	if t.done {
		return dst, nil
	}
	data := bytes.TrimSpace(ev.Data)
	if string(data) == dataDone {
		t.sawEnd = true
		return t.end(dst), nil
	}
	if t.started {
		if out, ok := t.fastChunk(dst, data); ok {
			return out, nil
		}
	}
	choices := t.chunk.Choices[:0]
	clear(choices[:cap(choices)])
	t.chunk = chatInChunk{Choices: choices}
	if err := json.Unmarshal(data, &t.chunk); err != nil {
		return dst, errBadEvent
	}
	c := &t.chunk
	if c.Error != nil {
		t.done = true
		e := APIError{Status: statusForErrorType(c.Error.Type), Message: c.Error.Message}
		if e.Message == "" {
			e.Message = "upstream error"
		}
		return dst, &e
	}
	if !t.started {
		dst = t.start(dst, c.ID, c.Model)
	}
	if c.Usage != nil {
		t.usage = usageFromOpenAI(c.Usage)
		t.usage.ServiceTier = c.ServiceTier
	}
	if len(c.Choices) == 0 {
		return dst, nil
	}
	ch := &c.Choices[0]
	if ch.Delta.Content != "" {
		dst = t.appendText(dst, ch.Delta.Content)
	} else if ch.Delta.Refusal != "" {
		dst = t.appendText(dst, ch.Delta.Refusal)
	}
	for i := range ch.Delta.ToolCalls {
		dst = t.appendToolCall(dst, &ch.Delta.ToolCalls[i], i)
	}
	if ch.FinishReason != nil && *ch.FinishReason != "" {
		// The usage chunk follows the finish chunk, so message_delta
		// waits for [DONE] or the end of the stream.
		t.stop = stopFromFinish(*ch.FinishReason)
		if t.stop == "end_turn" && len(t.seen) > 0 {
			t.stop = "tool_use" // local servers that say "stop" after tool calls
		}
		dst = t.closeBlock(dst)
	}
	return dst, nil
}

// end closes any open block and sends message_delta and message_stop.
func (t *openAIToAnthropicStream) end(dst []byte) []byte {
	if !t.started {
		dst = t.start(dst, "", "")
	}
	dst = t.closeBlock(dst)
	stop := t.stop
	if stop == "" {
		stop = "end_turn"
		if len(t.seen) > 0 {
			stop = "tool_use"
		}
	}
	dst = appendEventHead(dst, "message_delta")
	dst = append(dst, `{"type":"message_delta","delta":{"stop_reason":"`...)
	dst = append(dst, stop...)
	dst = append(dst, `","stop_sequence":null},"usage":`...)
	dst = appendAnthropicUsage(dst, t.usage)
	dst = append(dst, "}\n\n"...)
	dst = appendEventHead(dst, "message_stop")
	t.done = true
	return append(dst, `{"type":"message_stop"}`+"\n\n"...)
}

// Complete: a finish reason or [DONE] from the upstream completes the stream.
func (t *openAIToAnthropicStream) Complete() bool {
	return t.sawEnd || t.stop != ""
}

func (t *openAIToAnthropicStream) Finish(dst []byte) []byte {
	if t.done {
		return dst
	}
	return t.end(dst)
}
