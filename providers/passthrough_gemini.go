package providers

import (
	"encoding/json"
	"net/http"
)

// Gemini clients to gemini/ upstreams: the body goes as sent (the model is
// in the URL), the answer comes back as sent; only usage is read.

func nativeGeminiRoute() Route {
	r := Route{Client: FormatGemini, Upstream: FormatGemini}
	r.request = func(body []byte, _ RequestInfo, _ string, _ RouteOptions) ([]byte, bool, error) {
		return body, false, nil
	}
	r.response = func(raw []byte, _ RequestInfo) ([]byte, Usage, error) {
		var c geminiUpstreamChunk
		if !looksLikeObject(raw) || json.Unmarshal(raw, &c) != nil {
			return nil, Usage{}, ErrNotJSONObject
		}
		u, _ := c.usage()
		return raw, u, nil
	}
	r.stream = func(string, RequestInfo, bool) StreamTranslator { return &geminiPassthroughStream{} }
	return r
}

type geminiPassthroughStream struct {
	usage     Usage
	sawFinish bool
}

func (s *geminiPassthroughStream) Translate(dst []byte, ev Event) ([]byte, error) {
	var c geminiUpstreamChunk
	if err := json.Unmarshal(ev.Data, &c); err != nil {
		return dst, &APIError{Status: http.StatusBadGateway, Message: "invalid stream chunk from gemini"}
	}
	if c.Error != nil {
		return dst, UpstreamError(http.StatusBadGateway, ev.Data)
	}
	if u, ok := c.usage(); ok {
		s.usage = u
	}
	for _, cand := range c.Candidates {
		if cand.FinishReason != "" {
			s.sawFinish = true
		}
	}
	if c.PromptFeedback != nil && c.PromptFeedback.BlockReason != "" {
		s.sawFinish = true
	}
	dst = append(dst, "data: "...)
	dst = append(dst, ev.Data...)
	return append(dst, "\n\n"...), nil
}

func (s *geminiPassthroughStream) Finish(dst []byte) []byte { return dst }
func (s *geminiPassthroughStream) Usage() Usage             { return s.usage }
func (s *geminiPassthroughStream) Complete() bool           { return s.sawFinish }
