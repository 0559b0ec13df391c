package providers

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// codexTurn is shaped like Codex 0.169's requests:
// developer messages for the system prompt, a namespace tool, a custom
// tool, a hosted web_search, replayed calls with ids, and a reasoning item.
const codexTurn = `{"model":"coder","stream":true,"store":false,"tool_choice":"auto","parallel_tool_calls":true,
 "reasoning":{"summary":"auto"},"include":["reasoning.encrypted_content"],"prompt_cache_key":"th-1",
 "client_metadata":{"session_id":"s"},
 "input":[
  {"type":"message","role":"developer","content":[{"type":"input_text","text":"You are Codex."}]},
  {"type":"message","role":"developer","content":[{"type":"input_text","text":"Sandbox: workspace-write."}]},
  {"type":"message","role":"user","content":[{"type":"input_text","text":"list the files"}]},
  {"type":"reasoning","summary":[{"type":"summary_text","text":"plan"}],"encrypted_content":null},
  {"type":"message","role":"assistant","id":"msg_1","content":[{"type":"output_text","text":"Looking."}]},
  {"type":"function_call","id":"fc_1","name":"exec_command","arguments":"{\"cmd\":\"ls\"}","call_id":"call_1"},
  {"type":"custom_tool_call","name":"apply_patch","input":"*** Begin Patch","call_id":"call_2"},
  {"type":"function_call_output","id":"fco_1","call_id":"call_1","output":"README.md\n"},
  {"type":"function_call","name":"spawn_agent","namespace":"multi_agent_v1","arguments":"{}","call_id":"call_3"},
  {"type":"function_call_output","call_id":"call_orphan","output":"lost"}
 ],
 "tools":[
  {"type":"function","name":"exec_command","description":"Run","strict":false,"parameters":{"type":"object","properties":{"cmd":{"type":"string"}},"required":["cmd"]}},
  {"type":"custom","name":"apply_patch","description":"Patch files","format":{"type":"grammar","syntax":"lark","definition":"start: x"}},
  {"type":"namespace","name":"multi_agent_v1","description":"agents","tools":[{"type":"function","name":"spawn_agent","parameters":null}]},
  {"type":"web_search","external_web_access":false}
 ]}`

func mustTurn(t *testing.T, body string) *ResponsesTurn {
	t.Helper()
	turn, err := ParseResponsesRequest([]byte(body))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	turn.Alias, turn.Created = "coder", 1700000000
	return turn
}

