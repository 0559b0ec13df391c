package providers

// messagesSpoke is the Anthropic Messages client format on the hub, for
// upstreams other than Anthropic (which get the body passed through).
type messagesSpoke struct{}

func (messagesSpoke) toChat(body []byte, _ RequestInfo, model string, o chatOptions) ([]byte, error) {
	return AnthropicToOpenAIRequest(body, model, !o.Local)
}

func (messagesSpoke) fromChat(chat []byte, _ RequestInfo) ([]byte, Usage, error) {
	return OpenAIToAnthropicResponse(chat)
}

// fromAnthropic is the pass-through: an Anthropic answer is already the
// client's. NewRoute builds that route without the hub; this keeps the
// spoke whole.
func (messagesSpoke) fromAnthropic(raw []byte, _ RequestInfo) ([]byte, Usage, error) {
	if !looksLikeObject(raw) {
		return nil, Usage{}, ErrNotJSONObject
	}
	return raw, AnthropicUsageFromBody(raw), nil
}

func (messagesSpoke) newStream(model string, _ RequestInfo) StreamTranslator {
	return NewOpenAIToAnthropicStream(model)
}

// readsChatStream: NewOpenAIToAnthropicStream reads chat upstreams'
// streams directly.
func (messagesSpoke) readsChatStream() {}
