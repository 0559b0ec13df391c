package providers

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// A Gemini CLI turn as it sends one: system
// instruction as a user-role content, a thought part, parallel calls (the
// first signed), their responses by id, declarations in both schema
// dialects.
const geminiCLITurn = `{
  "systemInstruction": {"role": "user", "parts": [{"text": "You are terse."}, {"text": "Use tools."}]},
  "contents": [
    {"role": "user", "parts": [{"text": "<session_context>cwd=/tmp</session_context>"}, {"text": "List files, read a.txt"},
      {"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="}}]},
    {"role": "model", "parts": [
      {"text": "**Planning**", "thought": true},
      {"functionCall": {"id": "call_A", "name": "list_directory", "args": {"dir_path": "."}}, "thoughtSignature": "CiQBjz1rX"},
      {"functionCall": {"id": "call_B", "name": "read_file", "args": {"file_path": "a.txt"}}}]},
    {"role": "user", "parts": [
      {"functionResponse": {"id": "call_A", "name": "list_directory", "response": {"output": "a.txt"}}},
      {"functionResponse": {"id": "call_B", "name": "read_file", "response": {"error": "permission denied"}}}]}
  ],
  "tools": [{"functionDeclarations": [
    {"name": "read_file", "description": "Read a file", "parametersJsonSchema": {"type": "object", "properties": {"file_path": {"type": "string"}}, "required": ["file_path"]}},
    {"name": "list_directory", "parameters": {"type": "OBJECT", "propertyOrdering": ["dir_path"], "properties": {"dir_path": {"type": "STRING", "nullable": true}}}},
    {"name": "noop"}]}],
  "toolConfig": {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["read_file"]}},
  "generationConfig": {"temperature": 1, "topP": 0.95, "topK": 64, "maxOutputTokens": 8192, "stopSequences": ["END"],
    "responseMimeType": "application/json", "responseJsonSchema": {"type": "OBJECT"},
    "thinkingConfig": {"includeThoughts": true, "thinkingBudget": 8192}},
  "safetySettings": [{"category": "HARM_CATEGORY_DANGEROUS_CONTENT", "threshold": "BLOCK_ONLY_HIGH"}]
}`

func geminiChat(t *testing.T, body string, o chatOptions) (RequestInfo, map[string]any) {
	t.Helper()
	info, err := ParseGeminiRequest([]byte(body), "alias", true)
	if err != nil {
		t.Fatal(err)
	}
	out, err := info.gemini().toChat("upstream-model", true, o)
	return info, chatJSON(t, out, err)
}

