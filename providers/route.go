package providers

import "fmt"

// Route is how requests of one client format reach one upstream format:
// the request translator, the response and stream translators, and how
// the upstream frames its streams. It is the one place where the matrix
// of formats is spelled out; the gateway builds one per deployment and
// client format when the models file loads and never switches on formats
// itself. Same-format routes pass the body through with only the model
// spliced in (one allocation).
type Route struct {
	Client, Upstream Format
	// NDJSON: the upstream streams newline-delimited JSON, not SSE.
	NDJSON bool

	request  func(body []byte, info RequestInfo, model string, o RouteOptions) ([]byte, bool, error)
	response func(raw []byte, info RequestInfo) ([]byte, Usage, error)
	stream   func(model string, info RequestInfo, dropUsage bool) StreamTranslator
}

// RouteOptions are what request translation needs to know of the
// deployment and the gateway.
type RouteOptions struct {
	// DefaultMaxTokens is sent to Anthropic when the client set no limit.
	DefaultMaxTokens int64
	// Cloud: the upstream is OpenAI's own API (max_completion_tokens),
	// not a local server (max_tokens).
	Cloud bool
}

// Request translates the client's body for the upstream. dropUsage is
// true when the gateway asked the upstream for a usage chunk the client
// did not ask for, which the stream translator then hides.
func (r *Route) Request(body []byte, info RequestInfo, model string, o RouteOptions) (out []byte, dropUsage bool, err error) {
	return r.request(body, info, model, o)
}

// Response translates a whole upstream answer and reads its usage.
func (r *Route) Response(raw []byte, info RequestInfo) ([]byte, Usage, error) {
	return r.response(raw, info)
}

// Stream returns a translator for one upstream stream.
func (r *Route) Stream(model string, info RequestInfo, dropUsage bool) StreamTranslator {
	return r.stream(model, info, dropUsage)
}

