package providers

import (
	"encoding/json"
	"strconv"

	"github.com/modelgate/modelgate/internal/jsonfast"
)

// converseStream turns the hub's chat chunks into ConverseStream's events,
// written as named SSE events (`event: contentBlockDelta` + its JSON) for
// the event-stream framer (NewConverseStreamFramer) to put in AWS
// event-stream messages: messageStart; per content block an optional
// contentBlockStart (toolUse blocks only, as Bedrock sends it), its
// contentBlockDelta events and a contentBlockStop; messageStop with the
// stopReason; metadata with usage and metrics. Usage arrives after the
// finish in chat, so messageStop and metadata wait for the stream's end.
type converseStream struct {
	t       *ConverseTurn
	chunk   chatAnswer
	started bool
	// open is the index of the open content block, -1 when none;
	// openKind what it holds.
	open     int
	openKind converseBlockKind
	next     int         // the next block's index
	calls    map[int]int // chat tool-call index → content block index
	finish   string
	usage    Usage
	ended    bool
}

type converseBlockKind uint8

const (
	converseText converseBlockKind = iota
	converseReasoningBlock
	converseToolBlock
)

func newConverseStream(t *ConverseTurn) *converseStream {
	return &converseStream{t: t, open: -1, calls: map[int]int{}}
}

// begin sends messageStart once.
func (s *converseStream) begin(dst []byte) []byte {
	if s.started {
		return dst
	}
	s.started = true
	return AppendSSE(dst, "messageStart", []byte(`{"role":"assistant"}`))
}

// stop closes the open block.
func (s *converseStream) stop(dst []byte) []byte {
	if s.open < 0 {
		return dst
	}
	dst = append(dst, "event: contentBlockStop\ndata: {\"contentBlockIndex\":"...)
	dst = strconv.AppendInt(dst, int64(s.open), 10)
	s.open = -1
	return append(dst, "}\n\n"...)
}

// into makes a block of kind the open one, closing another first.
func (s *converseStream) into(dst []byte, kind converseBlockKind) []byte {
	if s.open >= 0 && s.openKind == kind && kind != converseToolBlock {
		return dst
	}
	dst = s.stop(dst)
	s.open, s.openKind = s.next, kind
	s.next++
	return dst
}

// delta appends a contentBlockDelta for the open block; body is the
// delta's JSON.
func (s *converseStream) delta(dst []byte, index int, body func([]byte) []byte) []byte {
	dst = append(dst, "event: contentBlockDelta\ndata: {\"contentBlockIndex\":"...)
	dst = strconv.AppendInt(dst, int64(index), 10)
	dst = append(dst, `,"delta":`...)
	dst = body(dst)
	return append(dst, "}\n\n"...)
}

func (s *converseStream) textDelta(dst []byte, kind converseBlockKind, member, text string) []byte {
	dst = s.into(dst, kind)
	return s.delta(dst, s.open, func(b []byte) []byte {
		if kind == converseReasoningBlock {
			b = append(b, `{"reasoningContent":{`...)
		} else {
			b = append(b, '{')
		}
		b = jsonfast.AppendQuoted(b, member, false)
		b = append(b, ':')
		b = jsonfast.AppendQuoted(b, text, false)
		if kind == converseReasoningBlock {
			b = append(b, '}')
		}
		return append(b, '}')
	})
}

// Translate handles one hub chunk.
func (s *converseStream) Translate(dst []byte, ev Event) ([]byte, error) {
	if s.ended || string(ev.Data) == "[DONE]" {
		return dst, nil
	}
	c := &s.chunk
	if err := readChatChunk(ev.Data, c); err != nil {
		return dst, err
	}
	if c.Usage != nil {
		s.usage = c.ledgerUsage()
	}
	for i := range c.Choices {
		ch := &c.Choices[i]
		d := &ch.Delta
		dst = s.begin(dst)
		if r := d.reasoning(); r != "" {
			dst = s.textDelta(dst, converseReasoningBlock, "text", r)
		}
		if d.ReasoningSignature != nil {
			dst = s.textDelta(dst, converseReasoningBlock, "signature", *d.ReasoningSignature)
		}
		if d.ReasoningRedacted != nil {
			// Its own block: redacted thinking is not part of the text's.
			dst = s.stop(dst)
			dst = s.textDelta(dst, converseReasoningBlock, "redactedContent", *d.ReasoningRedacted)
			dst = s.stop(dst)
		}
		for _, text := range [...]*string{d.Content, d.Refusal} {
			if text != nil && *text != "" {
				dst = s.textDelta(dst, converseText, "text", *text)
			}
		}
		if d.Refusal != nil && *d.Refusal != "" {
			s.finish = "content_filter"
		}
		for j := range d.ToolCalls {
			dst = s.toolDelta(dst, &d.ToolCalls[j])
		}
		if ch.FinishReason != "" && s.finish == "" {
			s.finish = ch.FinishReason
		}
	}
	return dst, nil
}

// toolDelta starts a toolUse block on a call's first fragment and sends
// its arguments as they come.
func (s *converseStream) toolDelta(dst []byte, tc *OpenAIToolCall) []byte {
	idx := len(s.calls)
	if tc.Index != nil {
		idx = *tc.Index
	}
	block, ok := s.calls[idx]
	if !ok {
		dst = s.into(dst, converseToolBlock)
		block = s.open
		s.calls[idx] = block
		id := tc.ID
		if id == "" {
			id = newCallID()
		}
		dst = append(dst, "event: contentBlockStart\ndata: {\"contentBlockIndex\":"...)
		dst = strconv.AppendInt(dst, int64(block), 10)
		dst = append(dst, `,"start":{"toolUse":{"toolUseId":`...)
		dst = jsonfast.AppendQuoted(dst, id, false)
		dst = append(dst, `,"name":`...)
		dst = jsonfast.AppendQuoted(dst, tc.Function.Name, false)
		dst = append(dst, "}}}\n\n"...)
	}
	if tc.Function.Arguments == "" {
		return dst
	}
	return s.delta(dst, block, func(b []byte) []byte {
		b = append(b, `{"toolUse":{"input":`...)
		b = jsonfast.AppendQuoted(b, tc.Function.Arguments, false)
		return append(b, "}}"...)
	})
}

// Finish closes the open block and sends messageStop and metadata.
func (s *converseStream) Finish(dst []byte) []byte {
	if s.ended {
		return dst
	}
	s.ended = true
	dst = s.begin(dst)
	dst = s.stop(dst)
	dst = append(dst, "event: messageStop\ndata: {\"stopReason\":"...)
	dst = jsonfast.AppendQuoted(dst, converseStopFromChat(s.finish), false)
	dst = append(dst, "}\n\n"...)
	meta, _ := json.Marshal(struct {
		Usage   converseUsage   `json:"usage"`
		Metrics converseMetrics `json:"metrics"`
	}{converseUsageOf(s.usage), s.t.latency()})
	return AppendSSE(dst, "metadata", meta)
}

// Fail ends a broken stream with the exception event Bedrock would send;
// the AWS SDKs raise it from the stream's iterator.
func (s *converseStream) Fail(dst []byte, e *APIError) []byte {
	if s.ended {
		return dst
	}
	s.ended = true
	return e.AppendStreamError(dst, FormatConverse)
}

// Usage is read by the upstream-facing translator of the chain.
func (s *converseStream) Usage() Usage { return Usage{} }

// Complete is decided by the upstream-facing translator.
func (s *converseStream) Complete() bool { return true }
