package providers

import (
	"encoding/json"
	"time"

	"github.com/modelgate/modelgate/apierror"
	"github.com/modelgate/modelgate/internal/jsonfast"
)

// responsesStream turns the hub's chat completion chunks into the
// Responses event sequence (docs/wire-formats.md §7): created and
// in_progress first, one item open at a time, each bracketed by
// output_item.added/.done (message parts by content_part.added/.done),
// sequence numbers rising from 0, and one terminal event carrying the
// whole output and usage. No [DONE].
//
// The first tool call streams its arguments as they come; calls after it
// are held until the end and sent whole, because some servers interleave
// the fragments of parallel calls and an item cannot reopen once closed.
type responsesStream struct {
	t       *ResponsesTurn
	seq     int
	started bool
	ended   bool
	items   []*outputItem
	open    *outputItem
	calls   map[int]*outputItem // chat tool-call index → its item
	held    []*outputItem       // calls waiting for the end
	finish  string
	usage   *chatUsage
	tier    string
	chunk   chatAnswer
}

func newResponsesStream(t *ResponsesTurn) *responsesStream {
	return &responsesStream{t: t, calls: map[int]*outputItem{}}
}

// begin opens one event: its name line and the data object up to its
// sequence number; the caller appends members and calls end.
func (s *responsesStream) begin(dst []byte, typ string) []byte {
	dst = append(dst, "event: "...)
	dst = append(dst, typ...)
	dst = append(dst, "\ndata: {\"type\":\""...)
	dst = append(dst, typ...)
	dst = append(dst, `","sequence_number":`...)
	dst = append(dst, itoa(s.seq)...)
	s.seq++
	return dst
}

func end(dst []byte) []byte { return append(dst, "}\n\n"...) }

// itemRef appends item_id and output_index.
func itemRef(dst []byte, it *outputItem) []byte {
	dst = append(dst, `,"item_id":`...)
	dst = jsonfast.AppendQuoted(dst, it.id, false)
	dst = append(dst, `,"output_index":`...)
	return append(dst, itoa(it.index)...)
}

func (s *responsesStream) responseEvent(dst []byte, typ string, o *responseObject) []byte {
	dst = s.begin(dst, typ)
	dst = append(dst, `,"response":`...)
	dst = appendResponseObject(dst, o)
	return end(dst)
}

func (s *responsesStream) start(dst []byte) []byte {
	s.started = true
	o := s.t.object("in_progress", nil, nil)
	dst = s.responseEvent(dst, "response.created", &o)
	return s.responseEvent(dst, "response.in_progress", &o)
}

// openItem closes whatever is open and opens it.
func (s *responsesStream) openItem(dst []byte, it *outputItem) []byte {
	dst = s.closeOpen(dst)
	it.index = len(s.items)
	it.added = true
	s.items = append(s.items, it)
	s.open = it
	dst = s.begin(dst, "response.output_item.added")
	dst = append(dst, `,"output_index":`...)
	dst = append(dst, itoa(it.index)...)
	dst = append(dst, `,"item":`...)
	dst = it.appendJSON(dst, false)
	dst = end(dst)
	switch {
	case it.kind == "message":
		dst = s.begin(dst, "response.content_part.added")
		dst = itemRef(dst, it)
		dst = append(dst, `,"content_index":0,"part":`...)
		dst = it.appendPart(dst, "")
		dst = end(dst)
	case it.kind == "reasoning" && it.summary:
		dst = s.begin(dst, "response.reasoning_summary_part.added")
		dst = itemRef(dst, it)
		dst = append(dst, `,"summary_index":0,"part":`...)
		dst = it.appendPart(dst, "")
		dst = end(dst)
	}
	return dst
}

