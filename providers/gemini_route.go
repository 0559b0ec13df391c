package providers

// geminiRoute reaches any upstream from a Gemini client through the hub,
// as responsesRoute does for Responses clients: the turn is written as a
// chat request, which every upstream format has a route from, and the
// answer comes back through that route and is written in Gemini's shape.
func geminiRoute(upstream Format) (Route, error) {
	hub, err := NewRoute(FormatOpenAI, upstream)
	if err != nil {
		return Route{}, err
	}
	hubInfo := func(model string, stream bool) RequestInfo {
		return RequestInfo{Model: model, Stream: stream, IncludeUsage: true}
	}
	r := Route{Client: FormatGemini, Upstream: upstream, NDJSON: hub.NDJSON}
	r.request = func(_ []byte, info RequestInfo, model string, o RouteOptions) ([]byte, bool, error) {
		chat, err := info.gemini().chatRequest(model, info.Stream, hubOptions{OpenAICloud: upstream == FormatOpenAI && o.Cloud, Anthropic: upstream == FormatAnthropic})
		if err != nil {
			return nil, false, err
		}
		if upstream == FormatOpenAI {
			// Already what the upstream takes: model written in, usage asked for.
			return chat, false, nil
		}
		return hub.request(chat, hubInfo(model, info.Stream), model, o)
	}
	r.response = func(raw []byte, info RequestInfo) ([]byte, Usage, error) {
		chat, usage, err := hub.response(raw, hubInfo(info.Model, false))
		if err != nil {
			return nil, usage, err
		}
		out, err := info.gemini().chatToGemini(chat)
		return out, usage, err
	}
	r.stream = func(model string, info RequestInfo, _ bool) StreamTranslator {
		return Chain(hub.stream(model, hubInfo(model, true), false), newGeminiStream(info.gemini()))
	}
	if upstream == FormatAnthropic {
		// Thinking and its signatures have no chat form: whole answers are
		// read directly, streams through the hub's thinking deltas.
		r.response = func(raw []byte, info RequestInfo) ([]byte, Usage, error) {
			return info.gemini().anthropicToGemini(raw)
		}
		r.stream = func(_ string, info RequestInfo, _ bool) StreamTranslator {
			return Chain(newAnthropicToHubStream(), newGeminiStream(info.gemini()))
		}
	}
	return r, nil
}

// countBody is the turn as an Anthropic count_tokens body, the form the
// gateway's token counting takes.
func (t *GeminiTurn) countBody(model string) ([]byte, error) {
	chat, err := t.chatRequest(model, false, hubOptions{Anthropic: true})
	if err != nil {
		return nil, err
	}
	return countBodyFromChat(chat, model)
}