// NewRoute builds the route from client to upstream. Anthropic clients
// reach Ollama through OpenAI chat, chaining two translators.
func NewRoute(client, upstream Format) (Route, error) {
	r := Route{Client: client, Upstream: upstream, NDJSON: upstream == FormatOllama}
	switch {
	case client == FormatOpenAI && upstream == FormatOpenAI:
		r.request = func(body []byte, info RequestInfo, model string, _ RouteOptions) ([]byte, bool, error) {
			out, err := RewriteModel(body, model)
			if err != nil || !info.Stream || info.IncludeUsage {
				return out, false, err
			}
			return EnsureIncludeUsage(out)
		}
		r.response = func(raw []byte, _ RequestInfo) ([]byte, Usage, error) {
			if !looksLikeObject(raw) {
				return nil, Usage{}, ErrNotJSONObject
			}
			return raw, OpenAIUsageFromBody(raw), nil
		}
		r.stream = func(_ string, _ RequestInfo, dropUsage bool) StreamTranslator {
			return NewOpenAIPassthroughStream(dropUsage)
		}
	case client == FormatAnthropic && upstream == FormatAnthropic:
		r.request = func(body []byte, _ RequestInfo, model string, _ RouteOptions) ([]byte, bool, error) {
			out, err := RewriteModel(body, model)
			return out, false, err
		}
		r.response = func(raw []byte, _ RequestInfo) ([]byte, Usage, error) {
			if !looksLikeObject(raw) {
				return nil, Usage{}, ErrNotJSONObject
			}
			return raw, AnthropicUsageFromBody(raw), nil
		}
		r.stream = func(string, RequestInfo, bool) StreamTranslator { return NewAnthropicPassthroughStream() }
	case client == FormatOpenAI && upstream == FormatAnthropic:
		r.request = func(body []byte, _ RequestInfo, model string, o RouteOptions) ([]byte, bool, error) {
			out, err := OpenAIToAnthropicRequest(body, model, o.DefaultMaxTokens)
			return out, false, err
		}
		r.response = ignoreInfo(AnthropicToOpenAIResponse)
		r.stream = func(_ string, info RequestInfo, _ bool) StreamTranslator {
			return NewAnthropicToOpenAIStream(info.IncludeUsage)
		}
	case client == FormatOpenAI && upstream == FormatOllama:
		r.request = func(body []byte, _ RequestInfo, model string, _ RouteOptions) ([]byte, bool, error) {
			out, err := OpenAIToOllamaRequest(body, model)
			return out, false, err
		}
		r.response = ignoreInfo(OllamaToOpenAIResponse)
		r.stream = func(model string, info RequestInfo, _ bool) StreamTranslator {
			return NewOllamaToOpenAIStream(model, info.IncludeUsage)
		}
	case client == FormatAnthropic && upstream == FormatOpenAI:
		r.request = func(body []byte, _ RequestInfo, model string, o RouteOptions) ([]byte, bool, error) {
			out, err := AnthropicToOpenAIRequest(body, model, o.Cloud)
			return out, false, err
		}
		r.response = ignoreInfo(OpenAIToAnthropicResponse)
		r.stream = func(model string, _ RequestInfo, _ bool) StreamTranslator { return NewOpenAIToAnthropicStream(model) }
	case client == FormatAnthropic && upstream == FormatOllama:
		r.request = func(body []byte, _ RequestInfo, model string, _ RouteOptions) ([]byte, bool, error) {
			mid, err := AnthropicToOpenAIRequest(body, model, false)
			if err != nil {
				return nil, false, err
			}
			out, err := OpenAIToOllamaRequest(mid, model)
			return out, false, err
		}
		r.response = func(raw []byte, _ RequestInfo) ([]byte, Usage, error) {
			mid, usage, err := OllamaToOpenAIResponse(raw)
			if err != nil {
				return nil, usage, err
			}
			out, _, err := OpenAIToAnthropicResponse(mid)
			return out, usage, err
		}
		r.stream = func(model string, _ RequestInfo, _ bool) StreamTranslator {
			return Chain(NewOllamaToOpenAIStream(model, true), NewOpenAIToAnthropicStream(model))
		}
	case client == FormatOpenAI && upstream == FormatGemini:
		r.request = func(body []byte, _ RequestInfo, model string, _ RouteOptions) ([]byte, bool, error) {
			out, err := OpenAIToGeminiRequest(body, model)
			return out, false, err
		}
		r.response = func(raw []byte, info RequestInfo) ([]byte, Usage, error) {
			return GeminiToOpenAIResponse(raw, info.Model)
		}
		r.stream = func(model string, info RequestInfo, _ bool) StreamTranslator {
			return NewGeminiToOpenAIStream(model, info.IncludeUsage)
		}
	case client == FormatAnthropic && upstream == FormatGemini:
		r.request = func(body []byte, _ RequestInfo, model string, _ RouteOptions) ([]byte, bool, error) {
			mid, err := AnthropicToOpenAIRequest(body, model, true)
			if err != nil {
				return nil, false, err
			}
			out, err := OpenAIToGeminiRequest(mid, model)
			return out, false, err
		}
		r.response = func(raw []byte, info RequestInfo) ([]byte, Usage, error) {
			mid, usage, err := GeminiToOpenAIResponse(raw, info.Model)
			if err != nil {
				return nil, usage, err
			}
			out, _, err := OpenAIToAnthropicResponse(mid)
			return out, usage, err
		}
		r.stream = func(model string, _ RequestInfo, _ bool) StreamTranslator {
			return Chain(NewGeminiToOpenAIStream(model, true), NewOpenAIToAnthropicStream(model))
		}
	case client == FormatGemini && upstream == FormatGemini:
		return nativeGeminiRoute(), nil
	case client == FormatEmbeddings || client == FormatGeminiEmbed:
		return embedRoute(client, upstream), nil
	case client == FormatResponses && upstream == FormatResponses:
		return nativeResponsesRoute(), nil
	case client == FormatResponses:
		return responsesRoute(upstream)
	case client == FormatGemini:
		return geminiRoute(upstream)
	default:
		return Route{}, fmt.Errorf("no route from %s clients to %s upstreams", client, upstream)
	}
	return r, nil
}

