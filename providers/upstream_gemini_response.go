package providers

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/modelgate/modelgate/internal/jsonfast"
)

// geminiUpstreamChunk is a Gemini answer or stream chunk as the gateway
// reads it from a gemini/ upstream.
type geminiUpstreamChunk struct {
	Candidates []struct {
		Content struct {
			Parts []geminiPart `json:"parts"`
		} `json:"content"`
		FinishReason string `json:"finishReason"`
	} `json:"candidates"`
	PromptFeedback *struct {
		BlockReason string `json:"blockReason"`
	} `json:"promptFeedback"`
	UsageMetadata *struct {
		geminiUsage
		ToolUsePromptTokenCount int64 `json:"toolUsePromptTokenCount"`
	} `json:"usageMetadata"`
	ResponseID string           `json:"responseId"`
	Error      *json.RawMessage `json:"error"`
}

// usage in the ledger's terms: Gemini's prompt count includes the cached
// part, and thoughts bill as output.
func (c *geminiUpstreamChunk) usage() (Usage, bool) {
	u := c.UsageMetadata
	if u == nil {
		return Usage{}, false
	}
	cached := min(u.CachedContentTokenCount, u.PromptTokenCount)
	return Usage{InputTokens: u.PromptTokenCount - cached + u.ToolUsePromptTokenCount, CacheReadTokens: cached,
		OutputTokens: u.CandidatesTokenCount + u.ThoughtsTokenCount, Seen: true}, true
}

// chatFinishFromGemini maps Gemini's finish onto chat's; a turn that
// called functions ends with tool_calls, which Gemini does not say.
func chatFinishFromGemini(reason string, calls bool) string {
	switch reason {
	case "MAX_TOKENS":
		return "length"
	case "SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "LANGUAGE",
		"IMAGE_SAFETY", "IMAGE_PROHIBITED_CONTENT", "IMAGE_RECITATION", "IMAGE_OTHER":
		return "content_filter"
	}
	if calls {
		return "tool_calls"
	}
	return "stop"
}

// geminiCallJSON is a chat tool call carrying the Gemini call's thought
// signature where Google's OpenAI layer puts it, for the client to echo.
func appendGeminiToolCall(dst []byte, index int, withIndex bool, fc *geminiFunctionCall, signature string) []byte {
	id := fc.ID
	if id == "" {
		id = newCallID()
	}
	args := fc.Args
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage(`{}`)
	}
	dst = append(dst, '{')
	if withIndex {
		dst = append(dst, `"index":`...)
		dst = jsonfast.AppendInt(dst, int64(index))
		dst = append(dst, ',')
	}
	dst = append(dst, `"id":`...)
	dst = jsonfast.AppendJSONString(dst, id)
	dst = append(dst, `,"type":"function","function":{"name":`...)
	dst = jsonfast.AppendJSONString(dst, fc.Name)
	dst = append(dst, `,"arguments":`...)
	dst = jsonfast.AppendJSONString(dst, compactJSON(args))
	dst = append(dst, '}')
	if signature != "" {
		dst = append(dst, `,"extra_content":{"google":{"thought_signature":`...)
		dst = jsonfast.AppendJSONString(dst, signature)
		dst = append(dst, `}}`...)
	}
	return append(dst, '}')
}

func compactJSON(raw []byte) []byte {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return raw
	}
	return b.Bytes()
}

// GeminiToOpenAIResponse turns a whole Gemini answer into a chat
// completion and reads its usage.
func GeminiToOpenAIResponse(raw []byte, model string) ([]byte, Usage, error) {
	var c geminiUpstreamChunk
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, Usage{}, ErrNotJSONObject
	}
	usage, _ := c.usage()
	var text, thought strings.Builder
	var calls []byte
	n := 0
	finish := "stop"
	if len(c.Candidates) > 0 {
		cand := c.Candidates[0]
		for i := range cand.Content.Parts {
			p := &cand.Content.Parts[i]
			switch {
			case p.FunctionCall != nil:
				if n > 0 {
					calls = append(calls, ',')
				}
				calls = appendGeminiToolCall(calls, n, false, p.FunctionCall, p.ThoughtSignature)
				n++
			case p.Thought:
				thought.WriteString(p.Text)
			default:
				text.WriteString(p.Text)
			}
		}
		finish = chatFinishFromGemini(cand.FinishReason, n > 0)
	} else if c.PromptFeedback != nil && c.PromptFeedback.BlockReason != "" {
		finish = "content_filter"
	}
	id := c.ResponseID
	if id == "" {
		id = newCompletionID()
	} else {
		id = "chatcmpl-" + id
	}
	dst := append([]byte(nil), `{"id":`...)
	dst = jsonfast.AppendJSONString(dst, id)
	dst = append(dst, `,"object":"chat.completion","created":`...)
	dst = jsonfast.AppendInt(dst, time.Now().Unix())
	dst = append(dst, `,"model":`...)
	dst = jsonfast.AppendJSONString(dst, model)
	dst = append(dst, `,"choices":[{"index":0,"message":{"role":"assistant","content":`...)
	if text.Len() > 0 || n == 0 {
		dst = jsonfast.AppendJSONString(dst, text.String())
	} else {
		dst = append(dst, "null"...)
	}
	if thought.Len() > 0 {
		dst = append(dst, `,"reasoning_content":`...)
		dst = jsonfast.AppendJSONString(dst, thought.String())
	}
	if n > 0 {
		dst = append(dst, `,"tool_calls":[`...)
		dst = append(dst, calls...)
		dst = append(dst, ']')
	}
	dst = append(dst, `},"logprobs":null,"finish_reason":`...)
	dst = jsonfast.AppendJSONString(dst, finish)
	dst = append(dst, `}],"usage":`...)
	dst = appendOpenAIUsage(dst, usage)
	return append(dst, '}'), usage, nil
}