func TestResponsesToChatRequest(t *testing.T) {
	turn := mustTurn(t, codexTurn)
	out, err := turn.toChat("qwen3", true, chatOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var chat struct {
		Model         string            `json:"model"`
		Stream        bool              `json:"stream"`
		StreamOptions *OpenAIStreamOpts `json:"stream_options"`
		Messages      []struct {
			Role       string           `json:"role"`
			Content    json.RawMessage  `json:"content"`
			ToolCalls  []OpenAIToolCall `json:"tool_calls"`
			ToolCallID string           `json:"tool_call_id"`
		} `json:"messages"`
		Tools []OpenAITool `json:"tools"`
	}
	if err := json.Unmarshal(out, &chat); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if chat.Model != "qwen3" || !chat.Stream || chat.StreamOptions == nil || !chat.StreamOptions.IncludeUsage {
		t.Errorf("model/stream/include_usage wrong: %s", out)
	}
	roles := make([]string, len(chat.Messages))
	for i, m := range chat.Messages {
		roles[i] = m.Role
	}
	// One system message from both developer messages; the assistant text
	// and the calls after it are one message; every call is answered, the
	// missing ones with "aborted"; the orphan output is gone.
	want := "system,user,assistant,tool,tool,assistant,tool"
	if got := strings.Join(roles, ","); got != want {
		t.Fatalf("roles %s, want %s\n%s", got, want, out)
	}
	if string(chat.Messages[0].Content) != `"You are Codex.\n\nSandbox: workspace-write."` {
		t.Errorf("system = %s", chat.Messages[0].Content)
	}
	a := chat.Messages[2]
	if string(a.Content) != `"Looking."` || len(a.ToolCalls) != 2 {
		t.Fatalf("assistant = %+v", a)
	}
	if a.ToolCalls[1].Function.Name != "apply_patch" || a.ToolCalls[1].Function.Arguments != `{"input":"*** Begin Patch"}` {
		t.Errorf("custom call = %+v", a.ToolCalls[1])
	}
	if chat.Messages[3].ToolCallID != "call_1" || string(chat.Messages[4].Content) != `"aborted"` || chat.Messages[4].ToolCallID != "call_2" {
		t.Errorf("tool outputs = %+v %+v", chat.Messages[3], chat.Messages[4])
	}
	if chat.Messages[5].ToolCalls[0].Function.Name != "multi_agent_v1__spawn_agent" {
		t.Errorf("namespaced call = %+v", chat.Messages[5].ToolCalls[0])
	}
	names := []string{}
	for _, tool := range chat.Tools {
		names = append(names, tool.Function.Name)
	}
	if got := strings.Join(names, ","); got != "exec_command,apply_patch,multi_agent_v1__spawn_agent" {
		t.Errorf("tools = %s (web_search must be left out)", got)
	}
	if !bytes.Contains(chat.Tools[1].Function.Parameters, []byte(`"input"`)) || !strings.Contains(chat.Tools[1].Function.Description, "start: x") {
		t.Errorf("custom tool = %+v", chat.Tools[1].Function)
	}
	if string(chat.Tools[2].Function.Parameters) != `{"type":"object","properties":{}}` {
		t.Errorf("null parameters = %s", chat.Tools[2].Function.Parameters)
	}
}

func TestResponsesRequestOptions(t *testing.T) {
	turn := mustTurn(t, `{"model":"m","input":"hi","instructions":"Be brief.","max_output_tokens":50,"temperature":0.2,
		"text":{"format":{"type":"json_schema","name":"out","schema":{"type":"object"},"strict":true}},
		"reasoning":{"effort":"xhigh"},"safety_identifier":"u1","tools":[{"type":"function","name":"f"},{"type":"function","name":"g"}],
		"tool_choice":{"type":"allowed_tools","mode":"required","tools":[{"type":"function","name":"g"}]}}`)
	local, err := turn.toChat("m", false, chatOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"max_tokens":50`, `"temperature":0.2`, `"reasoning_effort":"high"`, `"user":"u1"`,
		`"response_format":{"json_schema":{"description":null,"name":"out","schema":{"type":"object"},"strict":true},"type":"json_schema"}`,
		`"tool_choice":"required"`, `{"role":"system","content":"Be brief."}`, `{"role":"user","content":"hi"}`} {
		if !bytes.Contains(local, []byte(want)) {
			t.Errorf("local request lacks %s:\n%s", want, local)
		}
	}
	if bytes.Contains(local, []byte(`"name":"f"`)) {
		t.Errorf("allowed_tools did not filter f out: %s", local)
	}
	cloud, _ := turn.toChat("m", false, chatOptions{OpenAICloud: true})
	if !bytes.Contains(cloud, []byte(`"max_completion_tokens":50`)) || !bytes.Contains(cloud, []byte(`"reasoning_effort":"xhigh"`)) {
		t.Errorf("cloud request: %s", cloud)
	}
}

func TestResponsesBadInputNamesTheParam(t *testing.T) {
	cases := []struct{ body, param string }{
		{`{"input":"hi"}`, "model"},
		{`{"model":"m"}`, "input"},
		{`{"model":"m","input":7}`, "input"},
		{`{"model":5,"input":"hi"}`, "model"},
		{`{"model":"m","input":"hi","max_output_tokens":"many"}`, "max_output_tokens"},
		{`{"model":"m","input":"hi","tools":[{"type":"telepathy","name":"x"}]}`, "tools[0].type"},
		{`{"model":"m","input":"hi","tools":[{"type":"local_shell"}]}`, "tools[0].type"},
		{`{"model":"m","input":"hi","tools":[{"type":"function"}]}`, "tools[0].name"},
		{`{"model":"m","input":"hi","conversation":5}`, "conversation"},
		{`{"model":"m","input":"hi","conversation":{"id":""}}`, "conversation"},
		{`{"model":"m","input":"hi","conversation":"conv_1","previous_response_id":"resp_1"}`, "conversation"},
		{`{"model":"m","input":"hi","background":true,"store":false}`, "background"},
		{`{"model":"m","input":["hi"]}`, "input[0]"},
		{`{"model":"m","input":[{"type":"message","role":"user","content":5}]}`, "input[0].content"},
		{`{"model":"m","input":[{"type":"function_call_output","call_id":"c","output":{"x":1}}]}`, "input[0].output"},
		{`{"model":"m","input":[{"type":"function_call","call_id":"c","name":7}]}`, "input[0].name"},
	}
	for _, c := range cases {
		_, err := ParseResponsesRequest([]byte(c.body))
		e, ok := err.(*APIError)
		if !ok || e.Status != 400 || e.Param != c.param {
			t.Errorf("%s: got %#v, want a 400 naming %q", c.body, err, c.param)
		}
	}
	// Errors found while translating the items name them too.
	for _, c := range []struct{ body, param string }{
		{`{"model":"m","input":[{"type":"hologram"}]}`, "input[0].type"},
		{`{"model":"m","input":[{"role":"wizard","content":"x"}]}`, "input[0].role"},
		{`{"model":"m","input":[{"type":"function_call","name":"f","arguments":"{}"}]}`, "input[0].call_id"},
		{`{"model":"m","input":[{"role":"user","content":[{"type":"input_image","file_id":"file_1"}]}]}`, "input[0].content[0].image_url"},
		{`{"model":"m","input":"hi","tools":[{"type":"function","name":"f"}],"tool_choice":{"type":"function","name":"nope"}}`, "tool_choice.name"},
		{`{"model":"m","input":"hi","tools":[{"type":"function","name":"f"}],"tool_choice":{"type":"web_search_preview"}}`, "tool_choice.type"},
		{`{"model":"m","input":"hi","text":{"format":{"type":"yaml"}}}`, "text.format.type"},
	} {
		turn := mustTurn(t, c.body)
		_, err := turn.toChat("m", false, chatOptions{})
		e, ok := err.(*APIError)
		if !ok || e.Status != 400 || e.Param != c.param {
			t.Errorf("%s: got %#v, want a 400 naming %q", c.body, err, c.param)
		}
	}
}

func TestResponsesReferencesResolve(t *testing.T) {
	turn := mustTurn(t, `{"model":"m","input":[{"type":"item_reference","id":"msg_old"},{"role":"user","content":"and now?"}]}`)
	stored := json.RawMessage(`{"id":"msg_old","type":"message","role":"assistant","content":[{"type":"output_text","text":"before"}]}`)
	if err := turn.ResolveReferences(func(id string) (json.RawMessage, bool) { return stored, id == "msg_old" }); err != nil {
		t.Fatal(err)
	}
	out, err := turn.toChat("m", false, chatOptions{})
	if err != nil || !bytes.Contains(out, []byte(`{"role":"assistant","content":"before"}`)) {
		t.Fatalf("%v %s", err, out)
	}
	miss := mustTurn(t, `{"model":"m","input":[{"type":"item_reference","id":"msg_gone"}]}`)
	err = miss.ResolveReferences(func(string) (json.RawMessage, bool) { return nil, false })
	if e, ok := err.(*APIError); !ok || e.Status != 400 || !strings.Contains(e.Message, "msg_gone") {
		t.Fatalf("unknown reference: %v", err)
	}
	// Items without ids get one, so later turns can refer to them.
	for _, it := range turn.NewItems {
		if !bytes.Contains(it, []byte(`"id":"`)) {
			t.Errorf("item without id: %s", it)
		}
	}
}

