package providers

import (
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
)

func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// decoded views of translated requests, independent of the package's own
// types so a wrong tag would show.
type gotAnthropicReq struct {
	Model         string   `json:"model"`
	MaxTokens     int64    `json:"max_tokens"`
	System        string   `json:"system"`
	StopSequences []string `json:"stop_sequences"`
	Stream        bool     `json:"stream"`
	Temperature   *float64 `json:"temperature"`
	TopP          *float64 `json:"top_p"`
	Messages      []struct {
		Role    string `json:"role"`
		Content []struct {
			Type   string `json:"type"`
			Text   string `json:"text"`
			Source *struct {
				Type      string `json:"type"`
				MediaType string `json:"media_type"`
				Data      string `json:"data"`
				URL       string `json:"url"`
			} `json:"source"`
			ID        string          `json:"id"`
			Name      string          `json:"name"`
			Input     json.RawMessage `json:"input"`
			ToolUseID string          `json:"tool_use_id"`
			Content   json.RawMessage `json:"content"`
		} `json:"content"`
	} `json:"messages"`
	Tools []struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		InputSchema json.RawMessage `json:"input_schema"`
	} `json:"tools"`
	ToolChoice *struct {
		Type                   string `json:"type"`
		Name                   string `json:"name"`
		DisableParallelToolUse bool   `json:"disable_parallel_tool_use"`
	} `json:"tool_choice"`
	Metadata *struct {
		UserID string `json:"user_id"`
	} `json:"metadata"`
}

func TestOpenAIToAnthropicRequestFixture(t *testing.T) {
	out, err := OpenAIToAnthropicRequest(readFixture(t, "openai_request.json"), "claude-sonnet-4-5", 1024)
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(out, &raw); err != nil {
		t.Fatal(err)
	}
	// Fields Anthropic would reject as "Extra inputs are not permitted".
	for _, k := range []string{"n", "seed", "presence_penalty", "response_format", "user", "stream_options", "parallel_tool_calls", "max_completion_tokens"} {
		if _, ok := raw[k]; ok {
			t.Errorf("field %q leaked into the anthropic request", k)
		}
	}
	var got gotAnthropicReq
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if got.Model != "claude-sonnet-4-5" || got.MaxTokens != 512 || !got.Stream {
		t.Errorf("model/max_tokens/stream = %q/%d/%v", got.Model, got.MaxTokens, got.Stream)
	}
	wantSystem := "You are a careful assistant for the platform team.\nAnswer in English.\nUse metric units.\nKeep it under three sentences."
	if got.System != wantSystem {
		t.Errorf("system = %q", got.System)
	}
	if got.Temperature == nil || *got.Temperature != 1 || got.TopP == nil || *got.TopP != 0.9 {
		t.Errorf("temperature/top_p = %v/%v", got.Temperature, got.TopP)
	}
	if !reflect.DeepEqual(got.StopSequences, []string{"\n\nUser:", "END"}) {
		t.Errorf("stop_sequences = %q", got.StopSequences)
	}
	if got.Metadata == nil || got.Metadata.UserID != "alice@example.com" {
		t.Errorf("metadata = %+v", got.Metadata)
	}
	if tc := got.ToolChoice; tc == nil || tc.Type != "tool" || tc.Name != "get_weather" || !tc.DisableParallelToolUse {
		t.Errorf("tool_choice = %+v", got.ToolChoice)
	}
	if len(got.Tools) != 3 || got.Tools[0].Name != "get_weather" || got.Tools[0].Description != "Current weather for a city." {
		t.Fatalf("tools = %+v", got.Tools)
	}
	if string(got.Tools[2].InputSchema) != `{"type":"object","properties":{}}` {
		t.Errorf("default schema = %s", got.Tools[2].InputSchema)
	}

	roles := make([]string, len(got.Messages))
	for i, m := range got.Messages {
		roles[i] = m.Role
	}
	if !reflect.DeepEqual(roles, []string{"user", "assistant", "user"}) {
		t.Fatalf("roles = %v", roles)
	}
	u := got.Messages[0].Content
	if len(u) != 3 || u[0].Type != "text" || u[1].Type != "image" || u[2].Type != "image" {
		t.Fatalf("first user turn = %+v", u)
	}
	if s := u[1].Source; s.Type != "base64" || s.MediaType != "image/png" || !strings.HasPrefix(s.Data, "iVBORw0KGgo") {
		t.Errorf("data uri image = %+v", s)
	}
	if s := u[2].Source; s.Type != "url" || s.URL != "https://images.example.com/oslo/harbour.jpg" {
		t.Errorf("url image = %+v", s)
	}
	a := got.Messages[1].Content
	if len(a) != 3 || a[0].Type != "text" || a[1].Type != "tool_use" || a[2].Type != "tool_use" {
		t.Fatalf("assistant turn = %+v", a)
	}
	if a[1].ID != "call_8f3a_weather" || a[1].Name != "get_weather" {
		t.Errorf("tool_use = %s %s", a[1].ID, a[1].Name)
	}
	var input map[string]string
	if err := json.Unmarshal(a[1].Input, &input); err != nil || input["city"] != "Oslo" || input["units"] != "metric" {
		t.Errorf("tool_use input = %s", a[1].Input)
	}
	r := got.Messages[2].Content
	if len(r) != 3 || r[0].Type != "tool_result" || r[1].Type != "tool_result" || r[2].Type != "text" {
		t.Fatalf("results turn = %+v", r)
	}
	if r[0].ToolUseID != a[1].ID || r[1].ToolUseID != a[2].ID {
		t.Errorf("tool_result ids %q,%q do not match tool_use ids %q,%q", r[0].ToolUseID, r[1].ToolUseID, a[1].ID, a[2].ID)
	}
	if string(r[0].Content) != `"12°C, light rain, wind 5 m/s"` {
		t.Errorf("string result content = %s", r[0].Content)
	}
	var blocks []struct{ Type, Text string }
	if err := json.Unmarshal(r[1].Content, &blocks); err != nil || len(blocks) != 1 || blocks[0].Text != "14:05 CET" {
		t.Errorf("parts result content = %s", r[1].Content)
	}
	if r[2].Text != "Thanks. Should I bring an umbrella this afternoon?" {
		t.Errorf("trailing user text = %q", r[2].Text)
	}
}

