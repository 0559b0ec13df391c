package providers

import (
	"bytes"
	"encoding/json"
	"strconv"
	"time"
)

// Stream translators between Anthropic events and OpenAI chunks
// (wire-formats §2.3, §1.3, §5.5). Output JSON is appended by hand from
// precomputed prefixes; only decoding the upstream event goes through
// encoding/json, into a scratch struct reused for every event.

// anthropicEventIn is the union of the Anthropic stream event payloads.
type anthropicEventIn struct {
	Type    string `json:"type"`
	Message struct {
		ID    string         `json:"id"`
		Model string         `json:"model"`
		Usage AnthropicUsage `json:"usage"`
	} `json:"message"`
	Index        int `json:"index"`
	ContentBlock struct {
		Type string `json:"type"`
		ID   string `json:"id"`
		Name string `json:"name"`
		Text string `json:"text"`
	} `json:"content_block"`
	Delta struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		PartialJSON string `json:"partial_json"`
		StopReason  string `json:"stop_reason"`
	} `json:"delta"`
	Usage *AnthropicUsage `json:"usage"`
	Error struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

const (
	dataDone = "[DONE]"
	sseDone  = "data: [DONE]\n\n"
)

// eventType is the event's name, or its data's "type" for upstreams that
// leave the event line out.
func eventType(ev Event, decoded string) string {
	if len(ev.Name) > 0 {
		switch string(ev.Name) { // no allocation: compared in place
		case "message_start":
			return "message_start"
		case "content_block_start":
			return "content_block_start"
		case "content_block_delta":
			return "content_block_delta"
		case "content_block_stop":
			return "content_block_stop"
		case "message_delta":
			return "message_delta"
		case "message_stop":
			return "message_stop"
		case "ping":
			return "ping"
		case "error":
			return "error"
		}
	}
	return decoded
}

// mergeDeltaUsage applies a message_delta's cumulative usage under the
// ledger rule of §2.3: output from the delta, input and cache figures only
// where the delta repeats them.
func mergeDeltaUsage(u *Usage, d *AnthropicUsage) {
	u.Seen = true
	u.OutputTokens = d.OutputTokens
	if d.InputTokens != nil {
		u.InputTokens = *d.InputTokens
	}
	if d.CacheReadInputTokens != nil {
		u.CacheReadTokens = *d.CacheReadInputTokens
	}
	switch {
	case d.CacheCreation != nil:
		u.CacheCreation5m = d.CacheCreation.Ephemeral5m
		u.CacheCreation1h = d.CacheCreation.Ephemeral1h
	case d.CacheCreationInputTokens != nil:
		u.CacheCreation5m = *d.CacheCreationInputTokens
		u.CacheCreation1h = 0
	}
}

// anthropicToOpenAIStream turns Anthropic events into OpenAI chunks.
type anthropicToOpenAIStream struct {
	includeUsage bool
	// prefix is every chunk's opening up to and including `"choices":[`.
	prefix []byte
	// toolOf maps an Anthropic block index to its tool_calls index, or -1.
	toolOf   []int
	tools    int
	usage    Usage
	finished bool // finish chunk sent
	done     bool // [DONE] or an error sent; nothing more goes out
	ev       anthropicEventIn
}

// NewAnthropicToOpenAIStream translates an Anthropic upstream stream for an
// OpenAI client. includeUsage is whether the client asked for the usage
// chunk (stream_options.include_usage).
func NewAnthropicToOpenAIStream(includeUsage bool) StreamTranslator {
	return &anthropicToOpenAIStream{includeUsage: includeUsage}
}

func (t *anthropicToOpenAIStream) Usage() Usage { return t.usage }

func (t *anthropicToOpenAIStream) setPrefix(id, model string) {
	p := append(t.prefix[:0], `{"id":`...)
	p = appendJSONString(p, openAICompletionID(id))
	p = append(p, `,"object":"chat.completion.chunk","created":`...)
	p = strconv.AppendInt(p, time.Now().Unix(), 10)
	p = append(p, `,"model":`...)
	p = appendJSONString(p, model)
	t.prefix = append(p, `,"choices":[`...)
}

// open starts a chunk whose single choice has the delta that follows.
func (t *anthropicToOpenAIStream) open(dst []byte) []byte {
	if len(t.prefix) == 0 {
		t.setPrefix("", "")
	}
	dst = append(dst, "data: "...)
	dst = append(dst, t.prefix...)
	return append(dst, `{"index":0,"delta":`...)
}