func TestChatAnswerToResponse(t *testing.T) {
	turn := mustTurn(t, codexTurn)
	chat := `{"id":"c1","object":"chat.completion","created":1,"model":"q","service_tier":"flex","choices":[{"index":0,"message":{"role":"assistant",
		"reasoning_content":"think","content":"Here.","tool_calls":[
		{"id":"call_a","type":"function","function":{"name":"apply_patch","arguments":"{\"input\":\"*** Begin Patch\\n\"}"}},
		{"id":"call_b","type":"function","function":{"name":"multi_agent_v1__spawn_agent","arguments":"{}"}}]},"finish_reason":"length"}],
		"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15,"prompt_tokens_details":{"cached_tokens":4},"completion_tokens_details":{"reasoning_tokens":2}}}`
	out, err := turn.chatToResponses([]byte(chat))
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		ID                string `json:"id"`
		Status            string `json:"status"`
		Model             string `json:"model"`
		ServiceTier       string `json:"service_tier"`
		IncompleteDetails *struct {
			Reason string `json:"reason"`
		} `json:"incomplete_details"`
		Output []map[string]any `json:"output"`
		Usage  responsesUsage   `json:"usage"`
	}
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatal(err)
	}
	// The response names the model the upstream says answered, as a chat
	// answer does, not the alias the client asked for.
	if r.ID != turn.ID || r.Model != "q" || r.Status != "incomplete" || r.IncompleteDetails == nil || r.IncompleteDetails.Reason != "max_output_tokens" || r.ServiceTier != "flex" {
		t.Errorf("response = %s", out)
	}
	kinds := []string{}
	for _, it := range r.Output {
		kinds = append(kinds, it["type"].(string))
	}
	if got := strings.Join(kinds, ","); got != "reasoning,message,custom_tool_call,function_call" {
		t.Fatalf("output kinds %s", got)
	}
	if r.Output[2]["input"] != "*** Begin Patch\n" || r.Output[2]["call_id"] != "call_a" {
		t.Errorf("custom call = %v", r.Output[2])
	}
	if r.Output[3]["name"] != "spawn_agent" || r.Output[3]["namespace"] != "multi_agent_v1" {
		t.Errorf("namespaced call = %v", r.Output[3])
	}
	u := r.Usage
	if u.InputTokens != 10 || u.OutputTokens != 5 || u.TotalTokens != 15 || u.InputTokensDetails.CachedTokens != 4 || u.OutputTokensDetails.ReasoningTokens != 2 {
		t.Errorf("usage = %+v", u)
	}
	if turn.Status != "incomplete" || len(turn.Output) != 4 || !bytes.Equal(turn.Response, out) {
		t.Errorf("turn not finalized: %s %d", turn.Status, len(turn.Output))
	}
}

