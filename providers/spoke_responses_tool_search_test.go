package providers

import (
	"encoding/json"
	"strings"
	"testing"
)

// codexToolSearchTools are the tools Codex 0.171 sends with a model
// catalog whose model supports the search tool: its MCP tools deferred
// behind a client-executed tool_search (the third-party client review,
// F1).
const codexToolSearchTools = `"tools":[
  {"type":"function","name":"exec_command","description":"Run","strict":false,"parameters":{"type":"object","properties":{"cmd":{"type":"string"}},"required":["cmd"]}},
  {"type":"custom","name":"apply_patch","description":"Patch files","format":{"type":"grammar","syntax":"lark","definition":"start: x"}},
  {"type":"tool_search","execution":"client","description":"# Tool discovery\n\nSearches over deferred tool metadata with BM25.","parameters":{"type":"object","properties":{"limit":{"type":"number"},"query":{"type":"string"}},"required":["query"]}},
  {"type":"web_search","external_web_access":true,"search_content_types":["text","image"]}]`

// codexSearchFirstTurn asks for an MCP tool the model must search for.
const codexSearchFirstTurn = `{"model":"coder","stream":true,"store":false,"input":[
  {"type":"message","role":"user","content":[{"type":"input_text","text":"MCPCALL use the echo tool"}]}],` + codexToolSearchTools + `}`

// codexSearchSecondTurn is the history Codex sends once it ran the
// search: the model's tool_search_call and Codex's tool_search_output,
// which loads the MCP tools as a namespace of functions.
const codexSearchSecondTurn = `{"model":"coder","stream":true,"store":false,"input":[
  {"type":"message","role":"user","content":[{"type":"input_text","text":"MCPCALL use the echo tool"}]},
  {"type":"tool_search_call","call_id":"call_ts","status":"completed","execution":"client","arguments":{"query":"echo","limit":5}},
  {"type":"tool_search_output","call_id":"call_ts","status":"completed","execution":"client","tools":[
    {"type":"namespace","name":"mcp__modelgate__","description":"Tools in the mcp__modelgate__ namespace.","tools":[
      {"type":"function","name":"everything_echo","description":"Echoes back the input","strict":false,"defer_loading":true,
       "parameters":{"type":"object","properties":{"message":{"type":"string"}},"required":["message"]}}]}]},
  {"type":"tool_search_call","id":"tsc_server","status":"completed","execution":"server","arguments":{"paths":["x"]}},
  {"type":"tool_search_output","id":"tso_server","status":"completed","execution":"server","tools":[{"type":"function","name":"hosted_only"}]}],` + codexToolSearchTools + `}`

