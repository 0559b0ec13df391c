package providers

import (
	"encoding/json"
	"fmt"
	"regexp"
	"testing"
)

// Review tests of the translation rules in docs/wire-formats.md §5.

var anthropicIDPattern = regexp.MustCompile(`^[a-zA-Z0-9_-]+$`)

// §5.1: tool_call ids outside Anthropic's pattern are rewritten the same
// way in tool_use and tool_result, so the pair still matches.
func TestReviewToolCallIDsSanitisedConsistently(t *testing.T) {
	for _, id := range []string{"call.abc:1", "functions.get_weather:0", "call abc", "call_ok-1"} {
		body := fmt.Sprintf(`{"model":"x","messages":[
			{"role":"user","content":"weather?"},
			{"role":"assistant","content":null,"tool_calls":[{"id":%q,"type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Oslo\"}"}}]},
			{"role":"tool","tool_call_id":%q,"content":"rain"}]}`, id, id)
		out, err := OpenAIToAnthropicRequest([]byte(body), "claude-x", 100)
		if err != nil {
			t.Fatalf("id %q: %v", id, err)
		}
		var req struct {
			Messages []struct {
				Role    string `json:"role"`
				Content []struct {
					Type      string `json:"type"`
					ID        string `json:"id"`
					ToolUseID string `json:"tool_use_id"`
				} `json:"content"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(out, &req); err != nil {
			t.Fatalf("id %q: %v: %s", id, err, out)
		}
		var use, result string
		for _, m := range req.Messages {
			for _, c := range m.Content {
				switch c.Type {
				case "tool_use":
					use = c.ID
				case "tool_result":
					result = c.ToolUseID
				}
			}
		}
		if use == "" || use != result || !anthropicIDPattern.MatchString(use) {
			t.Errorf("id %q: tool_use id %q, tool_result id %q; want equal and matching %s", id, use, result, anthropicIDPattern)
		}
	}
}

// §5.3 and §5.4 on non-streamed answers, both directions.
func TestReviewStopReasonsAndUsage(t *testing.T) {
	for _, c := range []struct{ stop, finish string }{
		{"end_turn", "stop"}, {"stop_sequence", "stop"}, {"pause_turn", "stop"},
		{"max_tokens", "length"}, {"model_context_window_exceeded", "length"},
		{"tool_use", "tool_calls"}, {"refusal", "content_filter"},
	} {
		body := fmt.Sprintf(`{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"hi"}],"stop_reason":%q,"stop_sequence":null,"usage":{"input_tokens":10,"cache_creation_input_tokens":3,"cache_read_input_tokens":5,"output_tokens":7}}`, c.stop)
		out, _, err := AnthropicToOpenAIResponse([]byte(body))
		if err != nil {
			t.Fatalf("%s: %v", c.stop, err)
		}
		var v struct {
			Choices []struct {
				FinishReason string `json:"finish_reason"`
			} `json:"choices"`
			Usage struct {
				Prompt     int64 `json:"prompt_tokens"`
				Completion int64 `json:"completion_tokens"`
				Total      int64 `json:"total_tokens"`
				Details    struct {
					Cached int64 `json:"cached_tokens"`
				} `json:"prompt_tokens_details"`
			} `json:"usage"`
		}
		if err := json.Unmarshal(out, &v); err != nil {
			t.Fatal(err)
		}
		if len(v.Choices) != 1 || v.Choices[0].FinishReason != c.finish {
			t.Errorf("stop_reason %s → %s, want %s", c.stop, out, c.finish)
		}
		if u := v.Usage; u.Prompt != 18 || u.Completion != 7 || u.Total != 25 || u.Details.Cached != 5 {
			t.Errorf("stop_reason %s: usage %+v, want prompt 18 (10+3+5), completion 7, total 25, cached 5", c.stop, u)
		}
	}
	for _, c := range []struct{ finish, stop string }{
		{"stop", "end_turn"}, {"length", "max_tokens"}, {"tool_calls", "tool_use"},
		{"function_call", "tool_use"}, {"content_filter", "refusal"},
	} {
		body := fmt.Sprintf(`{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":%q}],"usage":{"prompt_tokens":20,"completion_tokens":4,"total_tokens":24,"prompt_tokens_details":{"cached_tokens":8}}}`, c.finish)
		out, _, err := OpenAIToAnthropicResponse([]byte(body))
		if err != nil {
			t.Fatalf("%s: %v", c.finish, err)
		}
		var v struct {
			StopReason string `json:"stop_reason"`
			Usage      struct {
				Input     int64 `json:"input_tokens"`
				CacheRead int64 `json:"cache_read_input_tokens"`
				Output    int64 `json:"output_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal(out, &v); err != nil {
			t.Fatal(err)
		}
		if v.StopReason != c.stop {
			t.Errorf("finish_reason %s → stop_reason %q, want %s", c.finish, v.StopReason, c.stop)
		}
		if v.Usage.Input != 12 || v.Usage.CacheRead != 8 || v.Usage.Output != 4 {
			t.Errorf("finish %s: usage %+v, want input 12 (20-8), cache_read 8, output 4", c.finish, v.Usage)
		}
	}
}