func ignoreInfo(f func([]byte) ([]byte, Usage, error)) func([]byte, RequestInfo) ([]byte, Usage, error) {
	return func(raw []byte, _ RequestInfo) ([]byte, Usage, error) { return f(raw) }
}

// responsesRoute reaches any upstream from a Responses client through the
// hub: the request becomes chat completions, which every upstream format
// has a route from, and the answer comes back through the same route and
// is turned into the Response (docs/architecture.md, "The translation hub").
func responsesRoute(upstream Format) (Route, error) {
	hub, err := NewRoute(FormatOpenAI, upstream)
	if err != nil {
		return Route{}, err
	}
	r := Route{Client: FormatResponses, Upstream: upstream, NDJSON: hub.NDJSON}
	r.request = func(_ []byte, info RequestInfo, model string, o RouteOptions) ([]byte, bool, error) {
		t := info.responses()
		chat, err := t.chatRequest(model, info.Stream, hubOptions{OpenAICloud: upstream == FormatOpenAI && o.Cloud, Anthropic: upstream == FormatAnthropic})
		if err != nil {
			return nil, false, err
		}
		return hub.request(chat, RequestInfo{Model: model, Stream: info.Stream, IncludeUsage: true}, model, o)
	}
	r.response = func(raw []byte, info RequestInfo) ([]byte, Usage, error) {
		chat, usage, err := hub.response(raw, info)
		if err != nil {
			return nil, usage, err
		}
		out, err := info.responses().chatToResponses(chat)
		return out, usage, err
	}
	r.stream = func(model string, info RequestInfo, _ bool) StreamTranslator {
		return Chain(hub.stream(model, RequestInfo{Model: model, Stream: true, IncludeUsage: true}, false), newResponsesStream(info.responses()))
	}
	if upstream == FormatOpenAI {
		// The hub request is already what the upstream takes: the
		// model is written in and usage asked for.
		r.request = func(_ []byte, info RequestInfo, model string, o RouteOptions) ([]byte, bool, error) {
			chat, err := info.responses().chatRequest(model, info.Stream, hubOptions{OpenAICloud: o.Cloud})
			return chat, false, err
		}
		// The answer is already chat: read it once, usage included.
		r.response = func(raw []byte, info RequestInfo) ([]byte, Usage, error) {
			if !looksLikeObject(raw) {
				return nil, Usage{}, ErrNotJSONObject
			}
			return info.responses().chatToResponsesUsage(raw)
		}
	}
	if upstream == FormatAnthropic {
		// Thinking and its signatures have no chat form: whole answers are
		// read directly, streams through the hub's thinking deltas.
		r.response = func(raw []byte, info RequestInfo) ([]byte, Usage, error) {
			return info.responses().anthropicToResponses(raw)
		}
		r.stream = func(_ string, info RequestInfo, _ bool) StreamTranslator {
			return Chain(newAnthropicToHubStream(), newResponsesStream(info.responses()))
		}
	}
	return r, nil
}

// ErrNotJSONObject is a 200 whose body cannot be an answer.
const ErrNotJSONObject constError = "a 200 whose body is not a JSON object (is api_base a web page, or was the answer cut off?)"

// looksLikeObject is the pass-through path's cheap sanity check: an HTML
// page or a truncated answer fails it without a full JSON parse.
func looksLikeObject(b []byte) bool {
	b = trimSpace(b)
	return len(b) >= 2 && b[0] == '{' && b[len(b)-1] == '}'
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && isSpace(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && isSpace(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}