// respEvent is one parsed event of the gateway's Responses stream.
type respEvent struct {
	name string
	data map[string]any
}

func parseRespSSE(t *testing.T, b []byte) []respEvent {
	t.Helper()
	var out []respEvent
	for _, block := range strings.Split(strings.TrimSpace(string(b)), "\n\n") {
		var ev respEvent
		for _, line := range strings.Split(block, "\n") {
			switch {
			case strings.HasPrefix(line, "event: "):
				ev.name = line[7:]
			case strings.HasPrefix(line, "data: "):
				if err := json.Unmarshal([]byte(line[6:]), &ev.data); err != nil {
					t.Fatalf("event data is not JSON: %v: %q", err, line)
				}
			default:
				t.Fatalf("unexpected line %q", line)
			}
		}
		out = append(out, ev)
	}
	return out
}

// checkResponsesStream enforces what consumers of the stream require
// (docs/wire-formats.md §7): created first, event name = type,
// sequence numbers 0,1,2…, items never overlap, deltas only inside their
// item, one terminal event last whose output equals the items sent.
func checkResponsesStream(t *testing.T, evs []respEvent) (terminal map[string]any) {
	t.Helper()
	if len(evs) < 3 || evs[0].name != "response.created" || evs[1].name != "response.in_progress" {
		t.Fatalf("stream must open with created, in_progress: %v", evs)
	}
	open := ""
	var done []any
	for i, ev := range evs {
		if ev.data["type"] != ev.name {
			t.Fatalf("event %d: name %q, type %v", i, ev.name, ev.data["type"])
		}
		if seq, _ := ev.data["sequence_number"].(float64); int(seq) != i {
			t.Fatalf("event %d has sequence_number %v", i, ev.data["sequence_number"])
		}
		switch {
		case ev.name == "response.output_item.added":
			if open != "" {
				t.Fatalf("event %d opens an item while %s is open", i, open)
			}
			open = ev.data["item"].(map[string]any)["id"].(string)
		case ev.name == "response.output_item.done":
			item := ev.data["item"].(map[string]any)
			if item["id"] != open {
				t.Fatalf("event %d closes %v, open is %s", i, item["id"], open)
			}
			if idx := int(ev.data["output_index"].(float64)); idx != len(done) {
				t.Fatalf("event %d: output_index %d, want %d", i, idx, len(done))
			}
			done = append(done, item)
			open = ""
		case strings.HasSuffix(ev.name, ".delta") || strings.HasSuffix(ev.name, "part.added"):
			if ev.data["item_id"] != open {
				t.Fatalf("event %d (%s) for item %v outside its item (%s open)", i, ev.name, ev.data["item_id"], open)
			}
		}
	}
	last := evs[len(evs)-1]
	switch last.name {
	case "response.completed", "response.incomplete", "response.failed":
	default:
		t.Fatalf("last event is %s", last.name)
	}
	if open != "" {
		t.Fatalf("item %s left open", open)
	}
	resp := last.data["response"].(map[string]any)
	got, _ := json.Marshal(resp["output"])
	want, _ := json.Marshal(done)
	if want == nil || string(want) == "null" {
		want = []byte("[]")
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("terminal output %s\nitems sent %s", got, want)
	}
	return resp
}

func runResponsesStream(t *testing.T, turn *ResponsesTurn, chunks ...string) []byte {
	t.Helper()
	s := newResponsesStream(turn)
	var out []byte
	for _, c := range chunks {
		var err error
		if out, err = s.Translate(out, Event{Data: []byte(c)}); err != nil {
			t.Fatalf("chunk %s: %v", c, err)
		}
	}
	return s.Finish(out)
}

