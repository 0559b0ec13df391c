package providers

// responsesSpoke is the Responses client format on the hub: the turn
// parsed from the request (RequestInfo.Responses) is written as chat, and
// answers come back as the Response or its event stream.
type responsesSpoke struct{}

func (responsesSpoke) toChat(_ []byte, info RequestInfo, model string, o chatOptions) ([]byte, error) {
	return info.responses().toChat(model, info.Stream, o)
}

func (responsesSpoke) fromChat(chat []byte, info RequestInfo) ([]byte, Usage, error) {
	if !looksLikeObject(chat) {
		return nil, Usage{}, ErrNotJSONObject
	}
	return info.responses().chatToResponsesUsage(chat)
}

func (responsesSpoke) fromAnthropic(raw []byte, info RequestInfo) ([]byte, Usage, error) {
	return info.responses().anthropicToResponses(raw)
}

func (responsesSpoke) newStream(_ string, info RequestInfo) StreamTranslator {
	return newResponsesStream(info.responses())
}