// closeChunk ends a chunk begun by open: a content chunk, not the finish.
func closeChunk(dst []byte) []byte {
	return append(dst, `,"finish_reason":null}],"usage":null}`+"\n\n"...)
}

func (t *anthropicToOpenAIStream) Translate(dst []byte, ev Event) ([]byte, error) {
	if t.done {
		return dst, nil
	}
	switch string(ev.Name) {
	case "ping":
		return dst, nil
	case "content_block_delta":
		if out, ok := t.fastDelta(dst, ev.Data); ok {
			return out, nil
		}
	}
	t.ev = anthropicEventIn{}
	if err := json.Unmarshal(ev.Data, &t.ev); err != nil {
		return dst, errBadEvent
	}
	e := &t.ev
	switch eventType(ev, e.Type) {
	case "message_start":
		t.setPrefix(e.Message.ID, e.Message.Model)
		t.usage = usageFromAnthropic(&e.Message.Usage)
		dst = t.open(dst)
		dst = append(dst, `{"role":"assistant","content":""}`...)
		return closeChunk(dst), nil
	case "content_block_start":
		if e.Index < 0 || e.Index > 1<<16 {
			return dst, errBadEvent
		}
		for len(t.toolOf) <= e.Index {
			t.toolOf = append(t.toolOf, -1)
		}
		switch e.ContentBlock.Type {
		case "tool_use":
			k := t.tools
			t.tools++
			t.toolOf[e.Index] = k
			id := e.ContentBlock.ID
			if id == "" {
				id = newCallID()
			}
			dst = t.open(dst)
			dst = append(dst, `{"tool_calls":[{"index":`...)
			dst = strconv.AppendInt(dst, int64(k), 10)
			dst = append(dst, `,"id":`...)
			dst = appendJSONString(dst, id)
			dst = append(dst, `,"type":"function","function":{"name":`...)
			dst = appendJSONString(dst, e.ContentBlock.Name)
			dst = append(dst, `,"arguments":""}}]}`...)
			return closeChunk(dst), nil
		case "text":
			t.toolOf[e.Index] = -1
			if e.ContentBlock.Text != "" {
				return t.appendText(dst, e.ContentBlock.Text), nil
			}
		default:
			t.toolOf[e.Index] = -1
		}
		return dst, nil
	case "content_block_delta":
		switch e.Delta.Type {
		case "text_delta":
			if e.Delta.Text == "" {
				return dst, nil
			}
			return t.appendText(dst, e.Delta.Text), nil
		case "input_json_delta":
			if e.Index < 0 || e.Index >= len(t.toolOf) || t.toolOf[e.Index] < 0 || e.Delta.PartialJSON == "" {
				return dst, nil
			}
			dst = t.open(dst)
			dst = append(dst, `{"tool_calls":[{"index":`...)
			dst = strconv.AppendInt(dst, int64(t.toolOf[e.Index]), 10)
			dst = append(dst, `,"function":{"arguments":`...)
			dst = appendJSONString(dst, e.Delta.PartialJSON)
			dst = append(dst, `}}]}`...)
			return closeChunk(dst), nil
		}
		// thinking, signature and citation deltas have no OpenAI form
		return dst, nil
	case "message_delta":
		if e.Usage != nil {
			mergeDeltaUsage(&t.usage, e.Usage)
		}
		if e.Delta.StopReason != "" && !t.finished {
			dst = t.appendFinish(dst, finishFromStop(e.Delta.StopReason))
		}
		return dst, nil
	case "message_stop":
		return t.end(dst), nil
	case "error":
		t.done = true
		dst = append(dst, `data: {"error":{"message":`...)
		dst = appendJSONString(dst, e.Error.Message)
		dst = append(dst, `,"type":`...)
		dst = appendJSONString(dst, openAITypeForAnthropic(e.Error.Type))
		return append(dst, `,"param":null,"code":null}}`+"\n\n"...), nil
	}
	return dst, nil
}