// deltaEvent appends the delta event of the open item's kind.
func (s *responsesStream) deltaEvent(dst []byte, it *outputItem, delta string) []byte {
	switch {
	case it.kind == "message" && it.refusal:
		dst = s.begin(dst, "response.refusal.delta")
		dst = itemRef(dst, it)
		dst = append(dst, `,"content_index":0`...)
	case it.kind == "message":
		dst = s.begin(dst, "response.output_text.delta")
		dst = itemRef(dst, it)
		dst = append(dst, `,"content_index":0,"logprobs":[]`...)
	case it.kind == "reasoning" && it.summary:
		dst = s.begin(dst, "response.reasoning_summary_text.delta")
		dst = itemRef(dst, it)
		dst = append(dst, `,"summary_index":0`...)
	case it.kind == "reasoning":
		dst = s.begin(dst, "response.reasoning_text.delta")
		dst = itemRef(dst, it)
		dst = append(dst, `,"content_index":0`...)
	case it.kind == "function_call":
		dst = s.begin(dst, "response.function_call_arguments.delta")
		dst = itemRef(dst, it)
	default:
		dst = s.begin(dst, "response.custom_tool_call_input.delta")
		dst = itemRef(dst, it)
	}
	dst = append(dst, `,"delta":`...)
	dst = jsonfast.AppendQuoted(dst, delta, false)
	return end(dst)
}

// closeOpen sends the open item's *.done events.
func (s *responsesStream) closeOpen(dst []byte) []byte {
	it := s.open
	if it == nil {
		return dst
	}
	s.open = nil
	return s.closeItem(dst, it)
}

func (s *responsesStream) closeItem(dst []byte, it *outputItem) []byte {
	it.done = true
	text := it.text.String()
	switch {
	case it.kind == "message":
		if it.refusal {
			dst = s.begin(dst, "response.refusal.done")
			dst = itemRef(dst, it)
			dst = append(dst, `,"content_index":0,"refusal":`...)
		} else {
			dst = s.begin(dst, "response.output_text.done")
			dst = itemRef(dst, it)
			dst = append(dst, `,"content_index":0,"logprobs":[],"text":`...)
		}
		dst = jsonfast.AppendQuoted(dst, text, false)
		dst = end(dst)
		dst = s.begin(dst, "response.content_part.done")
		dst = itemRef(dst, it)
		dst = append(dst, `,"content_index":0,"part":`...)
		dst = it.appendPart(dst, text)
		dst = end(dst)
	case it.kind == "reasoning" && it.summary:
		dst = s.begin(dst, "response.reasoning_summary_text.done")
		dst = itemRef(dst, it)
		dst = append(dst, `,"summary_index":0,"text":`...)
		dst = jsonfast.AppendQuoted(dst, text, false)
		dst = end(dst)
		dst = s.begin(dst, "response.reasoning_summary_part.done")
		dst = itemRef(dst, it)
		dst = append(dst, `,"summary_index":0,"part":`...)
		dst = it.appendPart(dst, text)
		dst = end(dst)
	case it.kind == "reasoning":
		dst = s.begin(dst, "response.reasoning_text.done")
		dst = itemRef(dst, it)
		dst = append(dst, `,"content_index":0,"text":`...)
		dst = jsonfast.AppendQuoted(dst, text, false)
		dst = end(dst)
	case it.kind == "function_call":
		dst = s.begin(dst, "response.function_call_arguments.done")
		dst = itemRef(dst, it)
		dst = append(dst, `,"name":`...)
		dst = jsonfast.AppendQuoted(dst, it.name, false)
		dst = append(dst, `,"arguments":`...)
		dst = jsonfast.AppendQuoted(dst, text, false)
		dst = end(dst)
	case it.kind == "tool_search_call":
		// Its arguments are an object, whole in output_item.done; the API
		// streams no delta events for it.
	default:
		// A custom tool's input sits inside JSON arguments: it can only
		// be read whole, so its one delta comes at the end.
		input := customInput(text)
		it.text.Reset()
		it.text.WriteString(input)
		dst = s.deltaEvent(dst, it, input)
		dst = s.begin(dst, "response.custom_tool_call_input.done")
		dst = itemRef(dst, it)
		dst = append(dst, `,"input":`...)
		dst = jsonfast.AppendQuoted(dst, input, false)
		dst = end(dst)
	}
	dst = s.begin(dst, "response.output_item.done")
	dst = append(dst, `,"output_index":`...)
	dst = append(dst, itoa(it.index)...)
	dst = append(dst, `,"item":`...)
	dst = it.appendJSON(dst, true)
	return end(dst)
}

