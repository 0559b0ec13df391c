package breaker

import "encoding/json"

// readConverse reads a Bedrock Converse message: the model's text and
// toolUse blocks, and the toolResult blocks answering them (status
// "error" is a failed result).
func readConverse(raw []byte) entry {
	var m struct {
		Role    string `json:"role"`
		Content []struct {
			Text    *string `json:"text"`
			ToolUse *struct {
				ToolUseID string          `json:"toolUseId"`
				Name      string          `json:"name"`
				Input     json.RawMessage `json:"input"`
			} `json:"toolUse"`
			ToolResult *struct {
				ToolUseID string          `json:"toolUseId"`
				Content   json.RawMessage `json:"content"`
				Status    string          `json:"status"`
			} `json:"toolResult"`
		} `json:"content"`
	}
	if json.Unmarshal(raw, &m) != nil {
		return entry{}
	}
	e := entry{produced: m.Role == "assistant"}
	for _, b := range m.Content {
		switch {
		case b.ToolUse != nil:
			e.calls = append(e.calls, call{id: b.ToolUse.ToolUseID, name: b.ToolUse.Name, args: entryHash(b.ToolUse.Input)})
		case b.ToolResult != nil:
			text := textOf(b.ToolResult.Content)
			r := result{id: b.ToolResult.ToolUseID, content: contentOf(text, b.ToolResult.Content)}
			if b.ToolResult.Status == "error" || failedText(text) {
				r.failed, r.class = true, classOf(text)
			}
			e.results = append(e.results, r)
		case e.produced && b.Text != nil:
			e.text += *b.Text
		}
	}
	return e
}