// chatJSON is a spoke's chat request, decoded.
func chatJSON(t *testing.T, out []byte, err error) map[string]any {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	return m
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestGeminiRequestToChat(t *testing.T) {
	info, m := geminiChat(t, geminiCLITurn, chatOptions{})
	if info.Model != "alias" || !info.Stream || !info.IncludeUsage {
		t.Errorf("info %+v", info)
	}
	msgs := m["messages"].([]any)
	want := []string{
		`{"content":"You are terse.\nUse tools.","role":"system"}`,
		`{"content":[{"text":"\u003csession_context\u003ecwd=/tmp\u003c/session_context\u003e","type":"text"},{"text":"List files, read a.txt","type":"text"},{"image_url":{"url":"data:image/png;base64,iVBORw0KGgo="},"type":"image_url"}],"role":"user"}`,
		`{"content":null,"role":"assistant","tool_calls":[{"function":{"arguments":"{\"dir_path\": \".\"}","name":"list_directory"},"id":"call_A","type":"function"},{"function":{"arguments":"{\"file_path\": \"a.txt\"}","name":"read_file"},"id":"call_B","type":"function"}]}`,
		`{"content":"a.txt","role":"tool","tool_call_id":"call_A"}`,
		`{"content":"{\"error\": \"permission denied\"}","role":"tool","tool_call_id":"call_B"}`,
	}
	if len(msgs) != len(want) {
		t.Fatalf("%d messages: %s", len(msgs), jsonOf(msgs))
	}
	for i, w := range want {
		if got := jsonOf(msgs[i]); got != w {
			t.Errorf("message %d:\n got %s\nwant %s", i, got, w)
		}
	}
	tools := jsonOf(m["tools"])
	for _, w := range []string{
		`"parameters":{"properties":{"file_path":{"type":"string"}},"required":["file_path"],"type":"object"}`,
		`"parameters":{"properties":{"dir_path":{"type":["string","null"]}},"type":"object"}`,
		`{"function":{"name":"noop","parameters":{"properties":{},"type":"object"}},"type":"function"}`,
	} {
		if !strings.Contains(tools, w) {
			t.Errorf("tools lack %s: %s", w, tools)
		}
	}
	checks := map[string]string{
		"tool_choice":      `{"function":{"name":"read_file"},"type":"function"}`,
		"max_tokens":       `8192`,
		"temperature":      `1`,
		"top_p":            `0.95`,
		"stop":             `["END"]`,
		"response_format":  `{"json_schema":{"name":"response","schema":{"properties":{},"type":"object"}},"type":"json_schema"}`,
		"reasoning_effort": `"medium"`,
		"stream_options":   `{"include_usage":true}`,
		"model":            `"upstream-model"`,
	}
	for k, w := range checks {
		if got := jsonOf(m[k]); got != w {
			t.Errorf("%s = %s, want %s", k, got, w)
		}
	}
	if _, ok := m["top_k"]; ok {
		t.Error("topK has no chat equivalent and must be dropped")
	}
}

func TestGeminiRequestPairsIdlessCalls(t *testing.T) {
	body := `{"contents":[{"role":"user","parts":[{"text":"go"}]},
	  {"role":"model","parts":[{"functionCall":{"name":"a","args":{}}},{"functionCall":{"name":"a","args":{"x":1}}}]},
	  {"role":"user","parts":[{"functionResponse":{"name":"a","response":{"output":"1"}}},{"functionResponse":{"name":"a","response":{"output":"2"}}},{"text":"and now?"}]}]}`
	_, m := geminiChat(t, body, chatOptions{})
	msgs := m["messages"].([]any)
	calls := msgs[1].(map[string]any)["tool_calls"].([]any)
	id0, id1 := calls[0].(map[string]any)["id"].(string), calls[1].(map[string]any)["id"].(string)
	if id0 == "" || id0 == id1 || !strings.HasPrefix(id0, "call_") {
		t.Fatalf("minted ids %q %q", id0, id1)
	}
	if msgs[2].(map[string]any)["tool_call_id"] != id0 || msgs[3].(map[string]any)["tool_call_id"] != id1 {
		t.Errorf("responses paired %s", jsonOf(msgs[2:4]))
	}
	if jsonOf(msgs[4]) != `{"content":"and now?","role":"user"}` {
		t.Errorf("text after the responses: %s", jsonOf(msgs[4]))
	}

	// A response answering no call is the caller's error, named.
	bad := `{"contents":[{"role":"model","parts":[{"functionCall":{"name":"a","args":{}}}]},{"role":"user","parts":[{"functionResponse":{"name":"b","response":{}}}]}]}`
	info, err := ParseGeminiRequest([]byte(bad), "m", false)
	if err == nil {
		_, err = info.gemini().toChat("m", false, chatOptions{})
	}
	if e, ok := err.(*APIError); !ok || e.Status != 400 || !strings.Contains(e.Param, "contents[1].parts[0]") {
		t.Errorf("unpaired response: %v", err)
	}
}

func TestGeminiRequestRefusals(t *testing.T) {
	for _, tc := range []struct{ body, param string }{
		{`{}`, "contents"},
		{`{"contents":[]}`, "contents"},
		{`{"contents":[{"parts":[{"text":"x"}]}],"cachedContent":"cachedContents/abc"}`, "cachedContent"},
		{`{"contents":[{"parts":[{"text":"x"}]}],"tools":[{"googleSearch":{}}]}`, "tools[0]"},
		{`{"contents":[{"parts":[{"text":"x"}]}],"generationConfig":{"thinkingConfig":{"thinkingBudget":1,"thinkingLevel":"LOW"}}}`, "generationConfig.thinkingConfig"},
	} {
		_, err := ParseGeminiRequest([]byte(tc.body), "m", false)
		if e, ok := err.(*APIError); !ok || e.Status != 400 || e.Param != tc.param {
			t.Errorf("%s: %v", tc.body, err)
		}
	}
	info, _ := ParseGeminiRequest([]byte(`{"contents":[{"parts":[{"inlineData":{"mimeType":"video/mp4","data":"AAAA"}}]}]}`), "m", false)
	if _, err := info.gemini().toChat("m", false, chatOptions{}); err == nil || !strings.Contains(err.Error(), "video/mp4") {
		t.Errorf("video: %v", err)
	}
}

// TestGeminiThinkingRoundTripsThroughAnthropic: Anthropic's signed
// thinking rides in the first call's thoughtSignature, which Gemini CLI
// sends back verbatim, and is restored for Anthropic on the next turn.
func TestGeminiThinkingRoundTripsThroughAnthropic(t *testing.T) {
	info, err := ParseGeminiRequest([]byte(`{"contents":[{"role":"user","parts":[{"text":"weather?"}]}],"generationConfig":{"thinkingConfig":{"includeThoughts":true}}}`), "m", false)
	if err != nil {
		t.Fatal(err)
	}
	answer := `{"id":"msg_1","type":"message","role":"assistant","model":"claude","content":[
	  {"type":"thinking","thinking":"Need the tool.","signature":"sig-123"},
	  {"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Oslo"}},
	  {"type":"tool_use","id":"toolu_2","name":"get_weather","input":{"city":"Bergen"}}],
	  "stop_reason":"tool_use","usage":{"input_tokens":10,"cache_read_input_tokens":4,"output_tokens":6}}`
	out, usage, err := info.gemini().anthropicToGemini([]byte(answer))
	if err != nil {
		t.Fatal(err)
	}
	var resp geminiResponse
	if err := json.Unmarshal(out, &resp); err != nil {
		t.Fatal(err)
	}
	parts := resp.Candidates[0].Content.Parts
	if len(parts) != 3 || !parts[0].Thought || parts[0].Text != "Need the tool." || parts[1].FunctionCall.ID != "toolu_1" ||
		!strings.HasPrefix(parts[1].ThoughtSignature, "gw1:") || parts[2].ThoughtSignature != "" {
		t.Fatalf("parts %s", out)
	}
	if resp.Candidates[0].FinishReason != "STOP" || usage.InputTokens != 10 || resp.UsageMetadata.PromptTokenCount != 14 ||
		resp.UsageMetadata.CachedContentTokenCount != 4 || resp.UsageMetadata.CandidatesTokenCount != 6 {
		t.Errorf("finish %q usage %+v / %+v", resp.Candidates[0].FinishReason, usage, resp.UsageMetadata)
	}

	// Next turn, as the CLI sends it: thought parts gone, signature kept.
	next := `{"contents":[{"role":"user","parts":[{"text":"weather?"}]},{"role":"model","parts":[` +
		jsonOf(map[string]any{"functionCall": parts[1].FunctionCall, "thoughtSignature": parts[1].ThoughtSignature}) + `,` +
		jsonOf(map[string]any{"functionCall": parts[2].FunctionCall}) + `]},{"role":"user","parts":[
		{"functionResponse":{"id":"toolu_1","name":"get_weather","response":{"output":"12C"}}},
		{"functionResponse":{"id":"toolu_2","name":"get_weather","response":{"output":"9C"}}}]}]}`
	info, err = ParseGeminiRequest([]byte(next), "m", false)
	if err != nil {
		t.Fatal(err)
	}
	rt, _ := NewRoute(FormatGemini, FormatAnthropic)
	body, _, err := rt.Request(nil, info, "claude-x", RouteOptions{DefaultMaxTokens: 4096})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(body, []byte(`{"type":"thinking","thinking":"Need the tool.","signature":"sig-123"}`)) ||
		!bytes.Contains(body, []byte(`"tool_use_id":"toolu_2"`)) {
		t.Errorf("anthropic request %s", body)
	}
	// Other upstreams never see the envelope.
	rt, _ = NewRoute(FormatGemini, FormatOpenAI)
	body, _, _ = rt.Request(nil, info, "gpt", RouteOptions{})
	if bytes.Contains(body, []byte("sig-123")) || bytes.Contains(body, []byte("gw1:")) {
		t.Errorf("openai request carries the thinking: %s", body)
	}
}

func geminiEvents(t *testing.T, out []byte) []geminiResponse {
	t.Helper()
	var evs []geminiResponse
	for _, block := range strings.Split(strings.TrimSuffix(string(out), "\n\n"), "\n\n") {
		data, ok := strings.CutPrefix(block, "data: ")
		if !ok || strings.Contains(data, "\n") {
			t.Fatalf("not one data line: %q", block)
		}
		var r geminiResponse
		if err := json.Unmarshal([]byte(data), &r); err != nil {
			t.Fatalf("%v: %s", err, data)
		}
		evs = append(evs, r)
	}
	return evs
}

func TestGeminiStreamFromChatChunks(t *testing.T) {
	info, _ := ParseGeminiRequest([]byte(`{"contents":[{"parts":[{"text":"x"}]}]}`), "m", true)
	info.gemini().Alias = "my-alias"
	s := newGeminiStream(info.gemini())
	var out []byte
	for _, c := range []string{
		`{"choices":[{"delta":{"role":"assistant","content":"Hel\u0085lo"}}]}`,
		`{"choices":[{"delta":{"reasoning_content":"hidden"}}]}`,
		`{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"ci"}}]}}]}`,
		`{"choices":[{"delta":{"tool_calls":[{"index":1,"id":"call_2","type":"function","function":{"name":"noop","arguments":""}}]}}]}`,
		`{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"ty\":\"Oslo\"}"}}]}}]}`,
		`{"choices":[{"delta":{},"finish_reason":"tool_calls"}]}`,
		`{"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":8,"total_tokens":20,"prompt_tokens_details":{"cached_tokens":2},"completion_tokens_details":{"reasoning_tokens":3}}}`,
		`[DONE]`,
	} {
		var err error
		if out, err = s.Translate(out, Event{Data: []byte(c)}); err != nil {
			t.Fatal(err)
		}
	}
	out = s.Finish(out)
	if bytes.Contains(out, []byte("\u0085")) || !bytes.Contains(out, []byte(`Hel\u0085lo`)) {
		t.Error("U+0085 must go out escaped")
	}
	evs := geminiEvents(t, out)
	if len(evs) != 3 {
		t.Fatalf("%d events: %s", len(evs), out)
	}
	if p := evs[0].Candidates[0].Content.Parts; p[0].Text != "Hel\u0085lo" || evs[0].ModelVersion != "my-alias" {
		t.Errorf("text event %+v", evs[0])
	}
	calls := evs[1].Candidates[0].Content.Parts
	if len(calls) != 2 || calls[0].FunctionCall.ID != "call_1" || string(calls[0].FunctionCall.Args) != `{"city":"Oslo"}` ||
		calls[1].FunctionCall.Name != "noop" || string(calls[1].FunctionCall.Args) != `{}` {
		t.Errorf("calls %s", jsonOf(calls))
	}
	last := evs[2]
	if last.Candidates[0].FinishReason != "STOP" || last.Candidates[0].Content != nil || jsonOf(last.UsageMetadata) !=
		`{"promptTokenCount":12,"cachedContentTokenCount":2,"candidatesTokenCount":5,"thoughtsTokenCount":3,"totalTokenCount":20}` {
		t.Errorf("last %s", jsonOf(last))
	}
	for _, e := range evs {
		if e.ResponseID != info.gemini().ResponseID {
			t.Errorf("response id %q", e.ResponseID)
		}
	}

	// A broken stream ends with Google's bare error object, no finish.
	s = newGeminiStream(info.gemini())
	out, _ = s.Translate(nil, Event{Data: []byte(`{"choices":[{"delta":{"content":"par"}}]}`)})
	out = s.Fail(out, &APIError{Status: 503, Message: "upstream went away"})
	if !bytes.HasSuffix(out, []byte("\n\n"+`{"error":{"code":503,"message":"upstream went away","status":"UNAVAILABLE"}}`+"\n")) {
		t.Errorf("failed stream %q", out)
	}
}

func FuzzGeminiRequest(f *testing.F) {
	f.Add([]byte(geminiCLITurn))
	f.Add([]byte(`{"contents":[{"role":"model","parts":[{"functionCall":{"name":"a"}}]},{"parts":[{"functionResponse":{"name":"a","response":null}}]}]}`))
	f.Add([]byte(`{"generateContentRequest":{"contents":[{"parts":[{"text":"x"}]}]}}`))
	f.Add([]byte(`{"contents":[{"parts":[{"text":"x"}]}],"system_instruction":{"parts":[{"text":"s"}]},"generation_config":{"max_output_tokens":7,"candidate_count":2,"stop_sequences":["a"]},"tools":[{"function_declarations":[{"name":"f"}]}]}`))
	f.Add([]byte(`{"generate_content_request":{"contents":[{"parts":[{"function_call":{"name":"a"}}]}],"generation_config":{"max_output_tokens":7}}}`))
	f.Add([]byte(`{"contents":[{"parts":[{"text":"<b>&"},{"inlineData":{"mimeType":"audio/wav","data":"UklG"}}]}],"generationConfig":{"stopSequences":["a","<"],"seed":7,"candidateCount":2,"presencePenalty":0.5,"frequencyPenalty":1e-7}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		info, err := ParseGeminiRequest(body, "m", true)
		if err != nil {
			return
		}
		for _, o := range []chatOptions{{}, {Anthropic: true}, {OpenAICloud: true}} {
			r, err := info.gemini().buildChat("m", true, o)
			if err != nil {
				continue
			}
			// The hand-written encoder writes what json.Marshal writes.
			out := appendChatRequest(nil, r)
			want, err := json.Marshal(r)
			if err != nil || !bytes.Equal(out, want) {
				t.Fatalf("encoder:\n got %s\nwant %s (%v)", out, want, err)
			}
		}
	})
}

func FuzzGeminiStream(f *testing.F) {
	f.Add([]byte(`{"choices":[{"delta":{"content":"hi","tool_calls":[{"index":0,"id":"c","function":{"name":"f","arguments":"{"}}]},"finish_reason":"stop"}]}`))
	f.Add([]byte(`{"choices":[{"delta":{"reasoning_content":"r","reasoning_signature":"s"}}],"usage":{"prompt_tokens":1}}`))
	f.Fuzz(func(t *testing.T, chunk []byte) {
		info, _ := ParseGeminiRequest([]byte(`{"contents":[{"parts":[{"text":"x"}]}],"generationConfig":{"thinkingConfig":{"includeThoughts":true}}}`), "m", true)
		s := newGeminiStream(info.gemini())
		out, err := s.Translate(nil, Event{Data: chunk})
		if err != nil {
			return
		}
		out = s.Finish(out)
		geminiEvents(t, out)
	})
}

// BenchmarkGeminiTranslatedRequest: a Gemini CLI turn parsed and written
// as the hub's chat request, the work a Gemini client adds per request.
func BenchmarkGeminiTranslatedRequest(b *testing.B) {
	body := []byte(geminiCLITurn)
	b.ReportAllocs()
	for b.Loop() {
		info, err := ParseGeminiRequest(body, "m", true)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := info.gemini().toChat("m", true, chatOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

// FuzzGeminiTextEvent pins the hand-written text event to what
// json.Marshal writes for the same parts, as decoded JSON.
func FuzzGeminiTextEvent(f *testing.F) {
	f.Add("plain", "thought", true)
	f.Add("a\u0085b\u2028c<>&\"\\\n\x01\xff", "", false)
	f.Fuzz(func(t *testing.T, text, thought string, withThought bool) {
		if text == "" || thought == "" {
			t.Skip("the stream never sends an empty part")
		}
		info, _ := ParseGeminiRequest([]byte(`{"contents":[{"parts":[{"text":"x"}]}]}`), "m", true)
		info.gemini().Alias = "a\u0085\"lias"
		s := newGeminiStream(info.gemini())
		parts := []geminiPart{{Text: text}}
		if withThought {
			parts = append(parts, geminiPart{Text: thought, Thought: true})
		}
		fast, slow := s.textEvent(nil, parts), s.event(nil, parts, "", nil)
		if bytes.Contains(fast, []byte("\u0085")) {
			t.Fatalf("raw U+0085 in %q", fast)
		}
		var a, b any
		if err := json.Unmarshal(bytes.TrimSuffix(bytes.TrimPrefix(fast, []byte("data: ")), []byte("\n\n")), &a); err != nil {
			t.Fatalf("%v: %q", err, fast)
		}
		_ = json.Unmarshal(bytes.TrimSuffix(bytes.TrimPrefix(slow, []byte("data: ")), []byte("\n\n")), &b)
		if jsonOf(a) != jsonOf(b) {
			t.Fatalf("fast %s\nslow %s", fast, slow)
		}
	})
}

// geminiEveryField has every field the fast reader knows, so the fuzz
// seed run alone compares the fast path with encoding/json on all of them.
const geminiEveryField = `{"contents":[{"role":"user","parts":[{"text":"a\u00e9<"},{"inlineData":{"mimeType":"image/png","data":"AA"}},{"fileData":{"mimeType":"application/pdf","fileUri":"gs://b/f"}}]},
		{"role":"model","parts":[{"thought":true,"text":"t","thoughtSignature":"sig"},{"functionCall":{"id":"c1","name":"f","args":{"a":[1,null]}}},{"executableCode":{"code":"x"}},{"codeExecutionResult":null}]},
		{"parts":[{"functionResponse":{"id":"c1","name":"f","response":{"ok":true},"parts":[{"inlineData":null,"text":"p"}]}}]}],
		"systemInstruction":{"parts":[{"text":"s"}]},"tools":[{"functionDeclarations":[{"name":"f","description":"d","parameters":{"type":"OBJECT"},"parametersJsonSchema":null}]},{"googleSearch":{}}],
		"toolConfig":{"functionCallingConfig":{"mode":"ANY","allowedFunctionNames":["f",null]}},"safetySettings":[{"category":"c"}],"cachedContent":null,"serviceTier":"flex","model":"models/x",
		"generationConfig":{"temperature":0.5,"topP":1,"topK":40,"maxOutputTokens":5,"stopSequences":["a"],"candidateCount":1,"presencePenalty":0.1,"frequencyPenalty":-0.1,"seed":7,
		"responseMimeType":"application/json","responseSchema":{"type":"STRING"},"responseJsonSchema":{},"thinkingConfig":{"includeThoughts":true,"thinkingBudget":-1,"thinkingLevel":"low"}},"unknown":[1]}`

// FuzzGeminiRequestFastPath: what the fast reader reads, encoding/json
// reads the same.
func FuzzGeminiRequestFastPath(f *testing.F) {
	f.Add([]byte(geminiCLITurn))
	f.Add([]byte(geminiEveryField))
	f.Add([]byte(`{"contents":[{"parts":[{"text":"x","Text":"y"}]}]}`))
	f.Add([]byte(`{"contents":null,"tools":null,"toolConfig":null,"generationConfig":null,"systemInstruction":null}`))
	f.Add([]byte(`{"contents":[{"parts":[{"text":5}]}],"generationConfig":{"maxOutputTokens":1.5}}`))
	f.Add([]byte(`{"contents":[{"parts":[{"text":"x","inline_data":{"mime_type":"a/b","data":"AA"}}]}],"generation_config":{"max_output_tokens":65536,"candidate_count":8}}`))
	f.Add([]byte(`{"contents":[{"parts":[{"text":"x"}]}],"generationConfig":{"maxOutputTokens":5,"max_output_tokens":9,"thinking_config":{"thinking_budget":1}}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var fast geminiRequest
		if !json.Valid(body) || !readGeminiRequest(body, &fast) {
			return
		}
		var slow geminiRequest
		if err := json.Unmarshal(body, &slow); err != nil {
			t.Fatalf("fast path read a body encoding/json refuses (%v): %s", err, body)
		}
		if !reflect.DeepEqual(fast, slow) {
			t.Fatalf("fast %#v\nslow %#v", fast, slow)
		}
	})
}

// TestGeminiFastPathTakesRealRequests: the shapes clients send are read by
// the fast path, not left to encoding/json.
func TestGeminiFastPathTakesRealRequests(t *testing.T) {
	for name, body := range map[string]string{"gemini-cli": geminiCLITurn, "every field": geminiEveryField} {
		var q geminiRequest
		if !readGeminiRequest([]byte(body), &q) {
			t.Errorf("%s: the fast path gave up", name)
		}
	}
}
