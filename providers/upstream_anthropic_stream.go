package providers

import (
	"encoding/json"
	"time"

	"github.com/modelgate/modelgate/internal/jsonfast"
)

// Stream translators between Anthropic events and OpenAI chunks
// (docs/wire-formats.md §2.3, §5.5). Output JSON is appended by hand from
// precomputed prefixes. Text and argument deltas, the bulk of a stream,
// copy the upstream's encoded string through without decoding; other
// events are decoded into a scratch struct reused for every event.

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
		Type     string `json:"type"`
		ID       string `json:"id"`
		Name     string `json:"name"`
		Text     string `json:"text"`
		Thinking string `json:"thinking"`
		Data     string `json:"data"`
	} `json:"content_block"`
	Delta struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		PartialJSON string `json:"partial_json"`
		StopReason  string `json:"stop_reason"`
		Thinking    string `json:"thinking"`
		Signature   string `json:"signature"`
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
	if d.ServerToolUse != nil {
		u.WebSearches = d.ServerToolUse.WebSearchRequests
	}
	if d.ServiceTier != "" {
		u.ServiceTier = d.ServiceTier
	}
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
	ch           chunker
	// toolOf maps an Anthropic block index to its tool_calls index, or -1.
	toolOf   []int
	tools    int
	usage    Usage
	finished bool // finish chunk sent
	done     bool // [DONE] or an error sent; nothing more goes out
	ev       anthropicEventIn
	// sawStop: the upstream sent message_stop.
	sawStop bool
	// hub: the chunks feed the translation hub, not a client, and carry
	// thinking as reasoning_content plus the non-standard
	// reasoning_signature and reasoning_redacted deltas.
	hub bool
}

// newAnthropicToHubStream is NewAnthropicToOpenAIStream for the hub:
// thinking, signatures and redacted thinking are kept.
func newAnthropicToHubStream() StreamTranslator {
	return &anthropicToOpenAIStream{includeUsage: true, hub: true}
}

// NewAnthropicToOpenAIStream translates an Anthropic upstream stream for an
// OpenAI client. includeUsage is whether the client asked for the usage
// chunk (stream_options.include_usage).
func NewAnthropicToOpenAIStream(includeUsage bool) StreamTranslator {
	return &anthropicToOpenAIStream{includeUsage: includeUsage}
}

func (t *anthropicToOpenAIStream) Usage() Usage { return t.usage }

// Complete: a stop reason (message_delta) or message_stop completes the stream.
func (t *anthropicToOpenAIStream) Complete() bool { return t.sawStop || t.finished }

// started renders the chunk head once; message_start names the id and
// model, a stream that skips it gets a fresh id.
func (t *anthropicToOpenAIStream) started(id, model string) {
	t.ch.init(openAICompletionID(id), time.Now().Unix(), model)
}

func (t *anthropicToOpenAIStream) head() *chunker {
	if len(t.ch.head) == 0 {
		t.started("", "")
	}
	return &t.ch
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
		t.started(e.Message.ID, e.Message.Model)
		t.usage = usageFromAnthropic(&e.Message.Usage)
		return t.ch.role(dst), nil
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
			return t.head().toolCall(dst, k, id, e.ContentBlock.Name, nil), nil
		case "thinking", "redacted_thinking":
			t.toolOf[e.Index] = -1
			switch {
			case !t.hub:
			case e.ContentBlock.Data != "":
				return t.head().delta(dst, "reasoning_redacted", e.ContentBlock.Data), nil
			case e.ContentBlock.Thinking != "":
				return t.head().delta(dst, "reasoning_content", e.ContentBlock.Thinking), nil
			}
			return dst, nil
		case "text":
			t.toolOf[e.Index] = -1
			if e.ContentBlock.Text != "" {
				return t.head().content(dst, e.ContentBlock.Text), nil
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
			return t.head().content(dst, e.Delta.Text), nil
		case "input_json_delta":
			if e.Index < 0 || e.Index >= len(t.toolOf) || t.toolOf[e.Index] < 0 || e.Delta.PartialJSON == "" {
				return dst, nil
			}
			return t.head().argsToken(dst, t.toolOf[e.Index], jsonfast.AppendJSONString(nil, e.Delta.PartialJSON)), nil
		case "thinking_delta":
			if t.hub && e.Delta.Thinking != "" {
				return t.head().delta(dst, "reasoning_content", e.Delta.Thinking), nil
			}
		case "signature_delta":
			if t.hub && e.Delta.Signature != "" {
				return t.head().delta(dst, "reasoning_signature", e.Delta.Signature), nil
			}
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
		t.sawStop = true
		return t.end(dst), nil
	case "error":
		t.done = true
		e := &APIError{Status: statusForErrorType(e.Error.Type), Message: e.Error.Message}
		if e.Message == "" {
			e.Message = "upstream error"
		}
		return dst, e
	}
	return dst, nil
}

// fastDelta handles text and tool-argument deltas, nearly all of a
// stream, by copying the upstream's already-encoded string token instead
// of decoding and re-encoding it. ok is false when the event needs the
// full path.
func (t *anthropicToOpenAIStream) fastDelta(dst, data []byte) ([]byte, bool) {
	var idx, delta jsonfast.Span
	var hasIdx, hasDelta bool
	_, err := jsonfast.EachMember(data, 0, func(k []byte, v jsonfast.Span) {
		switch {
		case jsonfast.KeyIs(k, "index"):
			idx, hasIdx = v, true
		case jsonfast.KeyIs(k, "delta"):
			delta, hasDelta = v, true
		}
	})
	if err != nil || !hasDelta || data[delta.Start] != '{' {
		return dst, false
	}
	var typ, text, partial jsonfast.Span
	_, err = jsonfast.EachMember(data, delta.Start, func(k []byte, v jsonfast.Span) {
		switch {
		case jsonfast.KeyIs(k, "type"):
			typ = v
		case jsonfast.KeyIs(k, "text"):
			text = v
		case jsonfast.KeyIs(k, "partial_json"):
			partial = v
		}
	})
	if err != nil {
		return dst, false
	}
	switch string(data[typ.Start:typ.End]) {
	case `"text_delta"`:
		tok := data[text.Start:text.End]
		if !jsonfast.ValidStringToken(tok) {
			return dst, false
		}
		if len(tok) == 2 {
			return dst, true
		}
		return t.head().contentToken(dst, tok), true
	case `"input_json_delta"`:
		tok := data[partial.Start:partial.End]
		k, ok := jsonfast.ParseIndex(data[idx.Start:idx.End])
		if !hasIdx || !ok || !jsonfast.ValidStringToken(tok) {
			return dst, false
		}
		if k >= len(t.toolOf) || t.toolOf[k] < 0 || len(tok) == 2 {
			return dst, true
		}
		return t.head().argsToken(dst, t.toolOf[k], tok), true
	case `"thinking_delta"`, `"signature_delta"`:
		// The hub keeps them (the full path); a client gets nothing.
		return dst, !t.hub
	case `"citations_delta"`:
		return dst, true
	}
	return dst, false
}

func (t *anthropicToOpenAIStream) appendFinish(dst []byte, reason string) []byte {
	t.finished = true
	return t.head().finish(dst, reason)
}

// end sends the finish chunk if none went out, the usage chunk if asked
// for, and [DONE].
func (t *anthropicToOpenAIStream) end(dst []byte) []byte {
	if !t.finished {
		dst = t.appendFinish(dst, "stop")
	}
	if t.includeUsage {
		dst = t.head().usage(dst, t.usage)
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

const errBadEvent = constError("upstream sent a malformed stream event")