// fastDelta handles text and tool-argument deltas, nearly all of a
// stream, by copying the upstream's already-encoded string token instead
// of decoding and re-encoding it. ok is false when the event needs the
// full path.
func (t *anthropicToOpenAIStream) fastDelta(dst, data []byte) ([]byte, bool) {
	var idx, delta span
	var hasIdx, hasDelta bool
	_, err := eachMember(data, 0, func(k []byte, v span) {
		switch {
		case keyIs(k, "index"):
			idx, hasIdx = v, true
		case keyIs(k, "delta"):
			delta, hasDelta = v, true
		}
	})
	if err != nil || !hasDelta || data[delta.start] != '{' {
		return dst, false
	}
	var typ, text, partial span
	_, err = eachMember(data, delta.start, func(k []byte, v span) {
		switch {
		case keyIs(k, "type"):
			typ = v
		case keyIs(k, "text"):
			text = v
		case keyIs(k, "partial_json"):
			partial = v
		}
	})
	if err != nil {
		return dst, false
	}
	switch string(data[typ.start:typ.end]) {
	case `"text_delta"`:
		tok := data[text.start:text.end]
		if !validStringToken(tok) {
			return dst, false
		}
		if len(tok) == 2 {
			return dst, true
		}
		dst = t.open(dst)
		dst = append(dst, `{"content":`...)
		dst = append(dst, tok...)
		dst = append(dst, '}')
		return closeChunk(dst), true
	case `"input_json_delta"`:
		tok := data[partial.start:partial.end]
		k, ok := parseIndex(data[idx.start:idx.end])
		if !hasIdx || !ok || !validStringToken(tok) {
			return dst, false
		}
		if k >= len(t.toolOf) || t.toolOf[k] < 0 || len(tok) == 2 {
			return dst, true
		}
		dst = t.open(dst)
		dst = append(dst, `{"tool_calls":[{"index":`...)
		dst = strconv.AppendInt(dst, int64(t.toolOf[k]), 10)
		dst = append(dst, `,"function":{"arguments":`...)
		dst = append(dst, tok...)
		dst = append(dst, `}}]}`...)
		return closeChunk(dst), true
	case `"thinking_delta"`, `"signature_delta"`, `"citations_delta"`:
		return dst, true
	}
	return dst, false
}

func (t *anthropicToOpenAIStream) appendText(dst []byte, text string) []byte {
	dst = t.open(dst)
	dst = append(dst, `{"content":`...)
	dst = appendJSONString(dst, text)
	dst = append(dst, '}')
	return closeChunk(dst)
}

func (t *anthropicToOpenAIStream) appendFinish(dst []byte, reason string) []byte {
	t.finished = true
	dst = t.open(dst)
	dst = append(dst, `{},"finish_reason":"`...)
	dst = append(dst, reason...)
	return append(dst, `"}],"usage":null}`+"\n\n"...)
}

// end sends the finish chunk if none went out, the usage chunk if asked
// for, and [DONE].
func (t *anthropicToOpenAIStream) end(dst []byte) []byte {
	if !t.finished {
		dst = t.appendFinish(dst, "stop")
	}
	if t.includeUsage {
		dst = append(dst, "data: "...)
		dst = append(dst, t.prefix...)
		dst = append(dst, `],"usage":`...)
		dst = appendOpenAIUsage(dst, t.usage)
		dst = append(dst, "}\n\n"...)
	}
	t.done = true
	return append(dst, sseDone...)
}

func (t *anthropicToOpenAIStream) Finish(dst []byte) []byte {
	if t.done {
		return dst
	}
	return t.end(dst)
}

// openAITypeForAnthropic maps an Anthropic error type to OpenAI's.
func openAITypeForAnthropic(typ string) string {
	switch typ {
	case "overloaded_error":
		return "service_unavailable_error"
	case "rate_limit_error":
		return "rate_limit_exceeded"
	case "api_error", "timeout_error":
		return "server_error"
	case "":
		return "server_error"
	}
	return typ
}

type streamError string

func (e streamError) Error() string { return string(e) }

const errBadEvent = streamError("upstream sent a malformed stream event")

