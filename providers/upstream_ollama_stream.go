package providers

import (
	"bytes"
	"encoding/json"
	"net/http"
)

// ollamaLine is the part of an NDJSON stream line the translator reads;
// model and the durations are left out so decoding allocates nothing for them.
type ollamaLine struct {
	CreatedAt string `json:"created_at"`
	Message   struct {
		Content   string           `json:"content"`
		Thinking  string           `json:"thinking"`
		ToolCalls []OllamaToolCall `json:"tool_calls"`
	} `json:"message"`
	Done            bool   `json:"done"`
	DoneReason      string `json:"done_reason"`
	PromptEvalCount int64  `json:"prompt_eval_count"`
	EvalCount       int64  `json:"eval_count"`
	Error           string `json:"error"`
}

// ollamaToOpenAIStream turns /api/chat NDJSON lines into OpenAI SSE chunks.
type ollamaToOpenAIStream struct {
	model        string
	includeUsage bool

	ch       chunker
	started  bool // role chunk sent
	finished bool // finish chunk sent
	sawDone  bool // the upstream's done line arrived
	tools    int  // tool calls sent so far: the next delta index
	usage    Usage

	line ollamaLine
	args bytes.Buffer // compacted tool-call arguments, reused
}

// NewOllamaToOpenAIStream translates an Ollama /api/chat stream for a client
// that asked for model, adding the usage chunk when includeUsage is set.
func NewOllamaToOpenAIStream(model string, includeUsage bool) StreamTranslator {
	return &ollamaToOpenAIStream{model: model, includeUsage: includeUsage}
}

func (s *ollamaToOpenAIStream) start(dst []byte, createdAt string) []byte {
	s.ch.init(newCompletionID(), ollamaCreated(createdAt), s.model)
	s.started = true
	return s.ch.role(dst)
}

// Translate implements StreamTranslator.
func (s *ollamaToOpenAIStream) Translate(dst []byte, ev Event) ([]byte, error) {
	l := &s.line
	// Reuse the tool-call backing array but never let a previous line's
	// values leak into this one.
	calls := l.Message.ToolCalls[:cap(l.Message.ToolCalls)]
	clear(calls)
	*l = ollamaLine{}
	l.Message.ToolCalls = calls[:0]
	if err := json.Unmarshal(ev.Data, l); err != nil {
		return dst, &APIError{Status: http.StatusBadGateway, Message: "invalid stream line from ollama"}
	}
	if l.Error != "" {
		return dst, &APIError{Status: http.StatusBadGateway, Message: l.Error}
	}
	if s.finished {
		return dst, nil
	}
	if !s.started {
		dst = s.start(dst, l.CreatedAt)
	}
	if l.Message.Thinking != "" {
		dst = s.ch.reasoning(dst, l.Message.Thinking)
	}
	if l.Message.Content != "" {
		dst = s.ch.content(dst, l.Message.Content)
	}
	for i := range l.Message.ToolCalls {
		tc := &l.Message.ToolCalls[i]
		s.args.Reset()
		raw := bytes.TrimSpace(tc.Function.Arguments)
		if len(raw) == 0 || string(raw) == "null" {
			s.args.WriteString("{}")
		} else if err := json.Compact(&s.args, raw); err != nil {
			return dst, &APIError{Status: http.StatusBadGateway, Message: "invalid tool call arguments from ollama"}
		}
		id := tc.ID
		if id == "" {
			id = newCallID()
		}
		dst = s.ch.toolCall(dst, s.tools, id, tc.Function.Name, s.args.Bytes())
		s.tools++
	}
	if l.Done {
		s.sawDone = true
		s.usage = Usage{InputTokens: l.PromptEvalCount, OutputTokens: l.EvalCount, Seen: true}
		dst = s.end(dst, ollamaFinishReason(l.DoneReason, s.tools > 0))
	}
	return dst, nil
}

func (s *ollamaToOpenAIStream) end(dst []byte, reason string) []byte {
	dst = s.ch.finish(dst, reason)
	if s.includeUsage {
		dst = s.ch.usage(dst, s.usage)
	}
	s.finished = true
	return dst
}

// Finish implements StreamTranslator. A stream that ended without a done
// line still gets a well-formed ending so clients do not hang; its usage
// stays unseen.
func (s *ollamaToOpenAIStream) Finish(dst []byte) []byte {
	if !s.started {
		dst = s.start(dst, "")
	}
	if !s.finished {
		dst = s.end(dst, ollamaFinishReason("", s.tools > 0))
	}
	return append(dst, sseDone...)
}

// Usage implements StreamTranslator.
func (s *ollamaToOpenAIStream) Usage() Usage { return s.usage }

// End implements StreamTranslator: the done line completes the stream;
// Ollama's in-band errors already fail Translate.
func (s *ollamaToOpenAIStream) Complete() bool { return s.sawDone }