func TestChatStreamToResponsesEvents(t *testing.T) {
	turn := mustTurn(t, codexTurn)
	out := runResponsesStream(t, turn,
		`{"choices":[{"index":0,"delta":{"role":"assistant","reasoning_content":"Let me "}}]}`,
		`{"choices":[{"index":0,"delta":{"reasoning_content":"see."}}]}`,
		`{"choices":[{"index":0,"delta":{"content":"Running "}}]}`,
		`{"choices":[{"index":0,"delta":{"content":"ls."}}]}`,
		// two parallel calls whose fragments interleave, then a custom tool
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_x","type":"function","function":{"name":"exec_command","arguments":"{\"cmd\""}}]}}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_y","type":"function","function":{"name":"multi_agent_v1__spawn_agent","arguments":"{"}}]}}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":":\"ls\"}"}}]}}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"}"}}]}}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":2,"id":"call_z","type":"function","function":{"name":"apply_patch","arguments":"{\"input\":\"*** Begin"}}]}}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":2,"function":{"arguments":" Patch\"}"}}]}}]}`,
		`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
		`{"choices":[],"usage":{"prompt_tokens":7,"completion_tokens":3,"total_tokens":10,"completion_tokens_details":{"reasoning_tokens":1}}}`,
		`[DONE]`)
	evs := parseRespSSE(t, out)
	resp := checkResponsesStream(t, evs)
	if resp["status"] != "completed" || resp["id"] != turn.ID {
		t.Fatalf("terminal = %v", resp)
	}
	output := resp["output"].([]any)
	var kinds []string
	for _, it := range output {
		kinds = append(kinds, it.(map[string]any)["type"].(string))
	}
	if got := strings.Join(kinds, ","); got != "reasoning,message,function_call,function_call,custom_tool_call" {
		t.Fatalf("kinds %s", got)
	}
	// Codex asked for a summary: reasoning goes out as summary text.
	if s := output[0].(map[string]any)["summary"].([]any); len(s) != 1 || s[0].(map[string]any)["text"] != "Let me see." {
		t.Errorf("reasoning = %v", output[0])
	}
	fc := output[2].(map[string]any)
	if fc["arguments"] != `{"cmd":"ls"}` || fc["call_id"] != "call_x" {
		t.Errorf("first call = %v", fc)
	}
	ns := output[3].(map[string]any)
	if ns["name"] != "spawn_agent" || ns["namespace"] != "multi_agent_v1" || ns["arguments"] != "{}" {
		t.Errorf("interleaved namespaced call = %v", ns)
	}
	if ct := output[4].(map[string]any); ct["input"] != "*** Begin Patch" {
		t.Errorf("custom call = %v", ct)
	}
	usage := resp["usage"].(map[string]any)
	if usage["input_tokens"] != 7.0 || usage["total_tokens"] != 10.0 || usage["output_tokens_details"].(map[string]any)["reasoning_tokens"] != 1.0 {
		t.Errorf("usage = %v", usage)
	}
	if turn.Status != "completed" || len(turn.Output) != 5 {
		t.Errorf("turn: %s %d", turn.Status, len(turn.Output))
	}
}

func TestChatStreamRefusalAndLength(t *testing.T) {
	turn := mustTurn(t, `{"model":"m","input":"hi","stream":true}`)
	out := runResponsesStream(t, turn,
		`{"choices":[{"index":0,"delta":{"refusal":"I can't."}}]}`,
		`{"choices":[{"index":0,"delta":{},"finish_reason":"length"}]}`)
	evs := parseRespSSE(t, out)
	resp := checkResponsesStream(t, evs)
	if resp["status"] != "incomplete" || resp["incomplete_details"].(map[string]any)["reason"] != "max_output_tokens" {
		t.Fatalf("terminal %v", resp)
	}
	if evs[len(evs)-1].name != "response.incomplete" {
		t.Fatalf("last = %s", evs[len(evs)-1].name)
	}
	part := resp["output"].([]any)[0].(map[string]any)["content"].([]any)[0].(map[string]any)
	if part["type"] != "refusal" || part["refusal"] != "I can't." {
		t.Errorf("refusal part %v", part)
	}
	// For Codex the same refusal is text it can show.
	codex := mustTurn(t, `{"model":"m","input":"hi","stream":true}`)
	codex.RefusalAsText = true
	evs = parseRespSSE(t, runResponsesStream(t, codex, `{"choices":[{"index":0,"delta":{"refusal":"I can't."},"finish_reason":"stop"}]}`))
	part = checkResponsesStream(t, evs)["output"].([]any)[0].(map[string]any)["content"].([]any)[0].(map[string]any)
	if part["type"] != "output_text" || part["text"] != "I can't." {
		t.Errorf("codex refusal part %v", part)
	}
}

