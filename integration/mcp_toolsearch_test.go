package integration

import (
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelgate/modelgate/internal/testbin"
	"github.com/modelgate/modelgate/ledger"
)

// TestMCPToolSearchClaudeCode: Claude Code on a key with mcp_tool_search
// is offered the gateway's two tools instead of the probe server's; the
// model finds the probe with mcp_tool_search and calls it through
// mcp_tool_call, and its answer comes back.
func TestMCPToolSearchClaudeCode(t *testing.T) {
	claude := testbin.ClaudeCode(t)
	const searchKey = "sk-test-search-0123456789"
	// The model searches, then calls what the search found, then answers.
	var last atomic.Value
	last.Store("")
	script := &scriptedBackend{
		pick: func(tools []string) (string, string) {
			want, args := "__mcp_tool_search", `{"query":"probe word"}`
			if strings.Contains(last.Load().(string), `"name":"internal-`+probeTool+`"`) {
				want, args = "__mcp_tool_call", `{"name":"internal-`+probeTool+`","arguments":{"word":"kiwi"}}`
			}
			for _, name := range tools {
				if strings.HasSuffix(name, want) {
					return name, args
				}
			}
			return "", ""
		},
		more: func(result string) bool {
			last.Store(result)
			return !strings.Contains(result, probeAnswer)
		},
	}
	up := httptest.NewServer(script)
	t.Cleanup(up.Close)
	probe := probeServer(t)
	g := startGateway(t, gatewayConfig{
		authExtra: "key {env.SEARCH_KEY} {\n\t\t\tid searcher\n\t\t\tmcp_tool_search\n\t\t}",
		env:       []string{"SEARCH_KEY=" + searchKey},
		models:    scriptedProbeModels(up.URL, probe.URL)})
	dir := t.TempDir()
	cfg := claudeMCPConfig(t, dir, g.base, searchKey)
	res := runClaude(t, claude, claudeRun{
		prompt: "Find the gateway probe tool and call it with the word kiwi, then say you are done.",
		dir:    dir,
		env:    []string{"ANTHROPIC_BASE_URL=" + g.base, "ANTHROPIC_AUTH_TOKEN=" + aliceKey, "ANTHROPIC_MODEL=coder"},
		args:   []string{"--mcp-config", cfg, "--strict-mcp-config", "--allowedTools", "mcp__gw__mcp_tool_search,mcp__gw__mcp_tool_call"},
	})
	if !strings.Contains(res.Result, finalReply) {
		t.Errorf("result %q lacks the backend's final text", res.Result)
	}
	var offered []string
	var answered bool
	for _, c := range script.requests() {
		for _, name := range c.req.toolNames() {
			if strings.HasPrefix(name, "mcp__") && !slices.Contains(offered, name) {
				offered = append(offered, name)
			}
		}
		if _, content, ok := c.req.toolResult(); ok && strings.Contains(content, probeAnswer) {
			answered = true
		}
	}
	slices.Sort(offered)
	if strings.Join(offered, ",") != "mcp__gw__mcp_tool_call,mcp__gw__mcp_tool_search" || !answered {
		t.Fatalf("MCP tools offered to the model %v; the probe's answer came back: %v", offered, answered)
	}
	n := 0
	for _, r := range g.ledgerRecords(t) {
		if r.Endpoint == ledger.EndpointMCP && r.UpstreamModel == probeTool && r.KeyID == "searcher" && r.Outcome == ledger.OutcomeOK {
			n++
		}
	}
	if n != 1 {
		t.Errorf("ledger: %d probe calls by the searcher, want 1", n)
	}
}

// TestMCPRefusalsClaudeCode: what Claude Code shows the model for the
// gateway's other refusal codes: -32602 for a tool the key may not use
// (asked for through mcp_tool_call) and -32000 for its rate limit, each
// as "MCP error <code>: <message naming the tool>", the session going on.
func TestMCPRefusalsClaudeCode(t *testing.T) {
	claude := testbin.ClaudeCode(t)
	const mcpKey = "sk-test-refused-0123456789"
	steps := []string{
		`{"name":"internal-other","arguments":{}}`,
		`{"name":"internal-` + probeTool + `","arguments":{"word":"kiwi"}}`,
		`{"name":"internal-` + probeTool + `","arguments":{"word":"fig"}}`,
	}
	var n atomic.Int64
	script := &scriptedBackend{
		pick: func(tools []string) (string, string) {
			i := int(n.Load())
			for _, name := range tools {
				if strings.HasSuffix(name, "__mcp_tool_call") && i < len(steps) {
					return name, steps[i]
				}
			}
			return "", ""
		},
		more: func(string) bool { return n.Add(1) < int64(len(steps)) },
	}
	up := httptest.NewServer(script)
	t.Cleanup(up.Close)
	probe := probeServer(t)
	g := startGateway(t, gatewayConfig{
		authExtra: "key {env.MCP_KEY} {\n\t\t\tid tooluser\n\t\t\tmcp internal/" + probeTool + "\n\t\t\tmcp_tool_search\n\t\t\trpm 1\n\t\t}",
		env:       []string{"MCP_KEY=" + mcpKey},
		models:    scriptedProbeModels(up.URL, probe.URL)})
	dir := t.TempDir()
	res := runClaude(t, claude, claudeRun{
		prompt: "Call the gateway's tools as told, then say you are done.",
		dir:    dir,
		env:    []string{"ANTHROPIC_BASE_URL=" + g.base, "ANTHROPIC_AUTH_TOKEN=" + aliceKey, "ANTHROPIC_MODEL=coder"},
		args:   []string{"--mcp-config", claudeMCPConfig(t, dir, g.base, mcpKey), "--strict-mcp-config", "--allowedTools", "mcp__gw__mcp_tool_call"},
	})
	if !strings.Contains(res.Result, finalReply) {
		t.Errorf("result %q lacks the backend's final text", res.Result)
	}
	var results []string
	for _, c := range script.requests() {
		if _, content, ok := c.req.toolResult(); ok && !slices.Contains(results, content) {
			results = append(results, content)
		}
	}
	all := strings.Join(results, "\n")
	for _, want := range []string{`MCP error -32602: tool "internal-other": tool "other" of MCP server "internal" is not allowed for this key`, probeAnswer,
		`MCP error -32000: tool "gateway_probe" of MCP server "internal": `} {
		if !strings.Contains(all, want) {
			t.Errorf("the model never saw %q; tool results:\n%s", want, all)
		}
	}
	t.Logf("tool results the model saw:\n%s", all)
}
