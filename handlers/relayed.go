package handlers

// What a stream cut short is charged for: at least the output its client
// was sent, whatever the upstream had counted by then.

import (
	"bytes"

	"github.com/modelgate/modelgate/providers"
)

// generatedBytes is how many bytes of generated output the client-format
// stream bytes b carry: the lengths of the string values of the fields
// that carry it, escapes counted as written.
func generatedBytes(b []byte) int {
	// Events that repeat output already streamed (the Responses API's
	// *.done and response.completed carry the whole text again): counting
	// them would charge the text twice.
	for _, r := range [...]string{`.done"`, `"response.completed"`, `"response.incomplete"`} {
		if bytes.Contains(b, []byte(r)) {
			return 0
		}
	}
	n := 0
	// The fields whose string values carry generated output in the client
	// formats' stream events: text (Messages, Gemini, Converse), content,
	// reasoning_content and refusal (Chat Completions), delta (Responses),
	// arguments, partial_json and input (tool calls), and thinking. An
	// object-valued one (Messages' "delta":{…}) is no string and is
	// passed over.
	for _, k := range [...]string{`"text":`, `"content":`, `"delta":`, `"arguments":`, `"partial_json":`, `"thinking":`,
		`"reasoning_content":`, `"refusal":`, `"input":`} {
		key := []byte(k)
		for rest := b; ; {
			i := bytes.Index(rest, key)
			if i < 0 {
				break
			}
			rest = bytes.TrimLeft(rest[i+len(key):], " \t")
			if len(rest) == 0 || rest[0] != '"' {
				continue
			}
			end := stringEnd(rest)
			n += end - 1
			rest = rest[end:]
		}
	}
	return n
}

// stringEnd is the index of the quote closing the JSON string s opens
// (s[0] is its opening quote), or len(s) when it is not closed.
func stringEnd(s []byte) int {
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			return i
		}
	}
	return len(s)
}

// cutUsage is the usage of a stream cut short (the client left, the
// upstream broke off or timed out) after its client was sent output:
// partialUsage's estimates, and the output at least a token per 4 bytes
// of the output relayed, as a resumed stream's cut part is charged
// (providers' relayedUsage). An upstream reports its output count at the
// end, or as 1 in Anthropic's message_start, so without this floor a
// client that leaves before the last event reads the answer at almost
// no charge.
func cutUsage(u providers.Usage, events, relayed, bodyBytes int) providers.Usage {
	u = partialUsage(u, events, bodyBytes)
	u.OutputTokens = max(u.OutputTokens, int64(relayed+3)/4)
	return u
}
