package providers

import (
	"encoding/base64"
	"encoding/json"
	"strings"
)

// Anthropic thinking travels through a Responses client as a reasoning
// item's encrypted_content: "gw1:" and the base64 of the thinking blocks
// as JSON, signatures and redacted data included (docs/wire-formats.md §9).
// The client keeps it opaque and sends it back; the gateway restores the
// blocks for Anthropic, whose signature check is what makes them
// trustworthy. Other blobs (OpenAI's own "gAAAA…") mean nothing to an
// Anthropic upstream and are dropped.
const thinkingEnvelope = "gw1:"

func sealThinking(blocks []AnthropicBlock) string {
	b, _ := json.Marshal(blocks)
	return thinkingEnvelope + base64.StdEncoding.EncodeToString(b)
}

func openThinking(s string) []AnthropicBlock {
	rest, ok := strings.CutPrefix(s, thinkingEnvelope)
	if !ok {
		return nil
	}
	raw, err := base64.StdEncoding.DecodeString(rest)
	if err != nil {
		return nil
	}
	var blocks []AnthropicBlock
	if json.Unmarshal(raw, &blocks) != nil {
		return nil
	}
	out := blocks[:0]
	for _, b := range blocks {
		switch {
		case b.Type == "thinking" && b.Signature != "":
			out = append(out, AnthropicBlock{Type: "thinking", Thinking: b.Thinking, Signature: b.Signature})
		case b.Type == "redacted_thinking" && b.Data != "":
			out = append(out, AnthropicBlock{Type: "redacted_thinking", Data: b.Data})
		}
	}
	return out
}
