package integration

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/internal/testbin"
)

// TestCodexToolSearchReachesMCPTools (the third-party client review, F1):
// Codex 0.171 with docs/codex.md's model catalog defers its MCP tools behind
// a client-executed tool_search. Through a translated (chat) backend the
// model is offered tool_search, searches, is offered the tool the search
// loaded, calls it, and Codex runs it through the gateway's MCP server.
func TestCodexToolSearchReachesMCPTools(t *testing.T) {
	codex := testbin.Codex(t)
	g, script := mcpClientGateway(t)
	// Set before Codex starts: the backend has served nothing yet.
	script.pick = func(tools []string) (string, string) {
		if name, args := pickProbe(tools); name != "" {
			return name, args
		}
		if slices.Contains(tools, "tool_search") {
			return "tool_search", `{"query":"gateway probe","limit":5}`
		}
		return "", ""
	}
	script.more = func(result string) bool { return strings.HasPrefix(result, "Tool loaded: ") }
	cfg := "model_catalog_json = " + strconvQuote(codexCatalogFor(t, codex, "coder")) + "\n" + codexConfig(g.base, "coder") + fmt.Sprintf(`
[mcp_servers.gw]
url = "%s/mcp"
bearer_token_env_var = "MODELGATE_API_KEY"
`, g.base)
	got := runCodexConfig(t, codex, cfg, t.TempDir(), "Call the gateway probe tool with the word kiwi, then say done.")
	reqs := script.requests()
	if len(reqs) == 0 {
		t.Fatal("Codex sent the backend nothing")
	}
	first := reqs[0].req.toolNames()
	if probe, _ := pickProbe(first); probe != "" || !slices.Contains(first, "tool_search") {
		if probe != "" {
			t.Skipf("this Codex offers its MCP tools up front (%v), not behind tool_search: run with Codex 0.171 or later (MODELGATE_CODEX_BIN)", first)
		}
		t.Fatalf("the first request's tools %v: want tool_search offered to the backend", first)
	}
	if !strings.Contains(got, finalReply) {
		t.Errorf("last message %q lacks the backend's final text", got)
	}
	checkProbeRoundTrip(t, g, script, "codex")
}
