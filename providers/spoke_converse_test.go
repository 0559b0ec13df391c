package providers

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
)

// converseToolTurn is the second request of a tool round trip as the AWS
// SDK sends it: system, the user's question with an image, the assistant's
// toolUse, the user's toolResult, the tool declared and forced.
const converseToolTurn = `{
 "system":[{"text":"Be brief."},{"cachePoint":{"type":"default"}}],
 "messages":[
  {"role":"user","content":[{"text":"What's the weather in Oslo?"},{"image":{"format":"png","source":{"bytes":"iVBORw0KGgo="}}}]},
  {"role":"assistant","content":[{"text":"Checking."},{"toolUse":{"toolUseId":"tooluse_1","name":"get_weather","input":{"city":"Oslo"}}}]},
  {"role":"user","content":[{"toolResult":{"toolUseId":"tooluse_1","content":[{"text":"12°C"},{"json":{"wind":"calm"}}],"status":"success"}}]}
 ],
 "inferenceConfig":{"maxTokens":256,"temperature":0.5,"topP":0.9,"stopSequences":["END"]},
 "toolConfig":{"tools":[{"toolSpec":{"name":"get_weather","description":"Weather for a city","inputSchema":{"json":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}},{"cachePoint":{"type":"default"}}],
  "toolChoice":{"tool":{"name":"get_weather"}}}
}`

func converseChat(t *testing.T, body string, o chatOptions) (RequestInfo, map[string]any) {
	t.Helper()
	info, err := ParseConverseRequest([]byte(body), "claude", true)
	if err != nil {
		t.Fatal(err)
	}
	out, err := info.converse().toChat("m", true, o)
	return info, chatJSON(t, out, err)
}

func TestConverseRequestToChat(t *testing.T) {
	info, chat := converseChat(t, converseToolTurn, chatOptions{OpenAICloud: true})
	if info.Model != "claude" || !info.Stream || info.MaxTokens() != 0 || info.OutputBound(0) != 256 {
		t.Errorf("info: %+v, output bound %d", info, info.OutputBound(0))
	}
	want := map[string]string{
		"messages": `[{"content":"Be brief.","role":"system"},` +
			`{"content":[{"text":"What's the weather in Oslo?","type":"text"},{"image_url":{"url":"data:image/png;base64,iVBORw0KGgo="},"type":"image_url"}],"role":"user"},` +
			`{"content":"Checking.","role":"assistant","tool_calls":[{"function":{"arguments":"{\"city\":\"Oslo\"}","name":"get_weather"},"id":"tooluse_1","type":"function"}]},` +
			`{"content":"12°C{\"wind\":\"calm\"}","role":"tool","tool_call_id":"tooluse_1"}]`,
		"max_completion_tokens": `256`,
		"temperature":           `0.5`,
		"top_p":                 `0.9`,
		"stop":                  `["END"]`,
		"tools":                 `[{"function":{"description":"Weather for a city","name":"get_weather","parameters":{"properties":{"city":{"type":"string"}},"required":["city"],"type":"object"}},"type":"function"}]`,
		"tool_choice":           `{"function":{"name":"get_weather"},"type":"function"}`,
		"stream_options":        `{"include_usage":true}`,
	}
	for k, v := range want {
		if got := jsonOf(chat[k]); got != v {
			t.Errorf("%s:\n got %s\nwant %s", k, got, v)
		}
	}
	if _, chat := converseChat(t, `{"messages":[{"role":"user","content":[{"text":"x"}]}],"toolConfig":{"tools":[{"toolSpec":{"name":"f","inputSchema":{"json":{}}}}],"toolChoice":{"any":{}}},"additionalModelRequestFields":{"thinking":{"type":"enabled","budget_tokens":4000}}}`, chatOptions{}); jsonOf(chat["tool_choice"]) != `"required"` || chat["reasoning_effort"] != "medium" {
		t.Errorf("any and thinking: %v", chat)
	}
	_, chat = converseChat(t, `{"messages":[{"role":"user","content":[{"text":"x"}]}],"outputConfig":{"effort":"High","textFormat":{"type":"json_schema","structure":{"jsonSchema":{"schema":"{\"type\":\"object\"}","name":"city"}}}}}`, chatOptions{})
	if jsonOf(chat["response_format"]) != `{"json_schema":{"name":"city","schema":{"type":"object"}},"type":"json_schema"}` || chat["reasoning_effort"] != "high" {
		t.Errorf("outputConfig: %v", chat)
	}
}

