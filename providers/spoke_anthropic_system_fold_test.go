package providers

import (
	"encoding/json"
	"testing"
)

func TestMidConversationSystemFoldedForLocalServers(t *testing.T) {
	body := []byte(`{"model":"x","max_tokens":50,"system":"You are terse.",
		"messages":[{"role":"user","content":"hi"},{"role":"system","content":"Reminder: be safe."},
		{"role":"assistant","content":"hello"},{"role":"user","content":"bye"}]}`)
	roles := func(cloud bool) ([]string, string) {
		out, err := AnthropicToOpenAIRequest(body, "m", cloud)
		if err != nil {
			t.Fatal(err)
		}
		var req struct {
			Messages []struct {
				Role    string `json:"role"`
				Content string `json:"content"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(out, &req); err != nil {
			t.Fatal(err)
		}
		var rs []string
		for _, m := range req.Messages {
			rs = append(rs, m.Role)
		}
		return rs, req.Messages[0].Content
	}
	local, first := roles(false)
	if got := join(local); got != "system,user,assistant,user" {
		t.Errorf("local roles = %s", got)
	}
	if first != "You are terse.\n\nReminder: be safe." {
		t.Errorf("local leading system = %q", first)
	}
	cloud, first := roles(true)
	if got := join(cloud); got != "system,user,system,assistant,user" || first != "You are terse." {
		t.Errorf("cloud roles = %s, first %q: OpenAI's API keeps system messages in place", got, first)
	}
}

func join(ss []string) string {
	out := ""
	for i, s := range ss {
		if i > 0 {
			out += ","
		}
		out += s
	}
	return out
}
