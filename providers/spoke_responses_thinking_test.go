package providers

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// anthropicThinkingStream is an Anthropic stream with extended thinking,
// text and a tool call, as the Messages API sends it.
var anthropicThinkingStream = []Event{
	{Name: []byte("message_start"), Data: []byte(`{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-x","content":[],"usage":{"input_tokens":20,"cache_read_input_tokens":5,"output_tokens":1}}}`)},
	{Name: []byte("content_block_start"), Data: []byte(`{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`)},
	{Name: []byte("content_block_delta"), Data: []byte(`{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"The user wants "}}`)},
	{Name: []byte("content_block_delta"), Data: []byte(`{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"the weather."}}`)},
	{Name: []byte("content_block_delta"), Data: []byte(`{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQBsig=="}}`)},
	{Name: []byte("content_block_stop"), Data: []byte(`{"type":"content_block_stop","index":0}`)},
	{Name: []byte("content_block_start"), Data: []byte(`{"type":"content_block_start","index":1,"content_block":{"type":"redacted_thinking","data":"REDACTED=="}}`)},
	{Name: []byte("content_block_stop"), Data: []byte(`{"type":"content_block_stop","index":1}`)},
	{Name: []byte("content_block_start"), Data: []byte(`{"type":"content_block_start","index":2,"content_block":{"type":"text","text":""}}`)},
	{Name: []byte("content_block_delta"), Data: []byte(`{"type":"content_block_delta","index":2,"delta":{"type":"text_delta","text":"Checking."}}`)},
	{Name: []byte("content_block_stop"), Data: []byte(`{"type":"content_block_stop","index":2}`)},
	{Name: []byte("content_block_start"), Data: []byte(`{"type":"content_block_start","index":3,"content_block":{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{}}}`)},
	{Name: []byte("content_block_delta"), Data: []byte(`{"type":"content_block_delta","index":3,"delta":{"type":"input_json_delta","partial_json":"{\"city\":\"Oslo\"}"}}`)},
	{Name: []byte("content_block_stop"), Data: []byte(`{"type":"content_block_stop","index":3}`)},
	{Name: []byte("message_delta"), Data: []byte(`{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":30}}`)},
	{Name: []byte("message_stop"), Data: []byte(`{"type":"message_stop"}`)},
}

const thinkingTurn = `{"model":"claude","input":"Weather in Oslo?","reasoning":{"effort":"high"},"max_output_tokens":32000,
	"tools":[{"type":"function","name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}]}`