// chatOf reads a translated chat request.
func chatOf(t *testing.T, turn *ResponsesTurn) (tools map[string]OpenAIFunction, msgs []chatMessage) {
	t.Helper()
	out, err := turn.toChat("up", true, chatOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var chat struct {
		Tools    []OpenAITool  `json:"tools"`
		Messages []chatMessage `json:"messages"`
	}
	if err := json.Unmarshal(out, &chat); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	tools = map[string]OpenAIFunction{}
	for _, tool := range chat.Tools {
		tools[tool.Function.Name] = tool.Function
	}
	return tools, chat.Messages
}

// TestClientToolSearchOfferedAsFunction: a client-executed tool_search
// reaches a translated backend as a function with its parameters (a
// hosted one and web_search still do not), and the model's call of it
// comes back as Codex's tool_search_call, whole answer and stream alike.
func TestClientToolSearchOfferedAsFunction(t *testing.T) {
	turn := mustTurn(t, codexSearchFirstTurn)
	tools, _ := chatOf(t, turn)
	ts, ok := tools["tool_search"]
	if !ok || len(tools) != 3 || !strings.Contains(string(ts.Parameters), `"query"`) || !strings.Contains(ts.Description, "Tool discovery") {
		t.Fatalf("chat tools %v: want exec_command, apply_patch and tool_search with its parameters", tools)
	}

	chat := `{"id":"c1","object":"chat.completion","created":1,"model":"q","choices":[{"index":0,"message":{"role":"assistant","content":null,
		"tool_calls":[{"id":"call_ts","type":"function","function":{"name":"tool_search","arguments":"{\"query\":\"echo\",\"limit\":5}"}}]},"finish_reason":"tool_calls"}],
		"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`
	checkToolSearchCall(t, oneOutputItem(t, turn, chat))

	turn = mustTurn(t, codexSearchFirstTurn)
	_, _ = chatOf(t, turn)
	stream := runResponsesStream(t, turn,
		`{"choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_ts","type":"function","function":{"name":"tool_search","arguments":"{\"query\":"}}]}}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"echo\",\"limit\":5}"}}]}}]}`,
		`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
		`[DONE]`)
	evs := parseRespSSE(t, stream)
	resp := checkResponsesStream(t, evs)
	output := resp["output"].([]any)
	if len(output) != 1 {
		t.Fatalf("stream output %v", output)
	}
	checkToolSearchCall(t, output[0].(map[string]any))
	for _, ev := range evs {
		if strings.HasPrefix(ev.name, "response.function_call") || strings.HasPrefix(ev.name, "response.custom_tool_call") {
			t.Errorf("a tool search call streamed %s", ev.name)
		}
	}
}

// oneOutputItem is the one output item of the Response a chat answer
// becomes.
func oneOutputItem(t *testing.T, turn *ResponsesTurn, chat string) map[string]any {
	t.Helper()
	out, err := turn.chatToResponses([]byte(chat))
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Output []map[string]any `json:"output"`
	}
	if err := json.Unmarshal(out, &r); err != nil || len(r.Output) != 1 {
		t.Fatalf("response %s (%v): want one output item", out, err)
	}
	return r.Output[0]
}

func checkToolSearchCall(t *testing.T, it map[string]any) {
	t.Helper()
	args, _ := it["arguments"].(map[string]any)
	if it["type"] != "tool_search_call" || it["execution"] != "client" || it["call_id"] != "call_ts" || it["status"] != "completed" ||
		args["query"] != "echo" || args["limit"] != 5.0 || !strings.HasPrefix(it["id"].(string), "tsc_") {
		t.Fatalf("tool search call item %v", it)
	}
}

// TestClientToolSearchHistoryAndLoadedTools: the search's call and
// output go upstream as a tool call and a tool message naming the tools
// loaded, those tools are offered as functions from then on, and the
// model's call of one comes back as the namespaced function Codex runs.
// A server-run search's items stay out.
func TestClientToolSearchHistoryAndLoadedTools(t *testing.T) {
	turn := mustTurn(t, codexSearchSecondTurn)
	tools, msgs := chatOf(t, turn)
	const loaded = "mcp__modelgate____everything_echo"
	if _, ok := tools[loaded]; !ok || !strings.Contains(string(tools[loaded].Parameters), `"message"`) {
		t.Fatalf("chat tools %v: the loaded MCP tool is not offered", tools)
	}
	if _, ok := tools["hosted_only"]; ok {
		t.Errorf("a server-run search's tools were offered: %v", tools)
	}
	if len(msgs) != 3 || msgs[1].Role != "assistant" || len(msgs[1].ToolCalls) != 1 ||
		msgs[1].ToolCalls[0].ID != "call_ts" || msgs[1].ToolCalls[0].Function.Name != "tool_search" ||
		msgs[1].ToolCalls[0].Function.Arguments != `{"query":"echo","limit":5}` {
		t.Fatalf("messages %+v: want user, the tool_search call, its result", msgs)
	}
	if m := msgs[2]; m.Role != "tool" || m.ToolCallID != "call_ts" || m.Content != "Tool loaded: "+loaded {
		t.Fatalf("tool search result %+v", m)
	}

	chat := `{"id":"c2","object":"chat.completion","created":1,"model":"q","choices":[{"index":0,"message":{"role":"assistant","content":null,
		"tool_calls":[{"id":"call_echo","type":"function","function":{"name":"` + loaded + `","arguments":"{\"message\":\"hi\"}"}}]},"finish_reason":"tool_calls"}]}`
	if fc := oneOutputItem(t, turn, chat); fc["type"] != "function_call" || fc["name"] != "everything_echo" || fc["namespace"] != "mcp__modelgate__" || fc["arguments"] != `{"message":"hi"}` {
		t.Fatalf("call of the loaded tool %v", fc)
	}
}

// TestToolSearchArgumentsObject: a chat model's arguments that are not a
// JSON object still give Codex an object, the text as its query.
func TestToolSearchArgumentsObject(t *testing.T) {
	for args, want := range map[string]string{
		` {"query": "x"} `: `{"query":"x"}`,
		`echo tools`:       `{"query":"echo tools"}`,
		`["x"]`:            `{"query":"[\"x\"]"}`,
		``:                 `{"query":""}`,
	} {
		if got := string(appendToolSearchArguments(nil, args)); got != want {
			t.Errorf("appendToolSearchArguments(%q) = %s, want %s", args, got, want)
		}
	}
}
