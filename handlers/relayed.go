package handlers

// What a stream cut short is charged for: at least the output its client
// was sent, whatever the upstream had counted by then.

import (
	"bytes"

	"github.com/modelgate/modelgate/providers"
)

// generatedBytes is how many bytes of generated output the client-format
// stream bytes b carry: the lengths of the string values of the fields
// that carry it, escapes counted as written. One pass from key to key;
// string values are stepped over, not searched.
func generatedBytes(b []byte) int {
	n := 0
	for i := 0; i < len(b); {
		j := bytes.Index(b[i:], []byte(`":`))
		if j < 0 {
			break
		}
		keyEnd := i + j
		v := keyEnd + 2
		for v < len(b) && (b[v] == ' ' || b[v] == '\t') {
			v++
		}
		if v >= len(b) || b[v] != '"' {
			i = v // an object, array, number or literal: its keys come next
			continue
		}
		end := v + stringEnd(b[v:])
		if k := bytes.LastIndexByte(b[i:keyEnd], '"'); k >= 0 {
			switch key := b[i+k+1 : keyEnd]; string(key) {
			case "text", "content", "delta", "arguments", "partial_json", "thinking", "reasoning_content", "refusal", "input":
				// Messages, Gemini and Converse text; Chat Completions
				// content, reasoning and refusals; Responses deltas; tool
				// call arguments; thinking.
				n += end - v - 1
			case "type":
				// The Responses API's *.done events and response.completed
				// carry the whole text again: counting them would charge
				// it twice.
				if t := b[v+1 : end]; bytes.HasSuffix(t, []byte(".done")) || string(t) == "response.completed" || string(t) == "response.incomplete" {
					return 0
				}
			}
		}
		i = end + 1
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
