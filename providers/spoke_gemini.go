package providers

// geminiSpoke is the Gemini client format on the hub: the turn parsed
// from the request (RequestInfo.Gemini) is written as chat, and answers
// come back in Gemini's shape.
type geminiSpoke struct{}

func (geminiSpoke) toChat(_ []byte, info RequestInfo, model string, o chatOptions) ([]byte, error) {
	return info.gemini().toChat(model, info.Stream, o)
}

func (geminiSpoke) fromChat(chat []byte, info RequestInfo) ([]byte, Usage, error) {
	if !looksLikeObject(chat) {
		return nil, Usage{}, ErrNotJSONObject
	}
	usage := OpenAIUsageFromBody(chat)
	out, err := info.gemini().chatToGemini(chat)
	return out, usage, err
}

func (geminiSpoke) fromAnthropic(raw []byte, info RequestInfo) ([]byte, Usage, error) {
	return info.gemini().anthropicToGemini(raw)
}

func (geminiSpoke) newStream(_ string, info RequestInfo) StreamTranslator {
	return newGeminiStream(info.gemini())
}

// countBody is the turn as an Anthropic count_tokens body, the form the
// gateway's token counting takes.
func (t *GeminiTurn) countBody(model string) ([]byte, error) {
	chat, err := t.toChat(model, false, chatOptions{Anthropic: true})
	if err != nil {
		return nil, err
	}
	return countBodyFromChat(chat, model)
}