// openAIChunkIn is the part of an OpenAI chunk the translator reads.
type openAIChunkIn struct {
	ID      string `json:"id"`
	Model   string `json:"model"`
	Choices []struct {
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
	chunk    openAIChunkIn
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
	dst = appendJSONString(dst, anthropicMessageID(id))
	dst = append(dst, `,"type":"message","role":"assistant","content":[],"model":`...)
	dst = appendJSONString(dst, model)
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
	dst = appendJSONString(dst, text)
	return closeDelta(dst)
}

// fastChunk handles plain content chunks, nearly all of a stream, by
// copying the upstream's already-encoded content string. Anything else
// (tool calls, a finish reason, usage, errors, several choices) returns
// ok false for the full path.
func (t *openAIToAnthropicStream) fastChunk(dst, data []byte) ([]byte, bool) {
	var choices span
	hasChoices, other := false, false
	_, err := eachMember(data, 0, func(k []byte, v span) {
		switch {
		case keyIs(k, "choices"):
			choices, hasChoices = v, true
		case keyIs(k, "usage"), keyIs(k, "error"):
			other = other || !isNull(data, v)
		}
	})
	if err != nil || !hasChoices || other || data[choices.start] != '[' {
		return dst, false
	}
	first := skipSpace(data, choices.start+1)
	if first >= choices.end || data[first] != '{' {
		return dst, false
	}
	var delta span
	hasDelta := false
	end, err := eachMember(data, first, func(k []byte, v span) {
		switch {
		case keyIs(k, "delta"):
			delta, hasDelta = v, true
		case keyIs(k, "finish_reason"):
			other = other || !isNull(data, v)
		}
	})
	if err != nil || other || !hasDelta || data[delta.start] != '{' || skipSpace(data, end) != choices.end-1 {
		return dst, false
	}
	var content span
	hasContent := false
	_, err = eachMember(data, delta.start, func(k []byte, v span) {
		switch {
		case keyIs(k, "content"):
			content, hasContent = v, true
		case keyIs(k, "tool_calls"):
			other = other || !isNull(data, v) && !isEmptyArray(data[v.start:v.end])
		case keyIs(k, "refusal"):
			other = other || !isNull(data, v)
		}
	})
	if err != nil || other {
		return dst, false
	}
	if !hasContent || isNull(data, content) {
		return dst, true
	}
	tok := data[content.start:content.end]
	if !validStringToken(tok) {
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
		dst = appendJSONString(dst, id)
		dst = append(dst, `,"name":`...)
		dst = appendJSONString(dst, tc.Function.Name)
		dst = append(dst, `,"input":{}}}`+"\n\n"...)
		t.open, t.openTool = blockTool, idx
	}
	if tc.Function.Arguments == "" {
		return dst
	}
	dst = t.deltaHead(dst)
	dst = append(dst, `,"delta":{"type":"input_json_delta","partial_json":`...)
	dst = appendJSONString(dst, tc.Function.Arguments)
	return append(dst, "}}\n\n"...)
}

func (t *openAIToAnthropicStream) Translate(dst []byte, ev Event) ([]byte, error) {
	if t.done {
		return dst, nil
	}
	data := bytes.TrimSpace(ev.Data)
	if string(data) == dataDone {
		return t.end(dst), nil
	}
	if t.started {
		if out, ok := t.fastChunk(dst, data); ok {
			return out, nil
		}
	}
	choices := t.chunk.Choices[:0]
	clear(choices[:cap(choices)])
	t.chunk = openAIChunkIn{Choices: choices}
	if err := json.Unmarshal(data, &t.chunk); err != nil {
		return dst, errBadEvent
	}
	c := &t.chunk
	if c.Error != nil {
		t.done = true
		e := APIError{Status: statusForOpenAIType(c.Error.Type), Message: c.Error.Message}
		if e.Message == "" {
			e.Message = "upstream error"
		}
		return e.AppendStreamError(dst, FormatAnthropic), nil
	}
	if !t.started {
		dst = t.start(dst, c.ID, c.Model)
	}
	if c.Usage != nil {
		t.usage = usageFromOpenAI(c.Usage)
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

func (t *openAIToAnthropicStream) Finish(dst []byte) []byte {
	if t.done {
		return dst
	}
	return t.end(dst)
}

// statusForOpenAIType recovers an HTTP status from an OpenAI error type so
// the error is rendered in the matching Anthropic type.
func statusForOpenAIType(typ string) int {
	switch typ {
	case "invalid_request_error":
		return 400
	case "authentication_error":
		return 401
	case "permission_error":
		return 403
	case "not_found_error":
		return 404
	case "rate_limit_exceeded", "rate_limit_error", "insufficient_quota":
		return 429
	case "service_unavailable_error", "overloaded_error":
		return 529
	}
	return 500
}