// TestAnthropicThinkingSurvivesAResponsesRoundTrip: thinking streamed by
// Anthropic reaches the Responses client as a reasoning item whose
// encrypted_content, replayed without ids as Codex does, gives Anthropic
// back the exact blocks and signatures.
func TestAnthropicThinkingSurvivesAResponsesRoundTrip(t *testing.T) {
	rt, err := NewRoute(FormatResponses, FormatAnthropic)
	if err != nil {
		t.Fatal(err)
	}
	turn := mustTurn(t, thinkingTurn)
	info := RequestInfo{Model: "claude", Stream: true, Turn: turn}
	body, _, err := rt.Request(nil, info, "claude-x", RouteOptions{DefaultMaxTokens: 4096, Cloud: true})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(body, []byte(`"thinking":{"type":"enabled","budget_tokens":24576}`)) || bytes.Contains(body, []byte(`"temperature"`)) {
		t.Errorf("effort high did not enable thinking: %s", body)
	}
	tr := rt.Stream("claude-x", info, false)
	var out []byte
	for _, ev := range anthropicThinkingStream {
		if out, err = tr.Translate(out, ev); err != nil {
			t.Fatal(err)
		}
	}
	if !tr.Complete() {
		t.Fatal("stream not complete")
	}
	out = tr.Finish(out)
	evs := parseRespSSE(t, out)
	resp := checkResponsesStream(t, evs)
	output := resp["output"].([]any)
	if len(output) != 3 {
		t.Fatalf("output %v", output)
	}
	reasoning := output[0].(map[string]any)
	sealed, _ := reasoning["encrypted_content"].(string)
	if reasoning["type"] != "reasoning" || !strings.HasPrefix(sealed, "gw1:") {
		t.Fatalf("reasoning item %v", reasoning)
	}
	if u := tr.Usage(); u.InputTokens != 20 || u.CacheReadTokens != 5 || u.OutputTokens != 30 {
		t.Errorf("ledger usage %+v", u)
	}
	if ru := resp["usage"].(map[string]any); ru["input_tokens"] != 25.0 || ru["input_tokens_details"].(map[string]any)["cached_tokens"] != 5.0 {
		t.Errorf("response usage %v", ru)
	}

	// Codex replays the output without ids and adds the tool's output.
	replay := []map[string]any{{"role": "user", "content": "Weather in Oslo?"}}
	for _, it := range output {
		m := it.(map[string]any)
		delete(m, "id")
		replay = append(replay, m)
	}
	replay = append(replay, map[string]any{"type": "function_call_output", "call_id": "toolu_1", "output": "12°C"})
	input, _ := json.Marshal(replay)
	next := mustTurn(t, `{"model":"claude","reasoning":{"effort":"high"},"max_output_tokens":32000,"input":`+string(input)+`}`)
	body, _, err = rt.Request(nil, RequestInfo{Model: "claude", Turn: next}, "claude-x", RouteOptions{DefaultMaxTokens: 4096})
	if err != nil {
		t.Fatal(err)
	}
	var req struct {
		Messages []struct {
			Role    string           `json:"role"`
			Content []AnthropicBlock `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	a := req.Messages[1]
	if a.Role != "assistant" || len(a.Content) != 4 {
		t.Fatalf("assistant turn %s", body)
	}
	if b := a.Content[0]; b.Type != "thinking" || b.Thinking != "The user wants the weather." || b.Signature != "EqQBsig==" {
		t.Errorf("thinking block %+v", b)
	}
	if b := a.Content[1]; b.Type != "redacted_thinking" || b.Data != "REDACTED==" {
		t.Errorf("redacted block %+v", b)
	}
	if a.Content[2].Type != "text" || a.Content[3].Type != "tool_use" || a.Content[3].ID != "toolu_1" {
		t.Errorf("assistant blocks %+v", a.Content)
	}
	if u := req.Messages[2]; u.Role != "user" || u.Content[0].Type != "tool_result" {
		t.Errorf("tool result turn %+v", u)
	}

	// A chat backend gets no thinking history at all.
	chatRT, _ := NewRoute(FormatResponses, FormatOpenAI)
	body, _, err = chatRT.Request(nil, RequestInfo{Model: "m", Turn: next}, "m", RouteOptions{})
	if err != nil || bytes.Contains(body, []byte("thinking")) || bytes.Contains(body, []byte("gw1:")) {
		t.Errorf("chat request carries thinking: %v %s", err, body)
	}
}

func TestAnthropicWholeAnswerToResponse(t *testing.T) {
	rt, _ := NewRoute(FormatResponses, FormatAnthropic)
	turn := mustTurn(t, thinkingTurn)
	raw := `{"id":"msg_1","type":"message","role":"assistant","model":"claude-x","content":[
		{"type":"thinking","thinking":"Hmm.","signature":"sig1"},{"type":"text","text":"It is "},{"type":"text","text":"cold."},
		{"type":"tool_use","id":"toolu_9","name":"get_weather","input":{"city":"Oslo"}}],
		"stop_reason":"max_tokens","usage":{"input_tokens":10,"cache_creation_input_tokens":2,"cache_read_input_tokens":3,"output_tokens":7}}`
	out, u, err := rt.Response([]byte(raw), RequestInfo{Turn: turn})
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Status string           `json:"status"`
		Output []map[string]any `json:"output"`
		Usage  responsesUsage   `json:"usage"`
	}
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatal(err)
	}
	if r.Status != "incomplete" || len(r.Output) != 3 {
		t.Fatalf("%s", out)
	}
	blocks := openThinking(r.Output[0]["encrypted_content"].(string))
	if len(blocks) != 1 || blocks[0].Signature != "sig1" || blocks[0].Thinking != "Hmm." {
		t.Errorf("sealed blocks %+v", blocks)
	}
	if r.Output[1]["content"].([]any)[0].(map[string]any)["text"] != "It is cold." {
		t.Errorf("message %v", r.Output[1])
	}
	if r.Output[2]["arguments"] != `{"city":"Oslo"}` || r.Output[2]["call_id"] != "toolu_9" {
		t.Errorf("call %v", r.Output[2])
	}
	if r.Usage.InputTokens != 15 || r.Usage.InputTokensDetails.CachedTokens != 3 || u.InputTokens != 10 || u.CacheCreation5m != 2 {
		t.Errorf("usage %+v / %+v", r.Usage, u)
	}
	// A forged or foreign blob is dropped, never sent on.
	if openThinking("gAAAAforeign") != nil || openThinking("gw1:!!!") != nil {
		t.Error("foreign blob accepted")
	}
}