// text adds message or reasoning text, opening the right item first.
func (s *responsesStream) text(dst []byte, kind string, refusal bool, delta string) []byte {
	if delta == "" {
		return dst
	}
	it := s.open
	if it == nil || it.kind != kind || it.refusal != refusal {
		it = s.t.newOutputItem(kind)
		it.refusal = refusal
		it.summary = kind == "reasoning" && s.t.summaryWanted()
		dst = s.openItem(dst, it)
	}
	if kind == "reasoning" {
		it.think(delta)
	} else {
		it.text.WriteString(delta)
	}
	return s.deltaEvent(dst, it, delta)
}

// reasoningItem is the open reasoning item, opened if need be.
func (s *responsesStream) reasoningItem(dst []byte) ([]byte, *outputItem) {
	if it := s.open; it != nil && it.kind == "reasoning" {
		return dst, it
	}
	it := s.t.newOutputItem("reasoning")
	it.summary = s.t.summaryWanted()
	return s.openItem(dst, it), it
}

func (s *responsesStream) toolCall(dst []byte, tc *OpenAIToolCall) []byte {
	idx := 0
	if tc.Index != nil {
		idx = *tc.Index
	}
	it, seen := s.calls[idx]
	if !seen {
		it = s.t.toolCallItem(tc.ID, tc.Function.Name)
		it.chatIndex = idx
		s.calls[idx] = it
		if len(s.calls) == 1 && it.kind == "function_call" {
			dst = s.openItem(dst, it)
		} else {
			s.held = append(s.held, it)
		}
	}
	if tc.Function.Arguments == "" {
		return dst
	}
	it.text.WriteString(tc.Function.Arguments)
	if it == s.open {
		dst = s.deltaEvent(dst, it, tc.Function.Arguments)
	}
	return dst
}

// Translate handles one chat chunk of the hub.
func (s *responsesStream) Translate(dst []byte, ev Event) ([]byte, error) {
	if s.ended {
		return dst, nil
	}
	if string(ev.Data) == "[DONE]" {
		if !s.started {
			dst = s.start(dst)
		}
		return dst, nil
	}
	c := &s.chunk
	// The choices array is reused from chunk to chunk.
	*c = chatAnswer{Choices: c.Choices[:0]}
	if !readChatAnswer(ev.Data, c) {
		*c = chatAnswer{}
		if err := json.Unmarshal(ev.Data, c); err != nil {
			if !s.started {
				dst = s.start(dst)
			}
			return dst, err
		}
	}
	if !s.started {
		// response.created names the model that answers: the first chunk's.
		s.t.Answered = c.Model
		dst = s.start(dst)
	}
	if c.Usage != nil {
		s.usage = c.Usage
	}
	if c.ServiceTier != "" {
		s.tier = c.ServiceTier
	}
	for i := range c.Choices {
		ch := &c.Choices[i]
		d := &ch.Delta
		if d.ReasoningContent != nil {
			dst = s.text(dst, "reasoning", false, *d.ReasoningContent)
		}
		if d.Reasoning != nil {
			dst = s.text(dst, "reasoning", false, *d.Reasoning)
		}
		if d.ReasoningSignature != nil {
			var it *outputItem
			dst, it = s.reasoningItem(dst)
			it.sign(*d.ReasoningSignature)
		}
		if d.ReasoningRedacted != nil {
			var it *outputItem
			dst, it = s.reasoningItem(dst)
			it.blocks = append(it.blocks, AnthropicBlock{Type: "redacted_thinking", Data: *d.ReasoningRedacted})
		}
		if d.Content != nil {
			dst = s.text(dst, "message", false, *d.Content)
		}
		if d.Refusal != nil {
			dst = s.text(dst, "message", !s.t.RefusalAsText, *d.Refusal)
		}
		for j := range d.ToolCalls {
			dst = s.toolCall(dst, &d.ToolCalls[j])
		}
		if ch.FinishReason != "" {
			s.finish = ch.FinishReason
		}
	}
	return dst, nil
}

