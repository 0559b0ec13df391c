package providers

import (
	"fmt"

	"github.com/modelgate/modelgate/internal/jsonfast"
)

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

// NewRoute builds the route from client to upstream. Same formats pass
// through; chat clients have one translator pair per upstream format;
// every other client format is a spoke that reaches the upstream through
// chat (hubRoute).
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
	case client == FormatGemini && upstream == FormatGemini:
		return nativeGeminiRoute(), nil
	case client == FormatEmbeddings || client == FormatGeminiEmbed:
		return embedRoute(client, upstream), nil
	case client == FormatResponses && upstream == FormatResponses:
		return nativeResponsesRoute(), nil
	case client == FormatAnthropic:
		return hubRoute(client, upstream, messagesSpoke{})
	case client == FormatResponses:
		return hubRoute(client, upstream, responsesSpoke{})
	case client == FormatGemini:
		return hubRoute(client, upstream, geminiSpoke{})
	case client == FormatConverse:
		return hubRoute(client, upstream, converseSpoke{})
	default:
		return Route{}, fmt.Errorf("no route from %s clients to %s upstreams", client, upstream)
	}
	return r, nil
}

func ignoreInfo(f func([]byte) ([]byte, Usage, error)) func([]byte, RequestInfo) ([]byte, Usage, error) {
	return func(raw []byte, _ RequestInfo) ([]byte, Usage, error) { return f(raw) }
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
	for len(b) > 0 && jsonfast.IsSpace(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && jsonfast.IsSpace(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}
