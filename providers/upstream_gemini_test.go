package providers

import (
	"bufio"
	"encoding/json"
	"strings"
	"testing"
)

func TestOpenAIToGeminiRequest(t *testing.T) {
	chat := `{"model":"m","messages":[
	  {"role":"system","content":"Be terse."},
	  {"role":"user","content":[{"type":"text","text":"Look"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBO"}}]},
	  {"role":"assistant","content":null,"tool_calls":[
	    {"id":"c1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"},"extra_content":{"google":{"thought_signature":"SIG"}}},
	    {"id":"c2","type":"function","function":{"name":"g","arguments":""}}]},
	  {"role":"tool","tool_call_id":"c1","content":"one"},
	  {"role":"tool","tool_call_id":"c2","content":"two"},
	  {"role":"assistant","content":"ok","tool_calls":[{"id":"c3","type":"function","function":{"name":"f","arguments":"{}"}}]},
	  {"role":"tool","tool_call_id":"c3","content":"three"}],
	  "tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],
	  "tool_choice":{"type":"function","function":{"name":"f"}},
	  "max_completion_tokens":100,"stop":"END","reasoning_effort":"high",
	  "response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"type":"object"}}}}`
	out, err := OpenAIToGeminiRequest([]byte(chat), "gemini-3-pro")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`"systemInstruction":{"parts":[{"text":"Be terse."}]}`,
		`{"role":"user","parts":[{"text":"Look"},{"inlineData":{"mimeType":"image/png","data":"iVBO"}}]}`,
		// The first call keeps its signature, the second has none (parallel calls: only the first is signed).
		`{"role":"model","parts":[{"thoughtSignature":"SIG","functionCall":{"id":"c1","name":"f","args":{"a":1}}},{"functionCall":{"id":"c2","name":"g","args":{}}}]}`,
		// Both responses in one user turn, in call order, named from the calls.
		`{"role":"user","parts":[{"functionResponse":{"id":"c1","name":"f","response":{"output":"one"}}},{"functionResponse":{"id":"c2","name":"g","response":{"output":"two"}}}]}`,
		// A turn the client sent without a signature gets Google's bypass value.
		`{"role":"model","parts":[{"text":"ok"},{"thoughtSignature":"skip_thought_signature_validator","functionCall":{"id":"c3","name":"f","args":{}}}]}`,
		`"toolConfig":{"functionCallingConfig":{"mode":"ANY","allowedFunctionNames":["f"]}}`,
		`"maxOutputTokens":100`, `"stopSequences":["END"]`, `"responseMimeType":"application/json"`, `"responseJsonSchema":{"type":"object"}`,
		`"thinkingConfig":{"includeThoughts":true,"thinkingBudget":null,"thinkingLevel":"HIGH"}`,
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("lacks %s\n in %s", want, out)
		}
	}
	// 2.5 models take a budget, never a level.
	out, _ = OpenAIToGeminiRequest([]byte(`{"messages":[{"role":"user","content":"x"}],"reasoning_effort":"low"}`), "gemini-2.5-flash")
	if !strings.Contains(string(out), `"thinkingBudget":1024,"thinkingLevel":""`) {
		t.Errorf("2.5 thinking %s", out)
	}
	if _, err := OpenAIToGeminiRequest([]byte(`{"messages":[{"role":"assistant","tool_calls":[{"id":"c","function":{"name":"f","arguments":"[1]"}}]}]}`), "m"); err == nil {
		t.Error("non-object arguments must be refused")
	}
}

