package providers

import (
	"bytes"
	"cmp"
	"encoding/json"
)

// The hub's answers (chat completions, or Anthropic's own for thinking)
// written as Gemini's GenerateContentResponse: candidates[0].content.parts
// (thought parts first, then text, then functionCall), a finishReason in
// UPPER_CASE and usageMetadata.

// geminiFinish maps a chat or Anthropic finish onto Gemini's; tool calls
// end with STOP, as Gemini's own do.
func geminiFinish(reason string) string {
	switch reason {
	case "length", "max_tokens", "model_context_window_exceeded":
		return "MAX_TOKENS"
	case "content_filter", "refusal":
		return "SAFETY"
	}
	return "STOP"
}

// geminiUsageFromChat: Gemini counts thoughts apart from candidates, and
// its prompt count includes the cached part, as chat's does.
func geminiUsageFromChat(u *chatUsage) *geminiUsage {
	if u == nil {
		return nil
	}
	g := &geminiUsage{PromptTokenCount: u.PromptTokens, CandidatesTokenCount: u.CompletionTokens}
	if d := u.PromptTokensDetails; d != nil {
		g.CachedContentTokenCount = d.CachedTokens
	}
	if d := u.CompletionTokensDetails; d != nil && d.ReasoningTokens <= u.CompletionTokens {
		g.ThoughtsTokenCount = d.ReasoningTokens
		g.CandidatesTokenCount -= d.ReasoningTokens
	}
	g.TotalTokenCount = g.PromptTokenCount + g.CandidatesTokenCount + g.ThoughtsTokenCount
	return g
}

// geminiUsageFromAnthropic: Anthropic's input excludes cache reads and
// writes, Gemini's prompt count includes them.
func geminiUsageFromAnthropic(u Usage) *geminiUsage {
	g := &geminiUsage{PromptTokenCount: u.TotalInput(), CachedContentTokenCount: u.CacheReadTokens, CandidatesTokenCount: u.OutputTokens}
	g.TotalTokenCount = g.PromptTokenCount + g.CandidatesTokenCount
	return g
}

// geminiArgs makes a call's JSON-string arguments the object Gemini
// requires; arguments that are not an object are kept under "arguments"
// rather than lost.
func geminiArgs(args string) json.RawMessage {
	a := bytes.TrimSpace([]byte(args))
	if len(a) == 0 {
		return json.RawMessage(`{}`)
	}
	if a[0] == '{' && json.Valid(a) {
		return a
	}
	b, _ := json.Marshal(map[string]string{"arguments": args})
	return b
}

// encode writes one GenerateContentResponse. U+0085 is escaped because
// python-genai splits stream lines at it and encoding/json leaves it raw.
func (t *GeminiTurn) encode(parts []geminiPart, finish string, usage *geminiUsage) []byte {
	resp := geminiResponse{ModelVersion: cmp.Or(t.Answered, t.Alias), ResponseID: t.ResponseID, UsageMetadata: usage}
	if parts != nil || finish != "" {
		c := geminiCandidate{FinishReason: finish}
		if parts != nil {
			c.Content = &geminiContent{Role: "model", Parts: parts}
		}
		resp.Candidates = []geminiCandidate{c}
	}
	b, _ := json.Marshal(resp)
	if bytes.Contains(b, []byte("\u0085")) {
		b = bytes.ReplaceAll(b, []byte("\u0085"), []byte(`\u0085`))
	}
	return b
}

// chatToGemini turns a whole chat answer into the Gemini answer.
func (t *GeminiTurn) chatToGemini(raw []byte) ([]byte, error) {
	var a chatAnswer
	if !readChatAnswer(raw, &a) {
		if err := json.Unmarshal(raw, &a); err != nil {
			return nil, err
		}
	}
	t.Answered = a.Model
	var parts []geminiPart
	finish := "STOP"
	if len(a.Choices) > 0 {
		c := &a.Choices[0]
		m := &c.Message
		if r := m.reasoning(); r != "" && t.includeThoughts {
			parts = append(parts, geminiPart{Text: r, Thought: true})
		}
		if m.Content != nil && *m.Content != "" {
			parts = append(parts, geminiPart{Text: *m.Content})
		}
		if m.Refusal != nil && *m.Refusal != "" {
			parts = append(parts, geminiPart{Text: *m.Refusal})
		}
		for _, tc := range m.ToolCalls {
			parts = append(parts, geminiPart{FunctionCall: &geminiFunctionCall{ID: tc.ID, Name: tc.Function.Name, Args: geminiArgs(tc.Function.Arguments)}})
		}
		finish = geminiFinish(c.FinishReason)
		if m.Refusal != nil && *m.Refusal != "" {
			finish = "SAFETY"
		}
	}
	if parts == nil {
		parts = []geminiPart{}
	}
	return t.encode(parts, finish, geminiUsageFromChat(a.Usage)), nil
}