func TestOpenAIToAnthropicRequestMapping(t *testing.T) {
	tests := []struct {
		name  string
		body  string
		check func(t *testing.T, got gotAnthropicReq)
	}{
		{"default max tokens", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, func(t *testing.T, got gotAnthropicReq) {
			if got.MaxTokens != 777 {
				t.Errorf("max_tokens = %d", got.MaxTokens)
			}
			if got.ToolChoice != nil || got.Tools != nil || got.System != "" {
				t.Errorf("unexpected fields %+v", got)
			}
		}},
		{"max_tokens only", `{"model":"m","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`, func(t *testing.T, got gotAnthropicReq) {
			if got.MaxTokens != 64 {
				t.Errorf("max_tokens = %d", got.MaxTokens)
			}
		}},
		{"stop string", `{"model":"m","stop":"###","temperature":0.3,"messages":[{"role":"user","content":"hi"}]}`, func(t *testing.T, got gotAnthropicReq) {
			if !reflect.DeepEqual(got.StopSequences, []string{"###"}) || *got.Temperature != 0.3 {
				t.Errorf("stop/temperature = %q %v", got.StopSequences, *got.Temperature)
			}
		}},
		{"tool choice required + parallel off", `{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":"required","parallel_tool_calls":false}`, func(t *testing.T, got gotAnthropicReq) {
			if tc := got.ToolChoice; tc == nil || tc.Type != "any" || !tc.DisableParallelToolUse {
				t.Errorf("tool_choice = %+v", got.ToolChoice)
			}
		}},
		{"parallel off without choice", `{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f"}}],"parallel_tool_calls":false}`, func(t *testing.T, got gotAnthropicReq) {
			if tc := got.ToolChoice; tc == nil || tc.Type != "auto" || !tc.DisableParallelToolUse {
				t.Errorf("tool_choice = %+v", got.ToolChoice)
			}
		}},
		{"tool choice none", `{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":"none","parallel_tool_calls":false}`, func(t *testing.T, got gotAnthropicReq) {
			if tc := got.ToolChoice; tc == nil || tc.Type != "none" || tc.DisableParallelToolUse {
				t.Errorf("tool_choice = %+v", got.ToolChoice)
			}
		}},
		{"consecutive users merge, empty text dropped", `{"model":"m","messages":[{"role":"user","content":"a"},{"role":"user","content":[{"type":"text","text":""},{"type":"text","text":"b"}]},{"role":"assistant","content":null,"tool_calls":[{"id":"c 1","type":"function","function":{"name":"f","arguments":""}}]}]}`, func(t *testing.T, got gotAnthropicReq) {
			if len(got.Messages) != 2 || len(got.Messages[0].Content) != 2 || got.Messages[0].Content[1].Text != "b" {
				t.Fatalf("messages = %+v", got.Messages)
			}
			tu := got.Messages[1].Content[0]
			if tu.ID != "c_1" || string(tu.Input) != "{}" {
				t.Errorf("tool_use = %+v", tu)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := OpenAIToAnthropicRequest([]byte(tt.body), "up", 777)
			if err != nil {
				t.Fatal(err)
			}
			var got gotAnthropicReq
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatal(err)
			}
			tt.check(t, got)
		})
	}
}

