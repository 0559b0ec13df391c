package providers

// OutputLimit is the most output tokens the request allows, as its client
// wrote it (max_completion_tokens or max_tokens, Responses'
// max_output_tokens, Gemini's maxOutputTokens); 0 when it sets none.
// Budget reservations bound a request's cost with it: a client asking for
// 100k tokens must not be admitted on a 4k reservation.
func (info RequestInfo) OutputLimit() int64 {
	if info.Turn != nil {
		return info.Turn.limits().output
	}
	return max(info.maxTokens, 0)
}

// OutputBound is the output the request may produce: what its client
// allows, else def; an embeddings request produces none.
func (info RequestInfo) OutputBound(def int64) int64 {
	if info.Turn != nil && info.Turn.limits().noOutput {
		return 0
	}
	if n := info.OutputLimit(); n > 0 {
		return n
	}
	return def
}

// Choices is how many answers the request asks for (chat's n, Gemini's
// candidateCount), at least 1: the upstream bills each its own output.
func (info RequestInfo) Choices() int64 {
	if info.Turn != nil {
		return info.Turn.limits().choices
	}
	return max(info.choices, 1)
}

// InputBytes is the size of the input the upstream will be sent, as far
// as the gateway adds to the client's body: a Responses turn's stored
// history and referenced items are billed as input too.
func (info RequestInfo) InputBytes(body []byte) int64 {
	n := int64(len(body))
	if info.Turn != nil {
		n += info.Turn.limits().history
	}
	return n
}

// ReferencesContent reports whether the input the upstream will be sent
// carries content given by reference (see the function of that name):
// in body, or in a Responses turn's stored history and referenced items,
// which the upstream bills again on every turn.
func (info RequestInfo) ReferencesContent(body []byte) bool {
	return ReferencesContent(body) || info.Turn != nil && info.Turn.limits().referenced
}

// PricedContent is PricedContent(body) with a Responses turn's stored
// history and referenced items counted as in ReferencesContent.
func (info RequestInfo) PricedContent(body []byte) (tool string, referenced bool) {
	tool, referenced = PricedContent(body)
	return tool, tool == "" && (referenced || info.Turn != nil && info.Turn.limits().referenced)
}
