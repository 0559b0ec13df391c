package providers

import (
	"encoding/json"
	"strings"
	"testing"
)

// claudeCodeToolSearchTurn is the request Claude Code 2.1.332 sends after
// its ToolSearch tool ran: the found MCP tool joins tools (defer_loading)
// and the result names it in a tool_reference block.
const claudeCodeToolSearchTurn = `{"model":"claude-team-mock","max_tokens":512,
"tools":[{"name":"ToolSearch","description":"Search deferred tools","input_schema":{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}},
{"name":"mcp__modelgate__everything-echo","description":"Echoes back the input","input_schema":{"type":"object","properties":{"message":{"type":"string"}}},"defer_loading":true}],
"messages":[{"role":"user","content":"use the echo tool"},
{"role":"assistant","content":[{"type":"tool_use","id":"call_ts1","name":"ToolSearch","input":{"query":"select:mcp__modelgate__everything-echo"}}]},
{"role":"user","content":[{"type":"tool_result","tool_use_id":"call_ts1","content":[{"type":"tool_reference","tool_name":"mcp__modelgate__everything-echo"}]}]}]}`

// TestToolReferenceResultNamesTheTools: a ToolSearch result made of
// tool_reference blocks reaches every backend the Messages API is
// translated for as text naming the tools found, never as an empty tool
// result (the third-party client review, F3).
func TestToolReferenceResultNamesTheTools(t *testing.T) {
	const want = "Tool loaded: mcp__modelgate__everything-echo"
	for _, up := range []Format{FormatOpenAI, FormatOllama, FormatGemini} {
		rt, err := NewRoute(FormatAnthropic, up)
		if err != nil {
			t.Fatal(err)
		}
		body := []byte(claudeCodeToolSearchTurn)
		info, err := PeekRequest(body)
		if err != nil {
			t.Fatal(err)
		}
		out, _, err := rt.Request(body, info, "up-model", RouteOptions{DefaultMaxTokens: 1024})
		if err != nil {
			t.Fatalf("%s: %v", up, err)
		}
		if !strings.Contains(string(out), want) {
			t.Errorf("%s upstream: the tool result does not name the tool loaded:\n%s", up, out)
		}
	}
}

// TestToolReferenceBesideText: text and several references are kept, in
// that order, and an error result keeps its prefix.
func TestToolReferenceBesideText(t *testing.T) {
	b := AnthropicBlock{Type: "tool_result", IsError: true, Content: json.RawMessage(
		`[{"type":"text","text":"found 2"},{"type":"tool_reference","tool_name":"a"},{"type":"tool_reference","tool_name":"b"},{"type":"tool_reference"}]`)}
	got, err := toolResultText(&b)
	if err != nil {
		t.Fatal(err)
	}
	if want := toolErrorPrefix + "found 2\nTool loaded: a\nTool loaded: b"; got != want {
		t.Errorf("toolResultText = %q, want %q", got, want)
	}
}

// TestToolReferenceBlockEncodesAsMarshal: the block appender writes
// tool_name exactly as encoding/json does.
func TestToolReferenceBlockEncodesAsMarshal(t *testing.T) {
	b := AnthropicBlock{Type: "tool_reference", ToolName: "mcp__x__<y>"}
	sameAsMarshal(t, "tool_reference", appendAnthropicBlock(nil, &b), &b)
}