// Finish closes the open item, sends the held calls whole and ends with
// response.completed or response.incomplete.
func (s *responsesStream) Finish(dst []byte) []byte {
	if s.ended {
		return dst
	}
	if !s.started {
		dst = s.start(dst)
	}
	dst = s.closeOpen(dst)
	for _, it := range s.held {
		args := it.text.String()
		it.text.Reset()
		dst = s.openItem(dst, it)
		it.text.WriteString(args)
		if it.kind == "function_call" && args != "" {
			dst = s.deltaEvent(dst, it, args)
		}
		dst = s.closeOpen(dst)
	}
	s.ended = true
	status, incomplete := finishStatus(s.finish)
	output := s.output()
	usage := s.usage.responses()
	o := s.t.object(status, output, &usage)
	o.IncompleteDetails = incomplete
	now := time.Now().Unix()
	o.CompletedAt = &now
	if s.tier != "" {
		o.ServiceTier = s.tier
	}
	body := appendResponseObject(nil, &o)
	s.t.finalize(status, output, body)
	dst = s.begin(dst, "response."+status)
	dst = append(dst, `,"response":`...)
	dst = append(dst, body...)
	return end(dst)
}

func (s *responsesStream) output() []json.RawMessage {
	out := make([]json.RawMessage, len(s.items))
	for i, it := range s.items {
		out[i] = it.appendJSON(nil, true)
	}
	return out
}

// Fail ends a stream the upstream broke: an error event in both shapes
// the SDKs read (nested and flat), then
// response.failed with the output so far.
func (s *responsesStream) Fail(dst []byte, e *APIError) []byte {
	if s.ended {
		return dst
	}
	if !s.started {
		dst = s.start(dst)
	}
	// The item under way is closed as far as it got, so the output in
	// response.failed is exactly the items the client saw finish.
	dst = s.closeOpen(dst)
	s.ended = true
	code := failureCode(e)
	dst = s.begin(dst, "error")
	dst = append(dst, `,"code":`...)
	dst = jsonfast.AppendQuoted(dst, code, false)
	dst = append(dst, `,"message":`...)
	dst = jsonfast.AppendQuoted(dst, e.Message, false)
	dst = append(dst, `,"param":`...)
	if e.Param != "" {
		dst = jsonfast.AppendQuoted(dst, e.Param, false)
	} else {
		dst = append(dst, "null"...)
	}
	dst = append(dst, `,"error":{"type":`...)
	dst = jsonfast.AppendQuoted(dst, apierror.OpenAIType(e.Status), false)
	dst = append(dst, `,"code":`...)
	dst = jsonfast.AppendQuoted(dst, code, false)
	dst = append(dst, `,"message":`...)
	dst = jsonfast.AppendQuoted(dst, e.Message, false)
	dst = append(dst, `,"param":null}`...)
	dst = end(dst)
	output := s.output()
	usage := s.usage.responses()
	o := s.t.object("failed", output, &usage)
	o.Error = &responseError{Code: code, Message: e.Message}
	body := appendResponseObject(nil, &o)
	s.t.finalize("failed", output, body)
	dst = s.begin(dst, "response.failed")
	dst = append(dst, `,"response":`...)
	dst = append(dst, body...)
	return end(dst)
}

// Usage is read by the hub's first translator (chained); this one has no
// usage of its own in the ledger's terms.
func (s *responsesStream) Usage() Usage { return Usage{} }

// Complete is decided by the upstream-facing translator.
func (s *responsesStream) Complete() bool { return true }