func TestOpenAIToAnthropicRequestErrors(t *testing.T) {
	tests := []struct {
		name, body, param string
	}{
		{"malformed", `{"model":`, "messages"},
		{"n=2", `{"model":"m","n":2,"messages":[{"role":"user","content":"hi"}]}`, "n"},
		{"bad arguments", `{"model":"m","messages":[{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{oops"}}]}]}`, "messages[0].tool_calls[0].function.arguments"},
		{"array arguments", `{"model":"m","messages":[{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"[1]"}}]}]}`, "messages[0].tool_calls[0].function.arguments"},
		{"bad image", `{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"ftp://x/y.png"}}]}]}`, "messages[0].content[0].image_url.url"},
		{"bad role", `{"model":"m","messages":[{"role":"wizard","content":"x"}]}`, "messages[0].role"},
		{"no messages", `{"model":"m","messages":[{"role":"system","content":"x"}]}`, "messages"},
		{"zero max tokens", `{"model":"m","max_completion_tokens":0,"messages":[{"role":"user","content":"x"}]}`, "max_completion_tokens"},
		{"bad stop", `{"model":"m","stop":5,"messages":[{"role":"user","content":"x"}]}`, "stop"},
		{"bad tool choice", `{"model":"m","tool_choice":"sometimes","tools":[{"type":"function","function":{"name":"f"}}],"messages":[{"role":"user","content":"x"}]}`, "tool_choice"},
		{"tool without id", `{"model":"m","messages":[{"role":"tool","content":"x"}]}`, "messages[0].tool_call_id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := OpenAIToAnthropicRequest([]byte(tt.body), "up", 100)
			var ae *APIError
			if !errors.As(err, &ae) {
				t.Fatalf("err = %v, want *APIError", err)
			}
			if ae.Status != 400 || ae.Param != tt.param {
				t.Errorf("status/param = %d/%q, want 400/%q (%s)", ae.Status, ae.Param, tt.param, ae.Message)
			}
		})
	}
}

type gotOpenAIReq struct {
	Model               string   `json:"model"`
	MaxTokens           int64    `json:"max_tokens"`
	MaxCompletionTokens int64    `json:"max_completion_tokens"`
	Stream              bool     `json:"stream"`
	Temperature         *float64 `json:"temperature"`
	Stop                []string `json:"stop"`
	User                string   `json:"user"`
	StreamOptions       *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	Messages []struct {
		Role       string          `json:"role"`
		Content    json.RawMessage `json:"content"`
		ToolCallID string          `json:"tool_call_id"`
		ToolCalls  []struct {
			ID       string `json:"id"`
			Type     string `json:"type"`
			Function struct {
				Name      string `json:"name"`
				Arguments string `json:"arguments"`
			} `json:"function"`
		} `json:"tool_calls"`
	} `json:"messages"`
	Tools []struct {
		Type     string `json:"type"`
		Function struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
		} `json:"function"`
	} `json:"tools"`
	ToolChoice        json.RawMessage `json:"tool_choice"`
	ParallelToolCalls *bool           `json:"parallel_tool_calls"`
}

func contentString(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatalf("content %s is not a string", raw)
	}
	return s
}

