package providers

import (
	"bytes"
	"cmp"
	"strings"

	"github.com/modelgate/modelgate/internal/jsonfast"
)

// geminiStream turns the hub's chat chunks into Gemini's stream: one
// `data: <GenerateContentResponse>` line per event, no event names, no
// comments, no [DONE]; the body's end ends the stream. Text goes out as it comes. A function call goes out whole,
// with parsed args, once its fragments are complete: Gemini clients read
// each functionCall part as a finished call. The last chunk carries the
// finish reason and the usage, which in chat arrives after the finish.
type geminiStream struct {
	t        *GeminiTurn
	chunk    chatAnswer
	calls    []*geminiPendingCall
	byIndex  map[int]*geminiPendingCall
	thinking []AnthropicBlock // Anthropic thinking so far, sealed onto the first call
	thought  strings.Builder
	sealed   bool
	finish   string
	usage    *chatUsage
	ended    bool
	parts    []geminiPart // reused from chunk to chunk
}

type geminiPendingCall struct {
	id, name string
	args     strings.Builder
}

func newGeminiStream(t *GeminiTurn) *geminiStream {
	return &geminiStream{t: t, byIndex: map[int]*geminiPendingCall{}}
}

func (s *geminiStream) event(dst []byte, parts []geminiPart, finish string, usage *geminiUsage) []byte {
	dst = append(dst, "data: "...)
	dst = append(dst, s.t.encode(parts, finish, usage)...)
	return append(dst, "\n\n"...)
}

// textEvent is event for text parts alone, the bulk of a stream, written
// by hand: json.Marshal per delta cost more than the rest of the relay.
// The bytes are event's (less its HTML escaping), U+0085 escaped alike.
func (s *geminiStream) textEvent(dst []byte, parts []geminiPart) []byte {
	mark := len(dst)
	dst = append(dst, `data: {"candidates":[{"content":{"role":"model","parts":[`...)
	for i := range parts {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"text":`...)
		dst = jsonfast.AppendQuoted(dst, parts[i].Text, false)
		if parts[i].Thought {
			dst = append(dst, `,"thought":true`...)
		}
		dst = append(dst, '}')
	}
	dst = append(dst, `]},"index":0}],"modelVersion":`...)
	dst = jsonfast.AppendQuoted(dst, cmp.Or(s.t.Answered, s.t.Alias), false)
	dst = append(dst, `,"responseId":`...)
	dst = jsonfast.AppendQuoted(dst, s.t.ResponseID, false)
	dst = append(dst, "}\n\n"...)
	// Outside strings valid JSON has no U+0085: every one is in a string.
	if bytes.Contains(dst[mark:], []byte(nel)) {
		tail := bytes.ReplaceAll(dst[mark:], []byte(nel), []byte(`\u0085`))
		dst = append(dst[:mark], tail...)
	}
	return dst
}

// nel is U+0085 in UTF-8, which python-genai splits stream lines at.
const nel = "\u0085"

// Translate handles one hub chunk.
func (s *geminiStream) Translate(dst []byte, ev Event) ([]byte, error) {
	if s.ended || string(ev.Data) == "[DONE]" {
		return dst, nil
	}
	c := &s.chunk
	if err := readChatChunk(ev.Data, c); err != nil {
		return dst, err
	}
	if c.Usage != nil {
		s.usage = c.Usage
	}
	if s.t.Answered == "" {
		s.t.Answered = c.Model
	}
	for i := range c.Choices {
		ch := &c.Choices[i]
		d := &ch.Delta
		parts := s.parts[:0]
		for _, r := range [...]*string{d.ReasoningContent, d.Reasoning} {
			if r != nil && *r != "" {
				s.thought.WriteString(*r)
				if s.t.includeThoughts {
					parts = append(parts, geminiPart{Text: *r, Thought: true})
				}
			}
		}
		if d.ReasoningSignature != nil {
			s.thinking = append(s.thinking, AnthropicBlock{Type: "thinking", Thinking: s.thought.String(), Signature: *d.ReasoningSignature})
			s.thought.Reset()
		}
		if d.ReasoningRedacted != nil {
			s.thinking = append(s.thinking, AnthropicBlock{Type: "redacted_thinking", Data: *d.ReasoningRedacted})
		}
		for _, text := range [...]*string{d.Content, d.Refusal} {
			if text != nil && *text != "" {
				parts = append(parts, geminiPart{Text: *text})
			}
		}
		if d.Refusal != nil && *d.Refusal != "" {
			s.finish = "content_filter"
		}
		for j := range d.ToolCalls {
			tc := &d.ToolCalls[j]
			idx := len(s.calls)
			if tc.Index != nil {
				idx = *tc.Index
			}
			pc := s.byIndex[idx]
			if pc == nil {
				pc = &geminiPendingCall{}
				s.byIndex[idx] = pc
				s.calls = append(s.calls, pc)
			}
			if tc.ID != "" {
				pc.id = tc.ID
			}
			if tc.Function.Name != "" {
				pc.name += tc.Function.Name
			}
			pc.args.WriteString(tc.Function.Arguments)
		}
		if len(parts) > 0 {
			dst = s.textEvent(dst, parts)
		}
		s.parts = parts
		if ch.FinishReason != "" {
			if s.finish == "" {
				s.finish = ch.FinishReason
			}
			dst = s.flushCalls(dst)
		}
	}
	return dst, nil
}

// flushCalls sends every completed call in one chunk, in call order.
func (s *geminiStream) flushCalls(dst []byte) []byte {
	if len(s.calls) == 0 {
		return dst
	}
	parts := make([]geminiPart, 0, len(s.calls))
	for _, pc := range s.calls {
		id := pc.id
		if id == "" {
			id = newCallID()
		}
		p := geminiPart{FunctionCall: &geminiFunctionCall{ID: id, Name: pc.name, Args: geminiArgs(pc.args.String())}}
		if !s.sealed && len(s.thinking) > 0 {
			p.ThoughtSignature = sealThinking(s.thinking)
			s.sealed = true
		}
		parts = append(parts, p)
	}
	s.calls = s.calls[:0]
	clear(s.byIndex)
	return s.event(dst, parts, "", nil)
}

// Finish sends held calls and the last chunk: finish reason and usage.
func (s *geminiStream) Finish(dst []byte) []byte {
	if s.ended {
		return dst
	}
	s.ended = true
	dst = s.flushCalls(dst)
	return s.event(dst, nil, geminiFinish(s.finish), geminiUsageFromChat(s.usage))
}

// Fail ends a broken stream the way Google does: what was pending goes
// out, then a bare {"error":…} object on a line of its own, which
// js-genai raises as an ApiError; no finish reason follows, so Gemini
// CLI knows the turn did not end.
func (s *geminiStream) Fail(dst []byte, e *APIError) []byte {
	if s.ended {
		return dst
	}
	s.ended = true
	dst = s.flushCalls(dst)
	dst = append(dst, e.Body(FormatGemini)...)
	return append(dst, '\n')
}

// Usage is read by the upstream-facing translator of the chain.
func (s *geminiStream) Usage() Usage { return Usage{} }

// Complete is decided by the upstream-facing translator.
func (s *geminiStream) Complete() bool { return true }
