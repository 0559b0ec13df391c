package providers

import (
	"encoding/json"
	"testing"
)

// TestLoweredBoundKeepsThinkingBelowIt: Claude Code sends a thinking
// budget just under its max_tokens; a budget that lowers max_tokens must
// lower the thinking budget under it (Anthropic refuses budget_tokens >=
// max_tokens), or turn thinking off below Anthropic's 1,024 minimum, and
// leave a budget that already fits alone.
func TestLoweredBoundKeepsThinkingBelowIt(t *testing.T) {
	body := []byte(`{"model":"claude","max_tokens":32000,"thinking":{"type":"enabled","budget_tokens":31999},"messages":[{"role":"user","content":"hi"}]}`)
	for _, tc := range []struct {
		n          int64
		wantType   string
		wantBudget int64
	}{
		{5000, "enabled", 4999},
		{1025, "enabled", 1024},
		{1024, "disabled", 0},
		{10, "disabled", 0},
	} {
		info, err := PeekRequest(body)
		if err != nil {
			t.Fatal(err)
		}
		out, _, err := info.WithOutputLimit(body, tc.n, "max_tokens")
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			MaxTokens int64 `json:"max_tokens"`
			Thinking  struct {
				Type   string `json:"type"`
				Budget int64  `json:"budget_tokens"`
			} `json:"thinking"`
		}
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("%d: %v: %s", tc.n, err, out)
		}
		if got.MaxTokens != tc.n || got.Thinking.Type != tc.wantType || got.Thinking.Budget != tc.wantBudget {
			t.Errorf("bound %d: %s", tc.n, out)
		}
	}
	fits := []byte(`{"model":"claude","max_tokens":32000,"thinking":{"type":"enabled","budget_tokens":2000},"messages":[]}`)
	info, _ := PeekRequest(fits)
	out, _, err := info.WithOutputLimit(fits, 5000, "max_tokens")
	if err != nil || string(out) != `{"model":"claude","max_tokens":5000,"thinking":{"type":"enabled","budget_tokens":2000},"messages":[]}` {
		t.Errorf("a budget that fits changed: %s, %v", out, err)
	}
}