func TestAnthropicToOpenAIRequestClaudeCode(t *testing.T) {
	body := readFixture(t, "claude_code_request.json")
	out, err := AnthropicToOpenAIRequest(body, "qwen3-coder", false)
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(out, &raw); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"thinking", "metadata", "system", "top_k", "max_completion_tokens"} {
		if _, ok := raw[k]; ok {
			t.Errorf("field %q leaked into the openai request", k)
		}
	}
	if strings.Contains(string(out), "cache_control") {
		t.Error("cache_control leaked into the openai request")
	}
	var got gotOpenAIReq
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if got.Model != "qwen3-coder" || got.MaxTokens != 32000 || !got.Stream || got.StreamOptions == nil || !got.StreamOptions.IncludeUsage {
		t.Errorf("model/max/stream = %q/%d/%v/%+v", got.Model, got.MaxTokens, got.Stream, got.StreamOptions)
	}
	if !strings.HasPrefix(got.User, "user_3f9c2a_account") {
		t.Errorf("user = %q", got.User)
	}
	if len(got.Tools) != 24 || got.Tools[0].Function.Name != "Bash" || got.Tools[0].Type != "function" {
		t.Fatalf("tools = %d", len(got.Tools))
	}
	var schema struct {
		Type       string         `json:"type"`
		Properties map[string]any `json:"properties"`
	}
	if err := json.Unmarshal(got.Tools[5].Function.Parameters, &schema); err != nil || schema.Type != "object" || len(schema.Properties) != 7 {
		t.Errorf("parameters = %s", got.Tools[5].Function.Parameters)
	}
	if string(got.ToolChoice) != `"auto"` || got.ParallelToolCalls == nil || *got.ParallelToolCalls {
		t.Errorf("tool_choice/parallel = %s/%v", got.ToolChoice, got.ParallelToolCalls)
	}

	roles := make([]string, len(got.Messages))
	for i, m := range got.Messages {
		roles[i] = m.Role
	}
	// The mid-conversation system message is folded into the leading one
	// for a local server (see foldSystemMessages).
	want := []string{"system", "user", "assistant", "tool", "tool", "user", "assistant", "user"}
	if !reflect.DeepEqual(roles, want) {
		t.Fatalf("roles = %v, want %v", roles, want)
	}
	sys := contentString(t, got.Messages[0].Content)
	if !strings.HasPrefix(sys, "You are Claude Code, a command line coding assistant.\n") {
		t.Errorf("system = %.80q", sys)
	}
	asst := got.Messages[2]
	if contentString(t, asst.Content) != "I'll run the tests." || len(asst.ToolCalls) != 2 {
		t.Fatalf("assistant = %s %+v", asst.Content, asst.ToolCalls)
	}
	tc := asst.ToolCalls[0]
	if tc.ID != "toolu_01A" || tc.Type != "function" || tc.Function.Name != "Bash" {
		t.Errorf("tool call = %+v", tc)
	}
	var args map[string]string
	if err := json.Unmarshal([]byte(tc.Function.Arguments), &args); err != nil || args["command"] != "go test ./providers/..." {
		t.Errorf("arguments = %q", tc.Function.Arguments)
	}
	if m := got.Messages[3]; m.ToolCallID != "toolu_01A" || contentString(t, m.Content) != "Error: --- FAIL: TestX (0.00s)\nFAIL" {
		t.Errorf("error result = %+v", m)
	}
	if m := got.Messages[4]; m.ToolCallID != "toolu_01B" || contentString(t, m.Content) != "package providers\n" {
		t.Errorf("blocks result = %s", m.Content)
	}
	if contentString(t, got.Messages[5].Content) != "Also check the linter." {
		t.Errorf("user text after results = %s", got.Messages[5].Content)
	}
	if !strings.HasSuffix(sys, "\n\nThe user switched to plan mode.") {
		t.Errorf("in-message system not folded into the leading one: %.80q", sys)
	}
	if m := got.Messages[6]; contentString(t, m.Content) != "Found the failing test." || len(m.ToolCalls) != 0 {
		t.Errorf("assistant with server tools = %s %+v", m.Content, m.ToolCalls)
	}
	var parts []struct {
		Type     string `json:"type"`
		Text     string `json:"text"`
		ImageURL *struct {
			URL string `json:"url"`
		} `json:"image_url"`
	}
	if err := json.Unmarshal(got.Messages[7].Content, &parts); err != nil || len(parts) != 2 {
		t.Fatalf("last user = %s", got.Messages[7].Content)
	}
	if parts[0].Type != "image_url" || parts[0].ImageURL.URL != "https://example.com/screenshot.png" || parts[1].Text != "Here is a screenshot." {
		t.Errorf("last user parts = %+v", parts)
	}
}