func TestConverseRequestRefusals(t *testing.T) {
	for body, param := range map[string]string{
		`[]`: "",
		`{}`: "messages",
		`{"messages":[{"role":"system","content":[{"text":"x"}]}]}`:                                                                                              "messages.0.role",
		`{"messages":[{"role":"user","content":[{"text":"x"}]}],"guardrailConfig":{"guardrailIdentifier":"g"}}`:                                                  "guardrailConfig",
		`{"messages":[{"role":"user","content":[{"text":"x"}]}],"inferenceConfig":{"maxTokens":0}}`:                                                              "inferenceConfig.maxTokens",
		`{"messages":[{"role":"user","content":[{"text":"x"}]}],"toolConfig":{"tools":[{"toolSpec":{"inputSchema":{"json":{}}}}]}}`:                              "toolConfig.tools.0.toolSpec.name",
		`{"messages":[{"role":"user","content":[{"text":"x"}]}],"messages2":1,"promptVariables":{"a":{"text":"b"}}}`:                                             "promptVariables",
		`{"messages":[{"role":"user","content":[{"text":"x"}]}],"outputConfig":{"textFormat":{"type":"json_schema","structure":{"jsonSchema":{"schema":"{"}}}}}`: "outputConfig.textFormat",
		`{"messages":[{"role":"user","content":[{"text":"x"}]}],"inferenceConfig":{"maxTokens":"many"}}`:                                                         "inferenceConfig.maxTokens",
		// Wrong types are named where they are.
		`{"messages":"x"}`: "messages",
		`{"messages":[{"role":"user","content":{}}]}`:                                       "messages.content",
		`{"messages":[{"role":"user","content":[{"text":5}]}]}`:                             "messages.content.text",
		`{"messages":[{"role":"user","content":[{"text":"x"}]}],"toolConfig":{"tools":{}}}`: "toolConfig.tools",
	} {
		_, err := ParseConverseRequest([]byte(body), "m", false)
		e, ok := err.(*APIError)
		if !ok || e.Status != 400 || e.Param != param {
			t.Errorf("%s: %#v", body, err)
		}
	}
	info, err := ParseConverseRequest([]byte(`{"messages":[{"role":"user","content":[{"image":{"format":"png","source":{"s3Location":{"uri":"s3://b/k"}}}}]}]}`), "m", false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := info.converse().toChat("m", false, chatOptions{}); err == nil || err.(*APIError).Param != "messages.0.content.0.image.source" {
		t.Errorf("s3 image: %v", err)
	}
}

func TestConverseAnswerFromChat(t *testing.T) {
	info, _ := ParseConverseRequest([]byte(converseToolTurn), "claude", false)
	r, err := NewRoute(FormatConverse, FormatOpenAI)
	if err != nil {
		t.Fatal(err)
	}
	out, usage, err := r.Response([]byte(`{"id":"c","model":"gpt","choices":[{"index":0,"message":{"role":"assistant","content":"Checking.","tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Oslo\"}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":30,"completion_tokens":7,"total_tokens":37,"prompt_tokens_details":{"cached_tokens":10}}}`), info)
	if err != nil {
		t.Fatal(err)
	}
	if usage.InputTokens != 20 || usage.CacheReadTokens != 10 || usage.OutputTokens != 7 {
		t.Errorf("ledger usage %+v", usage)
	}
	var got map[string]any
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if s := jsonOf(got["output"]); s != `{"message":{"content":[{"text":"Checking."},{"toolUse":{"input":{"city":"Oslo"},"name":"get_weather","toolUseId":"call_1"}}],"role":"assistant"}}` {
		t.Errorf("output %s", s)
	}
	if got["stopReason"] != "tool_use" || jsonOf(got["usage"]) != `{"cacheReadInputTokens":10,"inputTokens":20,"outputTokens":7,"totalTokens":37}` {
		t.Errorf("stopReason %v usage %s", got["stopReason"], jsonOf(got["usage"]))
	}
	if m, ok := got["metrics"].(map[string]any); !ok || m["latencyMs"] == nil {
		t.Errorf("metrics %v", got["metrics"])
	}
}

func TestConverseAnswerFromAnthropic(t *testing.T) {
	info, _ := ParseConverseRequest([]byte(converseToolTurn), "claude", false)
	r, _ := NewRoute(FormatConverse, FormatAnthropic)
	out, usage, err := r.Response([]byte(`{"id":"msg_1","type":"message","role":"assistant","model":"claude-x","content":[{"type":"thinking","thinking":"hmm","signature":"sig"},{"type":"text","text":"Checking."},{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Oslo"}}],"stop_reason":"tool_use","usage":{"input_tokens":5,"output_tokens":9,"cache_read_input_tokens":3,"cache_creation_input_tokens":2}}`), info)
	if err != nil {
		t.Fatal(err)
	}
	if usage.InputTokens != 5 || usage.OutputTokens != 9 {
		t.Errorf("usage %+v", usage)
	}
	var got converseResponse
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	c := got.Output.Message.Content
	if len(c) != 3 || c[0].ReasoningContent == nil || c[0].ReasoningContent.ReasoningText.Signature != "sig" || *c[1].Text != "Checking." ||
		c[2].ToolUse.ToolUseID != "toolu_1" || string(c[2].ToolUse.Input) != `{"city":"Oslo"}` {
		t.Errorf("content %s", out)
	}
	if got.StopReason != "tool_use" || got.Usage != (converseUsage{InputTokens: 5, OutputTokens: 9, TotalTokens: 19, CacheReadInputTokens: 3, CacheWriteInputTokens: 2}) {
		t.Errorf("stop %q usage %+v", got.StopReason, got.Usage)
	}
	// The signature goes back to Anthropic in the next turn's history.
	next := `{"messages":[{"role":"user","content":[{"text":"x"}]},{"role":"assistant","content":[` + jsonOf(c[0]) + `,` + jsonOf(c[2]) + `]},{"role":"user","content":[{"toolResult":{"toolUseId":"toolu_1","content":[{"text":"12"}]}}]}]}`
	info, _ = ParseConverseRequest([]byte(next), "claude", false)
	body, _, err := r.Request(nil, info, "claude-x", RouteOptions{DefaultMaxTokens: 100})
	if err != nil || !bytes.Contains(body, []byte(`{"type":"thinking","thinking":"hmm","signature":"sig"}`)) {
		t.Errorf("thinking not sent back (%v): %s", err, body)
	}
}

// converseFrames decodes an AWS event stream into "type payload" lines,
// the type being the event's or the exception's.
func converseFrames(t *testing.T, stream []byte) []string {
	t.Helper()
	dec := eventstream.NewDecoder()
	rd := bytes.NewReader(stream)
	var out []string
	for rd.Len() > 0 {
		msg, err := dec.Decode(rd, nil)
		if err != nil {
			t.Fatal(err)
		}
		kind := msg.Headers.Get(":message-type").String()
		name := msg.Headers.Get(":event-type")
		if kind == "exception" {
			name = msg.Headers.Get(":exception-type")
		}
		if ct := msg.Headers.Get(":content-type").String(); ct != "application/json" {
			t.Errorf("content type %q", ct)
		}
		if !json.Valid(msg.Payload) {
			t.Errorf("payload %q", msg.Payload)
		}
		out = append(out, kind+" "+name.String()+" "+string(msg.Payload))
	}
	return out
}

// frameConverse frames a translated stream as the adapter does.
func frameConverse(t *testing.T, sse string) []string {
	t.Helper()
	var framed bytes.Buffer
	f := NewConverseStreamFramer()
	// In uneven pieces, as a relay writes them.
	for s := sse; len(s) > 0; {
		n := min(29, len(s))
		if err := f.Write(&framed, []byte(s[:n])); err != nil {
			t.Fatal(err)
		}
		s = s[n:]
	}
	return converseFrames(t, framed.Bytes())
}

func metadataLess(events []string) []string {
	for i, e := range events {
		if strings.HasPrefix(e, "event metadata ") {
			var m struct {
				Usage   converseUsage
				Metrics *converseMetrics
			}
			if json.Unmarshal([]byte(strings.TrimPrefix(e, "event metadata ")), &m) != nil || m.Metrics == nil {
				return nil
			}
			b, _ := json.Marshal(m.Usage)
			events[i] = "event metadata " + string(b)
		}
	}
	return events
}

func TestConverseStreamFromChat(t *testing.T) {
	info, _ := ParseConverseRequest([]byte(converseToolTurn), "claude", true)
	r, _ := NewRoute(FormatConverse, FormatOpenAI)
	upstream := `data: {"choices":[{"index":0,"delta":{"role":"assistant","content":"Check"}}]}

data: {"choices":[{"index":0,"delta":{"content":"ing."}}]}

data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":""}}]}}]}

data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\":"}}]}}]}

data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"Oslo\"}"}}]}}]}

data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}

data: {"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":5,"total_tokens":17}}

data: [DONE]

`
	got := metadataLess(frameConverse(t, runStream(t, upstream, r.Stream("m", info, false))))
	want := []string{
		`event messageStart {"role":"assistant"}`,
		`event contentBlockDelta {"contentBlockIndex":0,"delta":{"text":"Check"}}`,
		`event contentBlockDelta {"contentBlockIndex":0,"delta":{"text":"ing."}}`,
		`event contentBlockStop {"contentBlockIndex":0}`,
		`event contentBlockStart {"contentBlockIndex":1,"start":{"toolUse":{"toolUseId":"call_1","name":"get_weather"}}}`,
		`event contentBlockDelta {"contentBlockIndex":1,"delta":{"toolUse":{"input":"{\"city\":"}}}`,
		`event contentBlockDelta {"contentBlockIndex":1,"delta":{"toolUse":{"input":"\"Oslo\"}"}}}`,
		`event contentBlockStop {"contentBlockIndex":1}`,
		`event messageStop {"stopReason":"tool_use"}`,
		`event metadata {"inputTokens":12,"outputTokens":5,"totalTokens":17}`,
	}
	sameEvents(t, got, want)
}

func TestConverseStreamFromAnthropic(t *testing.T) {
	info, _ := ParseConverseRequest([]byte(converseToolTurn), "claude", true)
	r, _ := NewRoute(FormatConverse, FormatAnthropic)
	upstream := `event: message_start
data: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-x","content":[],"usage":{"input_tokens":9,"output_tokens":1}}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hmm"}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"sig"}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: content_block_start
data: {"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Hi"}}

event: content_block_stop
data: {"type":"content_block_stop","index":1}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"max_tokens"},"usage":{"output_tokens":4}}

event: message_stop
data: {"type":"message_stop"}

`
	got := metadataLess(frameConverse(t, runStream(t, upstream, r.Stream("m", info, false))))
	want := []string{
		`event messageStart {"role":"assistant"}`,
		`event contentBlockDelta {"contentBlockIndex":0,"delta":{"reasoningContent":{"text":"hmm"}}}`,
		`event contentBlockDelta {"contentBlockIndex":0,"delta":{"reasoningContent":{"signature":"sig"}}}`,
		`event contentBlockStop {"contentBlockIndex":0}`,
		`event contentBlockDelta {"contentBlockIndex":1,"delta":{"text":"Hi"}}`,
		`event contentBlockStop {"contentBlockIndex":1}`,
		`event messageStop {"stopReason":"max_tokens"}`,
		`event metadata {"inputTokens":9,"outputTokens":4,"totalTokens":13}`,
	}
	sameEvents(t, got, want)
}

func TestConverseErrors(t *testing.T) {
	w := httptest.NewRecorder()
	(&APIError{Status: 429, Message: "slow down"}).Write(w, FormatConverse)
	if w.Code != 429 || w.Header().Get("X-Amzn-Errortype") != "ThrottlingException" || w.Body.String() != `{"message":"slow down"}` {
		t.Errorf("%d %v %s", w.Code, w.Header(), w.Body)
	}
	info, _ := ParseConverseRequest([]byte(converseToolTurn), "claude", true)
	s := newConverseStream(info.converse())
	out, _ := s.Translate(nil, Event{Data: []byte(`{"choices":[{"delta":{"content":"par"}}]}`)})
	out = s.Fail(out, &APIError{Status: 502, Message: "upstream broke"})
	got := frameConverse(t, string(out))
	if len(got) != 3 || got[2] != `exception modelStreamErrorException {"message":"upstream broke"}` {
		t.Errorf("failed stream: %q", got)
	}
}

func FuzzConverseRequest(f *testing.F) {
	f.Add([]byte(converseToolTurn))
	f.Add([]byte(`{"messages":[{"role":"user","content":[{"document":{"format":"txt","name":"a","source":{"bytes":"aGk="}}},{"document":{"format":"pdf","name":"b","source":{"bytes":"JVBE"}}}]}],"additionalModelRequestFields":{"reasoningConfig":{"maxReasoningEffort":"minimal"}}}`))
	f.Add([]byte(`{"messages":[{"role":"assistant","content":[{"reasoningContent":{"redactedContent":"cmVk"}},{"citationsContent":{"content":[{"text":"c"}]}}]}],"system":[{"text":"<&>"}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		info, err := ParseConverseRequest(body, "m", true)
		if err != nil {
			if _, ok := err.(*APIError); !ok {
				t.Fatalf("not an APIError: %v", err)
			}
			return
		}
		if info.converse() == nil || info.Model != "m" {
			t.Fatalf("info %+v", info)
		}
		for _, o := range []chatOptions{{}, {Anthropic: true}, {OpenAICloud: true}} {
			r, err := info.converse().buildChat("m", true, o)
			if err != nil {
				if _, ok := err.(*APIError); !ok {
					t.Fatalf("not an APIError: %v", err)
				}
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

func FuzzConverseStream(f *testing.F) {
	f.Add([]byte(`{"choices":[{"delta":{"content":"hi","tool_calls":[{"index":0,"id":"c","function":{"name":"f","arguments":"{"}}]},"finish_reason":"stop"}]}`))
	f.Add([]byte(`{"choices":[{"delta":{"reasoning_content":"r","reasoning_signature":"s","reasoning_redacted":"x"}}],"usage":{"prompt_tokens":1}}`))
	f.Fuzz(func(t *testing.T, chunk []byte) {
		info, _ := ParseConverseRequest([]byte(`{"messages":[{"role":"user","content":[{"text":"x"}]}]}`), "m", true)
		s := newConverseStream(info.converse())
		out, err := s.Translate(nil, Event{Data: chunk})
		if err != nil {
			return
		}
		frameConverse(t, string(s.Finish(out)))
	})
}

func sameEvents(t *testing.T, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// FuzzCountFromBedrock: whatever CountTokens body comes, the answer is a
// count_tokens body for the model or an error, never a panic.
func FuzzCountFromBedrock(f *testing.F) {
	f.Add([]byte(`{"input":{"converse":` + converseToolTurn + `}}`))
	f.Add([]byte(`{"input":{"invokeModel":{"body":"eyJtYXhfdG9rZW5zIjoxLCJtZXNzYWdlcyI6W119"}}}`))
	f.Add([]byte(`{"input":{"converse":{"messages":[{"role":"assistant","content":[{"toolUse":{"toolUseId":"a","name":"f","input":1}}]}]}}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		out, _, err := CountFromBedrock(body, "m")
		if err != nil {
			return // answered as a 400 (asAPIError)
		}
		var m struct {
			Model string `json:"model"`
		}
		if json.Unmarshal(out, &m) != nil || m.Model != "m" {
			t.Fatalf("count body %s", out)
		}
	})
}

// TestConverseToGemini: a Gemini upstream, through the hub both ways: the
// tool declared as a function declaration, its call back as toolUse,
// whole and streamed.
func TestConverseToGemini(t *testing.T) {
	info, _ := ParseConverseRequest([]byte(converseToolTurn), "claude", false)
	r, err := NewRoute(FormatConverse, FormatGemini)
	if err != nil {
		t.Fatal(err)
	}
	body, _, err := r.Request(nil, info, "gemini-x", RouteOptions{})
	if err != nil || !bytes.Contains(body, []byte(`"functionDeclarations":[{"name":"get_weather"`)) || !bytes.Contains(body, []byte(`"maxOutputTokens":256`)) {
		t.Fatalf("gemini request (%v): %s", err, body)
	}
	answer := `{"candidates":[{"content":{"role":"model","parts":[{"text":"Checking."},{"functionCall":{"name":"get_weather","args":{"city":"Oslo"}}}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":5,"candidatesTokenCount":3,"totalTokenCount":8},"modelVersion":"gemini-x"}`
	out, usage, err := r.Response([]byte(answer), info)
	if err != nil || usage.InputTokens != 5 || usage.OutputTokens != 3 {
		t.Fatalf("response (%v): %+v", err, usage)
	}
	var got converseResponse
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	c := got.Output.Message.Content
	if len(c) != 2 || *c[0].Text != "Checking." || c[1].ToolUse == nil || c[1].ToolUse.Name != "get_weather" || string(c[1].ToolUse.Input) != `{"city":"Oslo"}` || got.StopReason != "tool_use" {
		t.Errorf("converse answer %s", out)
	}
	info, _ = ParseConverseRequest([]byte(converseToolTurn), "claude", true)
	events := metadataLess(frameConverse(t, runStream(t, "data: "+answer+"\n\n", r.Stream("gemini-x", info, false))))
	if len(events) < 6 || !strings.HasPrefix(events[3], `event contentBlockStart {"contentBlockIndex":1,"start":{"toolUse":`) ||
		events[len(events)-2] != `event messageStop {"stopReason":"tool_use"}` || events[len(events)-1] != `event metadata {"inputTokens":5,"outputTokens":3,"totalTokens":8}` {
		t.Errorf("stream:\n%s", strings.Join(events, "\n"))
	}
}