func TestResponsesStreamFailure(t *testing.T) {
	turn := mustTurn(t, `{"model":"m","input":"hi","stream":true}`)
	s := newResponsesStream(turn)
	out, _ := s.Translate(nil, Event{Data: []byte(`{"choices":[{"index":0,"delta":{"content":"Hel"}}]}`)})
	out = s.Fail(out, &APIError{Status: 429, Message: "slow down"})
	evs := parseRespSSE(t, out)
	errEv := evs[len(evs)-2]
	if errEv.name != "error" || errEv.data["code"] != "rate_limit_exceeded" || errEv.data["message"] != "slow down" {
		t.Fatalf("error event %v", errEv)
	}
	if nested := errEv.data["error"].(map[string]any); nested["code"] != "rate_limit_exceeded" || nested["message"] != "slow down" {
		t.Errorf("nested error %v", nested)
	}
	last := evs[len(evs)-1]
	resp := last.data["response"].(map[string]any)
	if last.name != "response.failed" || resp["status"] != "failed" || resp["error"].(map[string]any)["code"] != "rate_limit_exceeded" {
		t.Fatalf("failed event %v", last)
	}
	if turn.Status != "failed" {
		t.Errorf("turn status %s", turn.Status)
	}
	// Nothing more after the end.
	if more := s.Finish(nil); len(more) != 0 {
		t.Errorf("Finish after Fail wrote %q", more)
	}
}

// FuzzResponsesStream feeds arbitrary chunks to the stream translator:
// whatever a hub chunk holds, the client gets a well-formed sequence.
func FuzzResponsesStream(f *testing.F) {
	f.Add([]byte(`{"choices":[{"index":0,"delta":{"content":"a"}}]}`), []byte(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":3,"function":{"name":"apply_patch","arguments":"{"}}]}}]}`))
	f.Add([]byte(`{"choices":[{"index":0,"delta":{"reasoning":"r","refusal":"no"}}]}`), []byte(`{"choices":[{"delta":{"content":"x"},"finish_reason":"content_filter"}],"usage":{"prompt_tokens":-1}}`))
	f.Add([]byte(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c","function":{"name":"tool_search","arguments":"{\"query\""}}]}}]}`), []byte(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"x"}}]}}]} `))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		// A second chunk of odd length runs against Codex's request with
		// a client tool search instead.
		body := codexTurn
		if len(b)%2 == 1 {
			body = codexSearchFirstTurn
		}
		turn, err := ParseResponsesRequest([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		s := newResponsesStream(turn)
		out, err := s.Translate(nil, Event{Data: a})
		if err == nil {
			out, err = s.Translate(out, Event{Data: b})
		}
		if err != nil {
			out = s.Fail(out, &APIError{Status: 502, Message: err.Error()})
		} else {
			out = s.Finish(out)
		}
		checkResponsesStream(t, parseRespSSE(t, out))
	})
}

