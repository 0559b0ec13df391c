package handlers

import "bytes"

// mayReason reports whether a request may have made its upstream work
// unseen before its first output (hidden reasoning the provider bills):
// its deployment reasons unseen by default (modellist.ReasonsUnseen,
// judged at parse), or the request asks for reasoning (OpenAI's
// reasoning_effort or reasoning, Anthropic's thinking, Gemini's
// thinkingConfig). A stalled upstream of any other model did no work its
// client did not see: its silence before the first output is not
// charged. Read only when a client cut a stream, so its scan of the body
// costs other requests nothing.
func mayReason(reasonsUnseen bool, body []byte) bool {
	if reasonsUnseen {
		return true
	}
	for _, k := range [...]string{`"reasoning_effort"`, `"reasoning"`, `"thinking"`, `"thinkingConfig"`, `"thinking_config"`} {
		if bytes.Contains(body, []byte(k)) {
			return true
		}
	}
	return false
}