func TestAnthropicToOpenAIRequestMapping(t *testing.T) {
	tests := []struct {
		name  string
		body  string
		cloud bool
		check func(t *testing.T, got gotOpenAIReq)
	}{
		{"cloud limit, no stream", `{"model":"m","max_tokens":100,"system":"be brief","stop_sequences":["X"],"temperature":0.5,"messages":[{"role":"user","content":"hi"}]}`, true, func(t *testing.T, got gotOpenAIReq) {
			if got.MaxCompletionTokens != 100 || got.MaxTokens != 0 || got.Stream || got.StreamOptions != nil {
				t.Errorf("limits/stream = %+v", got)
			}
			if !reflect.DeepEqual(got.Stop, []string{"X"}) || *got.Temperature != 0.5 || contentString(t, got.Messages[0].Content) != "be brief" {
				t.Errorf("stop/temp/system = %v %v %s", got.Stop, *got.Temperature, got.Messages[0].Content)
			}
		}},
		{"tool choice tool", `{"model":"m","max_tokens":1,"tools":[{"name":"f","input_schema":{"type":"object"}},{"type":"web_search_20250305","name":"web_search"}],"tool_choice":{"type":"tool","name":"f"},"messages":[{"role":"user","content":"hi"}]}`, false, func(t *testing.T, got gotOpenAIReq) {
			if len(got.Tools) != 1 || string(got.ToolChoice) != `{"type":"function","function":{"name":"f"}}` {
				t.Errorf("tools/choice = %d %s", len(got.Tools), got.ToolChoice)
			}
		}},
		{"tool choice any", `{"model":"m","max_tokens":1,"tools":[{"name":"f"}],"tool_choice":{"type":"any"},"messages":[{"role":"user","content":"hi"}]}`, false, func(t *testing.T, got gotOpenAIReq) {
			if string(got.ToolChoice) != `"required"` || string(got.Tools[0].Function.Parameters) != `{"type":"object","properties":{}}` {
				t.Errorf("choice/params = %s %s", got.ToolChoice, got.Tools[0].Function.Parameters)
			}
		}},
		{"image base64", `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/jpeg","data":"AAAA"}}]}]}`, false, func(t *testing.T, got gotOpenAIReq) {
			if !strings.Contains(string(got.Messages[0].Content), `"url":"data:image/jpeg;base64,AAAA"`) {
				t.Errorf("content = %s", got.Messages[0].Content)
			}
		}},
		{"tool-only assistant has null content", `{"model":"m","max_tokens":1,"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"f","input":{}}]}]}`, false, func(t *testing.T, got gotOpenAIReq) {
			if string(got.Messages[0].Content) != "null" || got.Messages[0].ToolCalls[0].Function.Arguments != "{}" {
				t.Errorf("assistant = %s %+v", got.Messages[0].Content, got.Messages[0].ToolCalls)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := AnthropicToOpenAIRequest([]byte(tt.body), "up", tt.cloud)
			if err != nil {
				t.Fatal(err)
			}
			var got gotOpenAIReq
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatal(err)
			}
			tt.check(t, got)
		})
	}
}

func TestAnthropicToOpenAIRequestErrors(t *testing.T) {
	tests := []struct{ name, body, param string }{
		{"malformed", `[`, "messages"},
		{"content number", `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":5}]}`, "messages[0].content"},
		{"bad role", `{"model":"m","max_tokens":1,"messages":[{"role":"tool","content":"x"}]}`, "messages[0].role"},
		{"tool_use without id", `{"model":"m","max_tokens":1,"messages":[{"role":"assistant","content":[{"type":"tool_use","name":"f","input":{}}]}]}`, "messages[0].content[0]"},
		{"bad tool choice", `{"model":"m","max_tokens":1,"tools":[{"name":"f"}],"tool_choice":{"type":"maybe"},"messages":[{"role":"user","content":"x"}]}`, "tool_choice.type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := AnthropicToOpenAIRequest([]byte(tt.body), "up", false)
			var ae *APIError
			if !errors.As(err, &ae) || ae.Status != 400 || ae.Param != tt.param {
				t.Fatalf("err = %#v, want 400 with param %q", err, tt.param)
			}
		})
	}
}
