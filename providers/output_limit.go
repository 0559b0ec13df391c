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
