package providers

import (
	"crypto/rand"
	"strings"
)

// validIDByte reports whether c may appear in an Anthropic tool-use id,
// which must match ^[a-zA-Z0-9_-]+$.
func validIDByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// sanitizeID maps an OpenAI tool-call id onto Anthropic's id alphabet by
// replacing every other byte with '_'. The mapping is a pure function of
// the id, so a call and its result, translated separately, still match.
// Valid ids (the common case) are returned without copying.
func sanitizeID(id string) string {
	for i := 0; i < len(id); i++ {
		if !validIDByte(id[i]) {
			b := []byte(id)
			for j := i; j < len(b); j++ {
				if !validIDByte(b[j]) {
					b[j] = '_'
				}
			}
			return string(b)
		}
	}
	return id
}

// newToolUseID is a fresh Anthropic-style tool-use id for a call whose
// upstream gave none.
func newToolUseID() string { return "toolu_" + rand.Text() }

// newCallID is a fresh OpenAI-style tool-call id.
func newCallID() string { return "call_" + rand.Text() }

// newCompletionID is a fresh OpenAI chat completion id.
func newCompletionID() string { return "chatcmpl-" + rand.Text() }

// anthropicMessageID derives a `msg_` id from an upstream OpenAI response
// id, so the same upstream response always maps to the same id.
func anthropicMessageID(openaiID string) string {
	if openaiID == "" {
		return "msg_" + rand.Text()
	}
	if strings.HasPrefix(openaiID, "msg_") {
		return sanitizeID(openaiID)
	}
	return "msg_" + sanitizeID(openaiID)
}

// openAICompletionID derives a `chatcmpl-` id from an Anthropic message id.
func openAICompletionID(msgID string) string {
	if msgID == "" {
		return "chatcmpl-" + rand.Text()
	}
	return "chatcmpl-" + strings.TrimPrefix(msgID, "msg_")
}
