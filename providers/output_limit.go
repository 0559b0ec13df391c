package providers

// OutputLimit is the most output tokens the request allows, as its client
// wrote it (max_completion_tokens or max_tokens, Responses'
// max_output_tokens, Gemini's maxOutputTokens); 0 when it sets none.
// Budget reservations bound a request's cost with it: a client asking for
// 100k tokens must not be admitted on a 4k reservation.
func (info RequestInfo) OutputLimit() int64 {
	switch {
	case info.Responses != nil:
		if m := info.Responses.Req.MaxOutputTokens; m != nil && *m > 0 {
			return *m
		}
		return 0
	case info.Gemini != nil:
		if g := info.Gemini.req.GenerationConfig; g != nil && g.MaxOutputTokens != nil && *g.MaxOutputTokens > 0 {
			return *g.MaxOutputTokens
		}
		return 0
	}
	return max(info.maxTokens, 0)
}

// Choices is how many answers the request asks for (chat's n, Gemini's
// candidateCount), at least 1: the upstream bills each its own output.
func (info RequestInfo) Choices() int64 {
	if info.Gemini != nil {
		if g := info.Gemini.req.GenerationConfig; g != nil && g.CandidateCount != nil && *g.CandidateCount > 1 {
			return min(*g.CandidateCount, 1<<20)
		}
		return 1
	}
	return max(info.choices, 1)
}

// InputBytes is the size of the input the upstream will be sent, as far
// as the gateway adds to the client's body: a Responses turn's stored
// history and referenced items are billed as input too.
func (info RequestInfo) InputBytes(body []byte) int64 {
	n := int64(len(body))
	if info.Responses != nil {
		n += info.Responses.resolvedBytes
	}
	return n
}
