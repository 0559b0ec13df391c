package providers

import (
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/jsonfast"
)

// jsonEqual compares two JSON documents by value.
func jsonEqual(t *testing.T, got []byte, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, got)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("bad want JSON: %v", err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestOpenAIToOllamaRequest(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{
			name: "minimal, stream explicit false",
			in:   `{"model":"local","messages":[{"role":"user","content":"hi"}]}`,
			want: `{"model":"llama3.1","messages":[{"role":"user","content":"hi"}],"stream":false}`,
		},
		{
			name: "stream true",
			in:   `{"model":"local","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`,
			want: `{"model":"llama3.1","messages":[{"role":"user","content":"hi"}],"stream":true}`,
		},
		{
			name: "every option; max_completion_tokens wins over max_tokens",
			in: `{"model":"local","messages":[{"role":"user","content":"hi"}],"max_completion_tokens":100,"max_tokens":50,
				"temperature":0.2,"top_p":0.9,"stop":"END","seed":7,"frequency_penalty":0.5,"presence_penalty":-0.5,
				"user":"alice","logit_bias":{"50256":-100},"n":1}`,
			want: `{"model":"llama3.1","messages":[{"role":"user","content":"hi"}],"stream":false,
				"options":{"num_predict":100,"temperature":0.2,"top_p":0.9,"stop":["END"],"seed":7,"frequency_penalty":0.5,"presence_penalty":-0.5}}`,
		},
		{
			name: "max_tokens alone, stop list without empties",
			in:   `{"model":"local","messages":[{"role":"user","content":"hi"}],"max_tokens":64,"stop":["\n\n","","###"]}`,
			want: `{"model":"llama3.1","messages":[{"role":"user","content":"hi"}],"stream":false,"options":{"num_predict":64,"stop":["\n\n","###"]}}`,
		},
		{
			name: "temperature zero is kept",
			in:   `{"model":"local","messages":[{"role":"user","content":"hi"}],"temperature":0}`,
			want: `{"model":"llama3.1","messages":[{"role":"user","content":"hi"}],"stream":false,"options":{"temperature":0}}`,
		},
		{
			name: "system and developer become system",
			in: `{"model":"local","messages":[{"role":"system","content":"Be brief."},{"role":"developer","content":[{"type":"text","text":"No emoji."}]},
				{"role":"user","content":"hi"}]}`,
			want: `{"model":"llama3.1","messages":[{"role":"system","content":"Be brief."},{"role":"system","content":"No emoji."},
				{"role":"user","content":"hi"}],"stream":false}`,
		},
		{
			name: "text parts joined, data URI images",
			in: `{"model":"local","messages":[{"role":"user","content":[{"type":"text","text":"What is this?"},
				{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo=","detail":"low"}},
				{"type":"text","text":"And this?"},{"type":"image_url","image_url":{"url":"data:image/jpeg;base64,/9j/4AAQ"}}]}]}`,
			want: `{"model":"llama3.1","messages":[{"role":"user","content":"What is this?\nAnd this?","images":["iVBORw0KGgo=","/9j/4AAQ"]}],"stream":false}`,
		},
		{
			name: "tool history round trip",
			in: `{"model":"local","messages":[
				{"role":"user","content":"Weather in Oslo and the time?"},
				{"role":"assistant","content":null,"tool_calls":[
					{"id":"call_abc","type":"function","function":{"name":"get_weather","arguments":"{\"city\": \"Oslo\"}"}},
					{"id":"call_def","type":"function","function":{"name":"get_time","arguments":""}}]},
				{"role":"tool","tool_call_id":"call_abc","content":"12°C, rain"},
				{"role":"tool","tool_call_id":"call_def","content":[{"type":"text","text":"14:05"}]},
				{"role":"tool","tool_call_id":"call_unknown","content":"?"}],
				"tools":[{"type":"function","function":{"name":"get_weather","description":"Weather by city","strict":true,
					"parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}},
					{"type":"function","function":{"name":"get_time"}}],
				"tool_choice":"auto","parallel_tool_calls":true}`,
			want: `{"model":"llama3.1","stream":false,"messages":[
				{"role":"user","content":"Weather in Oslo and the time?"},
				{"role":"assistant","content":"","tool_calls":[
					{"id":"call_abc","function":{"name":"get_weather","arguments":{"city":"Oslo"}}},
					{"id":"call_def","function":{"name":"get_time","arguments":{}}}]},
				{"role":"tool","content":"12°C, rain","tool_call_id":"call_abc","tool_name":"get_weather"},
				{"role":"tool","content":"14:05","tool_call_id":"call_def","tool_name":"get_time"},
				{"role":"tool","content":"?","tool_call_id":"call_unknown"}],
				"tools":[{"type":"function","function":{"name":"get_weather","description":"Weather by city",
					"parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}},
					{"type":"function","function":{"name":"get_time"}}]}`,
		},
		{
			name: "assistant reasoning history becomes thinking",
			in:   `{"model":"local","messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b","reasoning":"hmm"},{"role":"user","content":"c"}]}`,
			want: `{"model":"llama3.1","messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b","thinking":"hmm"},{"role":"user","content":"c"}],"stream":false}`,
		},
		{
			name: "deprecated function role",
			in:   `{"model":"local","messages":[{"role":"function","name":"get_time","content":"14:05"}]}`,
			want: `{"model":"llama3.1","messages":[{"role":"tool","content":"14:05","tool_name":"get_time"}],"stream":false}`,
		},
		{
			name: "tool_choice none drops the tools",
			in:   `{"model":"local","messages":[{"role":"user","content":"hi"}],"tool_choice":"none","tools":[{"type":"function","function":{"name":"f"}}]}`,
			want: `{"model":"llama3.1","messages":[{"role":"user","content":"hi"}],"stream":false}`,
		},
		{
			name: "json_object",
			in:   `{"model":"local","messages":[{"role":"user","content":"hi"}],"response_format":{"type":"json_object"}}`,
			want: `{"model":"llama3.1","messages":[{"role":"user","content":"hi"}],"stream":false,"format":"json"}`,
		},
		{
			name: "json_schema",
			in: `{"model":"local","messages":[{"role":"user","content":"hi"}],"response_format":{"type":"json_schema",
				"json_schema":{"name":"city","strict":true,"schema":{"type":"object","properties":{"name":{"type":"string"}}}}}}`,
			want: `{"model":"llama3.1","messages":[{"role":"user","content":"hi"}],"stream":false,
				"format":{"type":"object","properties":{"name":{"type":"string"}}}}`,
		},
		{
			name: "text format is the default",
			in:   `{"model":"local","messages":[{"role":"user","content":"hi"}],"response_format":{"type":"text"}}`,
			want: `{"model":"llama3.1","messages":[{"role":"user","content":"hi"}],"stream":false}`,
		},
		{
			name: "reasoning_effort high",
			in:   `{"model":"local","messages":[{"role":"user","content":"hi"}],"reasoning_effort":"high"}`,
			want: `{"model":"llama3.1","messages":[{"role":"user","content":"hi"}],"stream":false,"think":"high"}`,
		},
		{
			name: "reasoning_effort none disables thinking",
			in:   `{"model":"local","messages":[{"role":"user","content":"hi"}],"reasoning_effort":"none"}`,
			want: `{"model":"llama3.1","messages":[{"role":"user","content":"hi"}],"stream":false,"think":false}`,
		},
		{
			name: "reasoning_effort minimal maps to low",
			in:   `{"model":"local","messages":[{"role":"user","content":"hi"}],"reasoning_effort":"minimal"}`,
			want: `{"model":"llama3.1","messages":[{"role":"user","content":"hi"}],"stream":false,"think":"low"}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := OpenAIToOllamaRequest([]byte(tt.in), "llama3.1")
			if err != nil {
				t.Fatalf("error: %v", err)
			}
			jsonEqual(t, got, tt.want)
		})
	}
}

func TestOpenAIToOllamaRequestErrors(t *testing.T) {
	user := `{"role":"user","content":"hi"}`
	tests := []struct {
		name, in, param, msg string
	}{
		{"invalid JSON", `{"model":`, "", "invalid JSON"},
		{"wrong field type", `{"model":"m","messages":[{"role":"user","content":"x"}],"temperature":"hot"}`, "temperature", "unexpected JSON string"},
		{"messages not an array", `{"model":"m","messages":"hi"}`, "messages", "unexpected JSON string"},
		{"not an object", `[1]`, "", "invalid JSON body"},
		{"messages missing", `{"model":"m"}`, "messages", "non-empty"},
		{"messages empty", `{"model":"m","messages":[]}`, "messages", "non-empty"},
		{"n above 1", `{"model":"m","n":2,"messages":[` + user + `]}`, "n", "only 1"},
		{"unknown role", `{"model":"m","messages":[{"role":"robot","content":"x"}]}`, "messages[0].role", `"robot"`},
		{"content not string or parts", `{"model":"m","messages":[{"role":"user","content":42}]}`, "messages[0].content", "string or an array"},
		{
			"http image URL", `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"x"},{"type":"image_url","image_url":{"url":"https://example.com/cat.png"}}]}]}`,
			"messages[0].content[1].image_url.url", "not supported by Ollama",
		},
		{
			"non-base64 data URI", `{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:text/plain,hello"}}]}]}`,
			"messages[0].content[0].image_url.url", "base64 data URI",
		},
		{
			"audio part", `{"model":"m","messages":[{"role":"user","content":[{"type":"input_audio","input_audio":{"data":"x","format":"wav"}}]}]}`,
			"messages[0].content[0].type", `"input_audio"`,
		},
		{
			"invalid arguments JSON", `{"model":"m","messages":[` + user + `,{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"city\":"}}]}]}`,
			"messages[1].tool_calls[0].function.arguments", "JSON object",
		},
		{
			"arguments not an object", `{"model":"m","messages":[` + user + `,{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"[1,2]"}}]}]}`,
			"messages[1].tool_calls[0].function.arguments", "JSON object",
		},
		{"stop wrong type", `{"model":"m","messages":[` + user + `],"stop":{"a":1}}`, "stop", "string or an array"},
		{"tool type", `{"model":"m","messages":[` + user + `],"tools":[{"type":"web_search","function":{"name":"s"}}]}`, "tools[0].type", `"web_search"`},
		{"tool without name", `{"model":"m","messages":[` + user + `],"tools":[{"type":"function","function":{}}]}`, "tools[0].function.name", "required"},
		{"json_schema without schema", `{"model":"m","messages":[` + user + `],"response_format":{"type":"json_schema","json_schema":{"name":"x"}}}`, "response_format.json_schema.schema", "schema"},
		{"unknown response_format", `{"model":"m","messages":[` + user + `],"response_format":{"type":"yaml"}}`, "response_format.type", `"yaml"`},
		{"unknown reasoning_effort", `{"model":"m","messages":[` + user + `],"reasoning_effort":"extreme"}`, "reasoning_effort", `"extreme"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := OpenAIToOllamaRequest([]byte(tt.in), "llama3.1")
			if err == nil {
				t.Fatalf("no error; output %s", out)
			}
			var ae *APIError
			if !errors.As(err, &ae) {
				t.Fatalf("error %T %v is not *APIError", err, err)
			}
			if ae.Status != http.StatusBadRequest || ae.Param != tt.param || !strings.Contains(ae.Message, tt.msg) {
				t.Errorf("got status %d param %q message %q; want 400 %q containing %q", ae.Status, ae.Param, ae.Message, tt.param, tt.msg)
			}
		})
	}
}

func TestOllamaToOpenAIResponse(t *testing.T) {
	t.Run("text", func(t *testing.T) {
		in := `{"model":"llama3.1","created_at":"2025-07-07T20:22:19.184Z","message":{"role":"assistant","content":"Hello!"},
			"done_reason":"stop","done":true,"total_duration":4883583458,"prompt_eval_count":26,"eval_count":3}`
		out, u, err := OllamaToOpenAIResponse([]byte(in))
		if err != nil {
			t.Fatal(err)
		}
		if u != (Usage{InputTokens: 26, OutputTokens: 3, Seen: true}) {
			t.Errorf("usage %+v", u)
		}
		var r map[string]any
		if err := json.Unmarshal(out, &r); err != nil {
			t.Fatal(err)
		}
		id, _ := r["id"].(string)
		if !strings.HasPrefix(id, "chatcmpl-") || len(id) < len("chatcmpl-")+16 {
			t.Errorf("id %q", id)
		}
		delete(r, "id")
		b, _ := json.Marshal(r)
		jsonEqual(t, b, `{"object":"chat.completion","created":1751919739,"model":"llama3.1","system_fingerprint":"fp_ollama",
			"choices":[{"index":0,"message":{"role":"assistant","content":"Hello!","refusal":null},"logprobs":null,"finish_reason":"stop"}],
			"usage":{"prompt_tokens":26,"completion_tokens":3,"total_tokens":29,"prompt_tokens_details":{"cached_tokens":0}}}`)
	})

	t.Run("tool calls with generated and given ids", func(t *testing.T) {
		body, err := os.ReadFile("testdata/ollama/chat_tools.json")
		if err != nil {
			t.Fatal(err)
		}
		out, u, err := OllamaToOpenAIResponse(body)
		if err != nil {
			t.Fatal(err)
		}
		if u.InputTokens != 181 || u.OutputTokens != 24 || !u.Seen {
			t.Errorf("usage %+v", u)
		}
		var r OpenAIResponse
		if err := json.Unmarshal(out, &r); err != nil {
			t.Fatal(err)
		}
		c := r.Choices[0]
		if c.FinishReason != "tool_calls" || c.Message.Content != nil || c.Message.Reasoning != "Need the weather tool." {
			t.Errorf("choice %+v", c)
		}
		if len(c.Message.ToolCalls) != 1 {
			t.Fatalf("tool calls %+v", c.Message.ToolCalls)
		}
		tc := c.Message.ToolCalls[0]
		if !strings.HasPrefix(tc.ID, "call_") || len(tc.ID) <= len("call_") || tc.Type != "function" ||
			tc.Function.Name != "get_weather" || tc.Function.Arguments != `{"city":"Oslo","days":2}` {
			t.Errorf("tool call %+v", tc)
		}

		in := `{"model":"m","created_at":"2025-07-07T20:22:19Z","message":{"role":"assistant","content":"Sure.",
			"tool_calls":[{"id":"call_given","function":{"name":"f","arguments":{"a":[1, 2]}}},{"function":{"name":"g"}}]},"done":true}`
		out, _, err = OllamaToOpenAIResponse([]byte(in))
		if err != nil {
			t.Fatal(err)
		}
		r = OpenAIResponse{}
		if err := json.Unmarshal(out, &r); err != nil {
			t.Fatal(err)
		}
		got := r.Choices[0].Message
		if got.Content == nil || *got.Content != "Sure." || got.ToolCalls[0].ID != "call_given" || got.ToolCalls[0].Function.Arguments != `{"a":[1,2]}` ||
			got.ToolCalls[1].Function.Arguments != "{}" || got.ToolCalls[1].ID == got.ToolCalls[0].ID {
			t.Errorf("message %+v", got)
		}
		if r.Choices[0].FinishReason != "tool_calls" {
			t.Errorf("finish %q", r.Choices[0].FinishReason)
		}
	})

	t.Run("missing counters and other reasons", func(t *testing.T) {
		for _, tt := range []struct{ reason, want string }{{"length", "length"}, {"load", "load"}, {"", "stop"}} {
			in := `{"model":"m","created_at":"bogus","message":{"role":"assistant","content":""},"done":true,"done_reason":"` + tt.reason + `"}`
			before := time.Now().Unix()
			out, u, err := OllamaToOpenAIResponse([]byte(in))
			if err != nil {
				t.Fatal(err)
			}
			if u != (Usage{Seen: true}) {
				t.Errorf("usage %+v", u)
			}
			var r OpenAIResponse
			if err := json.Unmarshal(out, &r); err != nil {
				t.Fatal(err)
			}
			var ru OpenAIUsage
			_ = json.Unmarshal(r.Usage, &ru)
			if r.Choices[0].FinishReason != tt.want || ru.PromptTokens != 0 || ru.CompletionTokens != 0 ||
				r.Choices[0].Message.Content == nil || *r.Choices[0].Message.Content != "" || r.Created < before {
				t.Errorf("reason %q: %s", tt.reason, out)
			}
		}
	})

	t.Run("errors", func(t *testing.T) {
		for _, in := range []string{`{"error":"model \"x\" not found, try pulling it first"}`, `not json`} {
			_, _, err := OllamaToOpenAIResponse([]byte(in))
			var ae *APIError
			if !errors.As(err, &ae) || ae.Status != http.StatusBadGateway {
				t.Fatalf("%s: err %v", in, err)
			}
			if strings.HasPrefix(in, "{") && ae.Message != `model "x" not found, try pulling it first` {
				t.Errorf("message %q", ae.Message)
			}
		}
	})
}

func TestAppendJSONString(t *testing.T) {
	for _, s := range []string{"", "plain", "quote\" back\\slash", "ctl\x00\x01\x1f\n\r\t", "ünïcødé ✓ 🙂",
		"bad\xffutf8\xc3", "line\u2028sep\u2029", "<html>&"} {
		got := jsonfast.AppendJSONString(nil, s)
		var back string
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatalf("%q: invalid JSON %s: %v", s, got, err)
		}
		want, _ := json.Marshal(s)
		var wantBack string
		_ = json.Unmarshal(want, &wantBack)
		if back != wantBack {
			t.Errorf("%q: decodes to %q, json.Marshal's to %q", s, back, wantBack)
		}
		if b := jsonfast.AppendJSONString(nil, []byte(s)); string(b) != string(got) {
			t.Errorf("%q: []byte and string forms differ: %s vs %s", s, b, got)
		}
	}
}