// geminiToOpenAIStream turns Gemini's stream (whole GenerateContentResponse
// chunks, text deltas, each function call complete in one part) into chat
// chunks.
type geminiToOpenAIStream struct {
	model        string
	includeUsage bool
	ch           chunker
	started      bool
	finished     bool
	sawFinish    bool
	calls        int
	usage        Usage
	finish       string
	scratch      []byte
}

// NewGeminiToOpenAIStream translates a gemini/ upstream's SSE stream.
func NewGeminiToOpenAIStream(model string, includeUsage bool) StreamTranslator {
	return &geminiToOpenAIStream{model: model, includeUsage: includeUsage}
}

func (s *geminiToOpenAIStream) Translate(dst []byte, ev Event) ([]byte, error) {
	var c geminiUpstreamChunk
	if err := json.Unmarshal(ev.Data, &c); err != nil {
		return dst, &APIError{Status: http.StatusBadGateway, Message: "invalid stream chunk from gemini"}
	}
	if c.Error != nil {
		e := UpstreamError(http.StatusBadGateway, ev.Data)
		return dst, e
	}
	if !s.started {
		id := newCompletionID()
		if c.ResponseID != "" {
			id = "chatcmpl-" + c.ResponseID
		}
		s.ch.init(id, time.Now().Unix(), s.model)
		s.started = true
		dst = s.ch.role(dst)
	}
	if u, ok := c.usage(); ok {
		s.usage = u
	}
	if s.finished {
		return dst, nil
	}
	if len(c.Candidates) == 0 {
		if c.PromptFeedback != nil && c.PromptFeedback.BlockReason != "" {
			s.sawFinish = true
			s.finish = "content_filter"
		}
		return dst, nil
	}
	cand := &c.Candidates[0]
	for i := range cand.Content.Parts {
		p := &cand.Content.Parts[i]
		switch {
		case p.FunctionCall != nil:
			s.scratch = appendGeminiToolCall(s.scratch[:0], s.calls, true, p.FunctionCall, p.ThoughtSignature)
			dst = s.ch.open(dst)
			dst = append(dst, `{"tool_calls":[`...)
			dst = append(dst, s.scratch...)
			dst = append(dst, `]}`...)
			dst = s.ch.close(dst, "")
			s.calls++
		case p.Thought:
			if p.Text != "" {
				dst = s.ch.delta(dst, "reasoning_content", p.Text)
			}
		case p.Text != "":
			dst = s.ch.content(dst, p.Text)
		}
	}
	if cand.FinishReason != "" {
		s.sawFinish = true
		s.finish = chatFinishFromGemini(cand.FinishReason, s.calls > 0)
	}
	return dst, nil
}

// Finish sends the finish chunk and the usage chunk: Gemini's usage rides
// on the chunk with the finish reason, so both wait for the stream's end.
func (s *geminiToOpenAIStream) Finish(dst []byte) []byte {
	if !s.started {
		s.ch.init(newCompletionID(), time.Now().Unix(), s.model)
		s.started = true
		dst = s.ch.role(dst)
	}
	if !s.finished {
		s.finished = true
		finish := s.finish
		if finish == "" {
			finish = chatFinishFromGemini("", s.calls > 0)
		}
		dst = s.ch.finish(dst, finish)
		if s.includeUsage {
			dst = s.ch.usage(dst, s.usage)
		}
	}
	return append(dst, sseDone...)
}

func (s *geminiToOpenAIStream) Usage() Usage   { return s.usage }
func (s *geminiToOpenAIStream) Complete() bool { return s.sawFinish }
