package providers

import "encoding/json"

// anthropicToGemini reads an Anthropic answer directly, so its thinking
// blocks survive: they are sealed into the first function call's
// thoughtSignature, which Gemini clients send back verbatim, and restored
// for Anthropic on the next turn (docs/wire-formats.md §9).
func (t *GeminiTurn) anthropicToGemini(raw []byte) ([]byte, Usage, error) {
	var a struct {
		Model      string           `json:"model"`
		Content    []AnthropicBlock `json:"content"`
		StopReason string           `json:"stop_reason"`
	}
	if err := json.Unmarshal(raw, &a); err != nil {
		return nil, Usage{}, err
	}
	t.Answered = a.Model
	usage := AnthropicUsageFromBody(raw)
	parts := []geminiPart{}
	var thinking []AnthropicBlock
	sealed := false
	for _, b := range a.Content {
		switch b.Type {
		case "thinking":
			thinking = append(thinking, AnthropicBlock{Type: "thinking", Thinking: b.Thinking, Signature: b.Signature})
			if t.includeThoughts && b.Thinking != "" {
				parts = append(parts, geminiPart{Text: b.Thinking, Thought: true})
			}
		case "redacted_thinking":
			thinking = append(thinking, AnthropicBlock{Type: "redacted_thinking", Data: b.Data})
		case "text":
			if b.Text != "" {
				parts = append(parts, geminiPart{Text: b.Text})
			}
		case "tool_use":
			p := geminiPart{FunctionCall: &geminiFunctionCall{ID: b.ID, Name: b.Name, Args: geminiArgs(string(b.Input))}}
			if !sealed && len(thinking) > 0 {
				p.ThoughtSignature = sealThinking(thinking)
				sealed = true
			}
			parts = append(parts, p)
		}
	}
	return t.encode(parts, geminiFinish(a.StopReason), geminiUsageFromAnthropic(usage)), usage, nil
}