func TestGeminiToOpenAI(t *testing.T) {
	raw := `{"candidates":[{"content":{"role":"model","parts":[{"text":"Plan.","thought":true},{"text":"Calling."},
	  {"functionCall":{"name":"f","args":{"a":[1, 2]}},"thoughtSignature":"SIG"}]},"finishReason":"STOP","index":0}],
	  "usageMetadata":{"promptTokenCount":100,"cachedContentTokenCount":40,"candidatesTokenCount":10,"thoughtsTokenCount":5,"totalTokenCount":115},
	  "modelVersion":"gemini-3-pro","responseId":"r1"}`
	out, u, err := GeminiToOpenAIResponse([]byte(raw), "alias")
	if err != nil {
		t.Fatal(err)
	}
	var resp struct {
		ID      string `json:"id"`
		Model   string `json:"model"`
		Choices []struct {
			Message struct {
				Content          string `json:"content"`
				ReasoningContent string `json:"reasoning_content"`
				ToolCalls        []struct {
					ID       string             `json:"id"`
					Function OpenAIFunctionCall `json:"function"`
					Extra    json.RawMessage    `json:"extra_content"`
				} `json:"tool_calls"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Usage OpenAIUsage `json:"usage"`
	}
	if err := json.Unmarshal(out, &resp); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	c := resp.Choices[0]
	if c.Message.Content != "Calling." || c.Message.ReasoningContent != "Plan." || c.FinishReason != "tool_calls" ||
		c.Message.ToolCalls[0].Function.Arguments != `{"a":[1,2]}` || !strings.HasPrefix(c.Message.ToolCalls[0].ID, "call_") ||
		string(c.Message.ToolCalls[0].Extra) != `{"google":{"thought_signature":"SIG"}}` || resp.Model != "alias" || resp.ID != "chatcmpl-r1" {
		t.Errorf("answer %s", out)
	}
	if u.InputTokens != 60 || u.CacheReadTokens != 40 || u.OutputTokens != 15 || resp.Usage.PromptTokens != 100 || resp.Usage.CompletionTokens != 15 {
		t.Errorf("usage %+v / %+v", u, resp.Usage)
	}

	// The stream: CRLF events, a thought, text, a whole call, usage last.
	var out2 []byte
	s := NewGeminiToOpenAIStream("alias", true)
	r := NewSSEReader(strings.NewReader("data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"Hm\",\"thought\":true}]}}],\"responseId\":\"r2\"}\r\n\r\n"+
		"data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"Hi\"}]}}]}\r\n\r\n"+
		"data: {\"candidates\":[{\"content\":{\"parts\":[{\"functionCall\":{\"name\":\"f\",\"args\":{}},\"thoughtSignature\":\"S\"}]},\"finishReason\":\"STOP\"}],\"usageMetadata\":{\"promptTokenCount\":7,\"candidatesTokenCount\":2,\"totalTokenCount\":9}}\r\n\r\n"), bufio.NewReader(nil))
	for {
		ev, err := r.Next()
		if err != nil {
			break
		}
		if out2, err = s.Translate(out2, ev); err != nil {
			t.Fatal(err)
		}
	}
	out2 = s.Finish(out2)
	text := string(out2)
	for _, want := range []string{`"reasoning_content":"Hm"`, `"content":"Hi"`, `"tool_calls":[{"index":0,"id":"call_`, `"extra_content":{"google":{"thought_signature":"S"}}`,
		`"finish_reason":"tool_calls"`, `"usage":{"prompt_tokens":7,"completion_tokens":2`, "data: [DONE]"} {
		if !strings.Contains(text, want) {
			t.Errorf("stream lacks %s:\n%s", want, text)
		}
	}
	if !s.Complete() || s.Usage().InputTokens != 7 {
		t.Errorf("complete %v usage %+v", s.Complete(), s.Usage())
	}
	// Google's in-band error object fails the stream.
	if _, err := NewGeminiToOpenAIStream("m", false).Translate(nil, Event{Data: []byte(`{"error":{"code":429,"message":"Quota exceeded","status":"RESOURCE_EXHAUSTED"}}`)}); err == nil ||
		!strings.Contains(err.Error(), "Quota exceeded") {
		t.Errorf("in-band error: %v", err)
	}
}

func FuzzGeminiUpstreamStream(f *testing.F) {
	f.Add([]byte(`{"candidates":[{"content":{"parts":[{"text":"a"},{"functionCall":{"name":"f","args":{"x":1}}}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":1}}`))
	f.Add([]byte(`{"promptFeedback":{"blockReason":"SAFETY"}}`))
	f.Fuzz(func(t *testing.T, chunk []byte) {
		s := NewGeminiToOpenAIStream("m", true)
		out, err := s.Translate(nil, Event{Data: chunk})
		if err != nil {
			return
		}
		out = s.Finish(out)
		for _, ev := range strings.Split(strings.TrimSuffix(string(out), "\n\n"), "\n\n") {
			data := strings.TrimPrefix(ev, "data: ")
			if data != "[DONE]" && !json.Valid([]byte(data)) {
				t.Fatalf("invalid chunk %q", data)
			}
		}
		if _, _, err := GeminiToOpenAIResponse(chunk, "m"); err == nil {
			out, _, _ := GeminiToOpenAIResponse(chunk, "m")
			if !json.Valid(out) {
				t.Fatalf("invalid answer %s", out)
			}
		}
	})
}

func TestUpstreamErrorReadsGoogleShapes(t *testing.T) {
	for _, body := range []string{
		`{"error":{"code":429,"message":"Quota exceeded.","status":"RESOURCE_EXHAUSTED","details":[]}}`,
		`[{"error":{"code":429,"message":"Quota exceeded.","status":"RESOURCE_EXHAUSTED"}}]`,
	} {
		if e := UpstreamError(429, []byte(body)); e.Message != "Quota exceeded." || e.Status != 429 {
			t.Errorf("%s → %+v", body, e)
		}
	}
}
