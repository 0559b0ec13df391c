package providers

import (
	"encoding/json"
	"strings"
	"testing"
)

const anthropicToolResponse = `{
  "id": "msg_01XYZ", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5-20250929",
  "content": [
    {"type": "thinking", "thinking": "hmm", "signature": "sig"},
    {"type": "text", "text": "Checking."},
    {"type": "tool_use", "id": "toolu_01A", "name": "get_weather", "input": {"city": "Oslo"}}
  ],
  "stop_reason": "tool_use", "stop_sequence": null,
  "usage": {"input_tokens": 410, "output_tokens": 52, "cache_creation_input_tokens": 300, "cache_read_input_tokens": 2048,
    "cache_creation": {"ephemeral_5m_input_tokens": 100, "ephemeral_1h_input_tokens": 200},
    "server_tool_use": {"web_search_requests": 0}, "service_tier": "standard"}
}`

func TestAnthropicToOpenAIResponse(t *testing.T) {
	out, u, err := AnthropicToOpenAIResponse([]byte(anthropicToolResponse))
	if err != nil {
		t.Fatal(err)
	}
	want := Usage{InputTokens: 410, CacheCreation5m: 100, CacheCreation1h: 200, CacheReadTokens: 2048, OutputTokens: 52, ServiceTier: "standard", Seen: true}
	if u != want {
		t.Errorf("usage = %+v, want %+v", u, want)
	}
	var got struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Model   string `json:"model"`
		Created int64  `json:"created"`
		Choices []struct {
			Message struct {
				Role      string  `json:"role"`
				Content   *string `json:"content"`
				ToolCalls []struct {
					ID       string `json:"id"`
					Type     string `json:"type"`
					Function struct{ Name, Arguments string }
				} `json:"tool_calls"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Usage struct {
			PromptTokens        int64 `json:"prompt_tokens"`
			CompletionTokens    int64 `json:"completion_tokens"`
			TotalTokens         int64 `json:"total_tokens"`
			PromptTokensDetails struct {
				CachedTokens int64 `json:"cached_tokens"`
			} `json:"prompt_tokens_details"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if got.ID != "chatcmpl-01XYZ" || got.Object != "chat.completion" || got.Model != "claude-sonnet-4-5-20250929" || got.Created == 0 {
		t.Errorf("envelope = %+v", got)
	}
	c := got.Choices[0]
	if c.FinishReason != "tool_calls" || c.Message.Role != "assistant" || c.Message.Content == nil || *c.Message.Content != "Checking." {
		t.Errorf("choice = %+v", c)
	}
	if len(c.Message.ToolCalls) != 1 || c.Message.ToolCalls[0].ID != "toolu_01A" || c.Message.ToolCalls[0].Function.Arguments != `{"city": "Oslo"}` {
		t.Errorf("tool calls = %+v", c.Message.ToolCalls)
	}
	if got.Usage.PromptTokens != 410+300+2048 || got.Usage.CompletionTokens != 52 || got.Usage.TotalTokens != 410+300+2048+52 || got.Usage.PromptTokensDetails.CachedTokens != 2048 {
		t.Errorf("usage = %+v", got.Usage)
	}
}

func TestStopReasonMapping(t *testing.T) {
	for stop, finish := range map[string]string{
		"end_turn": "stop", "stop_sequence": "stop", "pause_turn": "stop", "max_tokens": "length",
		"model_context_window_exceeded": "length", "tool_use": "tool_calls", "refusal": "content_filter",
	} {
		body := `{"id":"msg_1","type":"message","content":[{"type":"text","text":"x"}],"stop_reason":"` + stop + `","usage":{"input_tokens":1,"output_tokens":1}}`
		out, _, err := AnthropicToOpenAIResponse([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(out), `"finish_reason":"`+finish+`"`) {
			t.Errorf("%s → %s", stop, out)
		}
	}
	for finish, stop := range map[string]string{
		"stop": "end_turn", "length": "max_tokens", "tool_calls": "tool_use", "function_call": "tool_use", "content_filter": "refusal",
	} {
		body := `{"id":"c","choices":[{"index":0,"message":{"role":"assistant","content":"x"},"finish_reason":"` + finish + `"}]}`
		out, _, err := OpenAIToAnthropicResponse([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(out), `"stop_reason":"`+stop+`"`) {
			t.Errorf("%s → %s", finish, out)
		}
	}
}

func TestOpenAIToAnthropicResponse(t *testing.T) {
	body := `{"id":"chatcmpl-123","object":"chat.completion","created":1730000000,"model":"gpt-4o",
	  "choices":[{"index":0,"message":{"role":"assistant","content":"Let me look.","refusal":null,"tool_calls":[
	    {"id":"call_abc","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Oslo\"}"}},
	    {"id":"","type":"function","function":{"name":"broken","arguments":"{not json"}}]},"logprobs":null,"finish_reason":"tool_calls"}],
	  "usage":{"prompt_tokens":1200,"completion_tokens":30,"total_tokens":1230,"prompt_tokens_details":{"cached_tokens":1000},"completion_tokens_details":{"reasoning_tokens":0}}}`
	out, u, err := OpenAIToAnthropicResponse([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if want := (Usage{InputTokens: 200, CacheReadTokens: 1000, OutputTokens: 30, Seen: true}); u != want {
		t.Errorf("usage = %+v, want %+v", u, want)
	}
	var got struct {
		ID         string `json:"id"`
		Type       string `json:"type"`
		Role       string `json:"role"`
		Model      string `json:"model"`
		StopReason string `json:"stop_reason"`
		Content    []struct {
			Type  string          `json:"type"`
			Text  string          `json:"text"`
			ID    string          `json:"id"`
			Name  string          `json:"name"`
			Input json.RawMessage `json:"input"`
		} `json:"content"`
		Usage map[string]json.RawMessage `json:"usage"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if got.ID != "msg_chatcmpl-123" || got.Type != "message" || got.Role != "assistant" || got.Model != "gpt-4o" || got.StopReason != "tool_use" {
		t.Errorf("envelope = %+v", got)
	}
	if len(got.Content) != 3 || got.Content[0].Text != "Let me look." {
		t.Fatalf("content = %+v", got.Content)
	}
	if b := got.Content[1]; b.ID != "call_abc" || b.Name != "get_weather" || string(b.Input) != `{"city":"Oslo"}` {
		t.Errorf("tool_use = %+v", b)
	}
	if b := got.Content[2]; !strings.HasPrefix(b.ID, "toolu_") || string(b.Input) != `{"arguments":"{not json"}` {
		t.Errorf("broken tool_use = %+v %s", b, b.Input)
	}
	for k, v := range map[string]string{"input_tokens": "200", "cache_read_input_tokens": "1000", "cache_creation_input_tokens": "0", "output_tokens": "30"} {
		if string(got.Usage[k]) != v {
			t.Errorf("usage.%s = %s, want %s", k, got.Usage[k], v)
		}
	}
}

func TestOpenAIToAnthropicResponseEmpty(t *testing.T) {
	out, u, err := OpenAIToAnthropicResponse([]byte(`{"id":"x","choices":[{"message":{"content":null},"finish_reason":"stop"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if u.Seen {
		t.Errorf("usage seen without a usage object: %+v", u)
	}
	// Anthropic clients iterate content; it must be an array, never null.
	if !strings.Contains(string(out), `"content":[]`) {
		t.Errorf("out = %s", out)
	}
	if _, _, err := OpenAIToAnthropicResponse([]byte(`<html>`)); err == nil {
		t.Error("html body accepted")
	}
	if _, _, err := AnthropicToOpenAIResponse([]byte(`{"type":"error","error":{"type":"api_error"}}`)); err == nil {
		t.Error("error body accepted as a message")
	}
}

func TestUsageFromBody(t *testing.T) {
	tests := []struct {
		name string
		got  Usage
		want Usage
	}{
		{"anthropic ttl split", AnthropicUsageFromBody([]byte(anthropicToolResponse)),
			Usage{InputTokens: 410, CacheCreation5m: 100, CacheCreation1h: 200, CacheReadTokens: 2048, OutputTokens: 52, ServiceTier: "standard", Seen: true}},
		{"anthropic no split", AnthropicUsageFromBody([]byte(`{"content":[{"type":"text","text":"\"usage\": {}"}],"usage":{"input_tokens":5,"cache_creation_input_tokens":7,"output_tokens":2}}`)),
			Usage{InputTokens: 5, CacheCreation5m: 7, OutputTokens: 2, Seen: true}},
		{"anthropic none", AnthropicUsageFromBody([]byte(`{"id":"x"}`)), Usage{}},
		{"openai cached", OpenAIUsageFromBody([]byte(`{"choices":[],"usage":{"prompt_tokens":100,"completion_tokens":9,"total_tokens":109,"prompt_tokens_details":{"cached_tokens":60}}}`)),
			Usage{InputTokens: 40, CacheReadTokens: 60, OutputTokens: 9, Seen: true}},
		{"openai cache writes", OpenAIUsageFromBody([]byte(`{"usage":{"prompt_tokens":100,"completion_tokens":1,"prompt_tokens_details":{"cached_tokens":10,"cache_write_tokens":30}}}`)),
			Usage{InputTokens: 60, CacheReadTokens: 10, CacheCreation5m: 30, OutputTokens: 1, Seen: true}},
		{"openai service tier", OpenAIUsageFromBody([]byte(`{"service_tier":"flex","usage":{"prompt_tokens":3,"completion_tokens":1}}`)),
			Usage{InputTokens: 3, OutputTokens: 1, ServiceTier: "flex", Seen: true}},
		{"anthropic priority tier", AnthropicUsageFromBody([]byte(`{"usage":{"input_tokens":5,"output_tokens":2,"service_tier":"priority"}}`)),
			Usage{InputTokens: 5, OutputTokens: 2, ServiceTier: "priority", Seen: true}},
		{"openai null usage", OpenAIUsageFromBody([]byte(`{"usage":null}`)), Usage{}},
		{"openai garbage", OpenAIUsageFromBody([]byte(`not json`)), Usage{}},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: got %+v, want %+v", tt.name, tt.got, tt.want)
		}
	}
}