// FuzzResponsesRequest: any body is an error or a valid chat request.
func FuzzResponsesRequest(f *testing.F) {
	f.Add([]byte(codexTurn))
	f.Add([]byte(codexSearchFirstTurn))
	f.Add([]byte(codexSearchSecondTurn))
	f.Add([]byte(`{"model":"m","input":[{"role":"user","content":[{"type":"input_image","image_url":"data:image/png;base64,AA"}]},{"type":"function_call_output","call_id":"c","output":[{"type":"input_image","image_url":"https://x/y.png"}]}]}`))
	// Every field the reader knows, so the seed run alone compares the
	// fast path with encoding/json on all of them.
	f.Add([]byte(`{"model":"m","input":[{"type":"message","id":"msg_1","role":"user","content":[{"type":"input_text","text":"a\u00e9"},{"type":"input_image","image_url":"https://x/y.png","detail":"low","file_id":"f"},{"type":"input_file","file_data":"data:application/pdf;base64,AA","filename":"a.pdf","file_url":"u"},{"type":"refusal","refusal":"no"}]},
		{"type":"reasoning","summary":[{"type":"summary_text","text":"s"}],"encrypted_content":null},{"type":"function_call","call_id":"c","name":"f","namespace":"ns","arguments":"{}"},
		{"type":"custom_tool_call","call_id":"d","name":"g","input":"x"},{"type":"function_call_output","call_id":"c","output":"o"},{"type":"function_call_output","call_id":"d","output":[{"type":"input_text","text":"t"}]},{"id":"msg_ref"}],
		"instructions":"i","tools":[{"type":"function","name":"f","description":"d","parameters":{"type":"object"},"strict":true},{"type":"custom","name":"g","format":{"type":"text"}},{"type":"namespace","name":"ns","tools":[{"type":"function","name":"f"}]}],
		"tool_choice":"auto","parallel_tool_calls":false,"stream":true,"store":false,"previous_response_id":"resp_1","conversation":null,"max_output_tokens":5,"temperature":0.5,"top_p":1,
		"text":{"format":{"type":"text"},"verbosity":"low"},"reasoning":{"effort":"low","summary":"auto"},"include":["reasoning.encrypted_content"],"metadata":{"a":"b","n":null},
		"prompt_cache_key":"k","safety_identifier":"s","user":"u","truncation":"auto","service_tier":"flex","background":false,"max_tool_calls":3,"top_logprobs":2,"client_metadata":{"x":"y"}}`))
	f.Add([]byte(`{"model":"m","input":[{"role":"user","content":"q"},{"type":"reasoning","summary":[],"encrypted_content":"` +
		sealThinking([]AnthropicBlock{{Type: "thinking", Thinking: "a<b", Signature: "s"}, {Type: "redacted_thinking", Data: "d"}}) +
		`"},{"role":"assistant","content":"x"},{"type":"function_call","call_id":"c","name":"f","arguments":"{}"}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var fast ResponsesTurn
		if json.Valid(body) && readResponsesRequest(body, &fast) {
			// What the fast path reads, encoding/json reads the same.
			var slow ResponsesRequest
			if err := json.Unmarshal(body, &slow); err != nil {
				t.Fatalf("fast path read a body encoding/json refuses (%v): %s", err, body)
			}
			if !reflect.DeepEqual(fast.Req, slow) {
				t.Fatalf("fast %#v\nslow %#v", fast.Req, slow)
			}
			if b := bytes.TrimSpace(slow.Input); len(b) > 0 && b[0] == '[' {
				var raws []json.RawMessage
				_ = json.Unmarshal(b, &raws)
				if len(raws) != len(fast.items) {
					t.Fatalf("%d items fast, %d slow", len(fast.items), len(raws))
				}
				for i, raw := range raws {
					it, err := decodeItem(raw, "input")
					if err != nil {
						t.Fatalf("fast path read item %d that encoding/json refuses: %v", i, err)
					}
					if !reflect.DeepEqual(it, fast.items[i]) || !bytes.Equal(bytes.TrimSpace(raw), bytes.TrimSpace(fast.Items[i])) {
						t.Fatalf("item %d: fast %#v\nslow %#v", i, fast.items[i], it)
					}
				}
			}
		}
		turn, err := ParseResponsesRequest(body)
		if err != nil {
			if _, ok := err.(*APIError); !ok {
				t.Fatalf("non-API error %T %v", err, err)
			}
			return
		}
		out, err := turn.toChat("m", true, chatOptions{})
		if err != nil {
			if _, ok := err.(*APIError); !ok {
				t.Fatalf("non-API error %T %v", err, err)
			}
			return
		}
		var req OpenAIRequest
		if err := unmarshalOpenAIRequest(out, &req); err != nil {
			t.Fatalf("hub request unreadable: %v\n%s", err, out)
		}
		for _, o := range []chatOptions{{}, {Anthropic: true, OpenAICloud: true}} {
			hub, err := turn.buildChat("m", true, o)
			if err != nil {
				t.Fatal(err)
			}
			want, err := json.Marshal(hub)
			if err != nil {
				t.Fatal(err)
			}
			if got := appendChatRequest(nil, hub); !bytes.Equal(got, want) {
				t.Fatalf("hub encoder differs from json.Marshal:\n got %s\nwant %s", got, want)
			}
		}
	})
}

// TestResponsesFastPathTakesRealRequests: the shapes clients send are read
// by the fast path, not left to encoding/json.
func TestResponsesFastPathTakesRealRequests(t *testing.T) {
	for name, body := range map[string][]byte{"codex": []byte(codexTurn), "bench": benchResponsesBody(), "thinking": []byte(thinkingTurn)} {
		var turn ResponsesTurn
		if !readResponsesRequest(body, &turn) {
			t.Errorf("%s: the fast path gave up", name)
		}
	}
}

// FuzzResponseObjectEncoder pins the hand-written Response encoder to
// json.Marshal for whatever a request echoes into it.
func FuzzResponseObjectEncoder(f *testing.F) {
	f.Add([]byte(codexTurn), "completed", []byte(`{"id":"msg_1","type":"message"}`), int64(5))
	f.Add([]byte(`{"model":"m","input":"x","conversation":{"id":"conv_<1>"},"background":true}`), "queued", []byte(`{}`), int64(2))
	f.Add([]byte(`{"model":"m<&>","input":"x","metadata":{"b":"2","a":"1\u2028"},"temperature":1e-7,"top_p":0.5,"text":{"format":{"type":"json_schema","schema":{ "a" : [1, 2] }}},"instructions":"<b>"}`), "failed", []byte(`[ 1 ]`), int64(-1))
	f.Fuzz(func(t *testing.T, body []byte, status string, item []byte, n int64) {
		turn, err := ParseResponsesRequest(body)
		if err != nil {
			return
		}
		var output []json.RawMessage
		if json.Valid(item) {
			output = append(output, item)
		}
		usage := &responsesUsage{InputTokens: n, OutputTokens: n / 2, TotalTokens: n}
		o := turn.object(status, output, usage)
		if n%2 == 0 {
			o.Error = &responseError{Code: status, Message: string(item)}
			o.IncompleteDetails = &incompleteDetails{Reason: status}
			o.CompletedAt = &n
			o.Usage = nil
		}
		want, err := json.Marshal(&o)
		if err != nil {
			return
		}
		if got := appendResponseObject(nil, &o); !bytes.Equal(got, want) {
			t.Fatalf("encoder differs from json.Marshal:\n got %s\nwant %s", got, want)
		}
	})
}

// FuzzHubAnswerReader pins the fast chat-answer reader to encoding/json.
func FuzzHubAnswerReader(f *testing.F) {
	f.Add([]byte(benchChatAnswer))
	f.Add([]byte(`{"choices":[{"message":{"content":null,"refusal":"no","reasoning_content":"r","tool_calls":[{"index":0,"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]},"finish_reason":null}],"usage":{"prompt_tokens":1,"completion_tokens_details":{"reasoning_tokens":2},"prompt_tokens_details":null},"service_tier":"flex"}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		var fast chatAnswer
		if !readChatAnswer(raw, &fast) {
			return
		}
		var slow chatAnswer
		if err := json.Unmarshal(raw, &slow); err != nil {
			t.Fatalf("fast reader read what encoding/json refuses (%v): %s", err, raw)
		}
		if !reflect.DeepEqual(fast, slow) {
			t.Fatalf("fast %#v\nslow %#v", fast, slow)
		}
	})
}

// FuzzHubChunkReader pins the fast chunk reader to encoding/json.
func FuzzHubChunkReader(f *testing.F) {
	f.Add([]byte(`{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"hi","reasoning_signature":"s"},"finish_reason":null}],"usage":null}`))
	f.Add([]byte(`{"choices":[{"delta":{"tool_calls":[{"index":1,"id":"x","function":{"arguments":"{"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":3},"service_tier":"default"}`))
	f.Add([]byte(`{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"x","function":{"name":"f","arguments":"{}"},"extra_content":{"google":{"thought_signature":"S"}}}]}}]}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		var fast chatAnswer
		if !readChatAnswer(raw, &fast) {
			return
		}
		if fast.Choices != nil && len(fast.Choices) == 0 && !bytes.Contains(raw, []byte(`"choices"`)) {
			fast.Choices = nil
		}
		var slow chatAnswer
		if err := json.Unmarshal(raw, &slow); err != nil {
			t.Fatalf("fast reader read what encoding/json refuses (%v): %s", err, raw)
		}
		if !reflect.DeepEqual(fast, slow) {
			t.Fatalf("fast %#v\nslow %#v", fast, slow)
		}
	})
}

// BenchmarkResponsesStream is the per-stream cost of turning a chat
// backend's 20-chunk stream into Responses events.
func BenchmarkResponsesStream(b *testing.B) {
	body := benchResponsesBody()
	var chunks [][]byte
	chunks = append(chunks, []byte(`{"id":"chatcmpl-fake","object":"chat.completion.chunk","created":1730000000,"model":"fake-gpt","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}],"usage":null}`))
	for i := 0; i < 20; i++ {
		chunks = append(chunks, []byte(`{"id":"chatcmpl-fake","object":"chat.completion.chunk","created":1730000000,"model":"fake-gpt","choices":[{"index":0,"delta":{"content":"word "},"finish_reason":null}],"usage":null}`))
	}
	chunks = append(chunks, []byte(`{"id":"chatcmpl-fake","object":"chat.completion.chunk","created":1730000000,"model":"fake-gpt","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":null}`),
		[]byte(`{"id":"chatcmpl-fake","object":"chat.completion.chunk","created":1730000000,"model":"fake-gpt","choices":[],"usage":{"prompt_tokens":11,"completion_tokens":7,"total_tokens":18}}`), []byte(`[DONE]`))
	turn, err := ParseResponsesRequest(body)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	var out []byte
	for b.Loop() {
		s := newResponsesStream(turn)
		out = out[:0]
		for _, c := range chunks {
			if out, err = s.Translate(out, Event{Data: c}); err != nil {
				b.Fatal(err)
			}
		}
		out = s.Finish(out)
	}
}
