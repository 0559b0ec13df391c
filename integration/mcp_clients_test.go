package integration

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/modelgate/modelgate/internal/testbin"
	"github.com/modelgate/modelgate/ledger"
)

// What the MCP client tests make each agent do: call the gateway's
// internal-gateway_probe tool, whose answer only the MCP server knows.
const (
	probeTool   = "gateway_probe"
	probeAnswer = "probe-answer-kiwi-7731"
)

// probeServer is a Go SDK MCP server over Streamable HTTP with two tools.
func probeServer(t *testing.T) *httptest.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "probe"}, nil)
	sdk.AddTool(s, &sdk.Tool{Name: probeTool, Description: "Returns the probe answer for a word."}, func(_ context.Context, _ *sdk.CallToolRequest, in struct {
		Word string `json:"word"`
	}) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "probe-answer-" + in.Word + "-7731"}}}, nil, nil
	})
	sdk.AddTool(s, &sdk.Tool{Name: "other", Description: "Another tool, for allow-lists."}, func(_ context.Context, _ *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "other-ran"}}}, nil, nil
	})
	srv := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil))
	t.Cleanup(srv.Close)
	return srv
}

// pickProbe makes the scripted model call the agent's name for the
// gateway's probe tool (Claude Code's mcp__gw__internal-gateway_probe,
// Codex's and Gemini CLI's own spellings), whatever its prefix.
func pickProbe(tools []string) (string, string) {
	for _, name := range tools {
		if strings.HasSuffix(name, probeTool) {
			return name, `{"word":"kiwi"}`
		}
	}
	return "", ""
}

// mcpClientGateway starts a gateway with the scripted model "coder" and
// the probe server as MCP server "internal".
func mcpClientGateway(t *testing.T) (*gateway, *scriptedBackend) {
	script := &scriptedBackend{pick: pickProbe}
	up := httptest.NewServer(script)
	t.Cleanup(up.Close)
	probe := probeServer(t)
	g := startGateway(t, gatewayConfig{models: scriptedProbeModels(up.URL, probe.URL, "transport: http")})
	return g, script
}

// scriptedProbeModels is the models file of the MCP client tests: the
// scripted model "coder" (every claude-* name too) at upURL, and the probe
// server at probeURL as MCP server "internal" with the settings in extra
// (YAML lines of the server's entry).
func scriptedProbeModels(upURL, probeURL string, extra ...string) string {
	server := ""
	for _, e := range extra {
		server += "\n    " + e
	}
	return fmt.Sprintf(`model_list:
  - model_name: coder
    proxy_params:
      model: openai/scripted-coder
      api_base: %s/v1
      api_key: %s
model_aliases:
  "claude-*": coder
mcp_servers:
  internal:
    url: %s%s
`, upURL, upstreamKey, probeURL, server)
}

// checkProbeRoundTrip: the model was offered the probe tool, the tool's
// answer came back to it, and the ledger holds the call as an mcp record.
func checkProbeRoundTrip(t *testing.T, g *gateway, script *scriptedBackend, agent string) {
	t.Helper()
	var offered, answered bool
	for _, c := range script.requests() {
		if name, _ := pickProbe(c.req.toolNames()); name != "" {
			offered = true
			t.Logf("%s offered the probe as %q", agent, name)
		}
		if _, content, ok := c.req.toolResult(); ok && strings.Contains(content, probeAnswer) {
			answered = true
		}
	}
	if !offered || !answered {
		t.Fatalf("%s: the model was offered the probe tool: %v; got its answer %q back: %v", agent, offered, probeAnswer, answered)
	}
	n := 0
	for _, r := range g.ledgerRecords(t) {
		if r.Endpoint == ledger.EndpointMCP && r.Provider == "internal" && r.UpstreamModel == probeTool {
			n++
			if r.Outcome != ledger.OutcomeOK || r.KeyID != "alice" {
				t.Errorf("%s: mcp record %+v", agent, r)
			}
		}
	}
	if n == 0 {
		t.Fatalf("%s: no ledger record with endpoint mcp for the probe call", agent)
	}
}

// TestMCPClaudeCode: Claude Code with the gateway as both its model
// backend and its MCP server (an http server in --mcp-config with the
// key as a bearer header, as docs/mcp.md says) calls
// mcp__gw__internal-gateway_probe and hands the answer back to the model.
func TestMCPClaudeCode(t *testing.T) {
	claude := testbin.ClaudeCode(t)
	g, script := mcpClientGateway(t)
	dir := t.TempDir()
	// docs/mcp.md's command writes the server into the project's
	// .mcp.json; the run reads exactly that file (--strict-mcp-config, so
	// no approval prompt and nothing else of the machine's).
	add := exec.Command(claude, "mcp", "add", "--transport", "http", "--scope", "project", "gw", g.base+"/mcp",
		"--header", "Authorization: Bearer "+aliceKey)
	add.Dir = dir
	add.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1"}
	if out, err := add.CombinedOutput(); err != nil {
		t.Fatalf("claude mcp add: %v %s", err, out)
	}
	cfgPath := filepath.Join(dir, ".mcp.json")
	if cfg, err := os.ReadFile(cfgPath); err != nil || !strings.Contains(string(cfg), `"type": "http"`) {
		t.Fatalf("claude mcp add wrote %s (%v)", cfg, err)
	}
	res := runClaude(t, claude, claudeRun{
		prompt: "Call the gateway probe tool with the word kiwi, then say you are done.",
		dir:    dir,
		env:    []string{"ANTHROPIC_BASE_URL=" + g.base, "ANTHROPIC_AUTH_TOKEN=" + aliceKey, "ANTHROPIC_MODEL=coder"},
		args:   []string{"--mcp-config", cfgPath, "--strict-mcp-config", "--allowedTools", "mcp__gw__internal-" + probeTool},
	})
	if !strings.Contains(res.Result, finalReply) {
		t.Errorf("result %q lacks the backend's final text", res.Result)
	}
	checkProbeRoundTrip(t, g, script, "claude code")
}

// TestMCPCodex: Codex with the gateway as its model provider and an MCP
// server ([mcp_servers.gw] url and bearer_token_env_var, as docs/mcp.md
// says) calls the probe tool and hands the answer back to the model.
func TestMCPCodex(t *testing.T) {
	codex := testbin.Codex(t)
	g, script := mcpClientGateway(t)
	cfg := codexConfig(g.base, "coder") + fmt.Sprintf(`
[mcp_servers.gw]
url = "%s/mcp"
bearer_token_env_var = "MODELGATE_API_KEY"
`, g.base)
	got := runCodexConfig(t, codex, cfg, t.TempDir(), "Call the gateway probe tool with the word kiwi, then say done.")
	if !strings.Contains(got, finalReply) {
		t.Errorf("last message %q lacks the backend's final text", got)
	}
	checkProbeRoundTrip(t, g, script, "codex")
}

// TestMCPGeminiCLI: Gemini CLI with the gateway as its Gemini API and an
// MCP server (mcpServers.gw with httpUrl and headers in settings.json, as
// docs/mcp.md says) calls the probe tool and hands the answer back.
func TestMCPGeminiCLI(t *testing.T) {
	gemini := testbin.GeminiCLI(t)
	g, script := mcpClientGateway(t)
	// The key comes from the environment, as docs/mcp.md shows.
	t.Setenv("MODELGATE_KEY", aliceKey)
	settings := strings.TrimSuffix(geminiSettings, "}") + fmt.Sprintf(`,"mcpServers":{"gw":{"httpUrl":"%s/mcp","headers":{"Authorization":"Bearer $MODELGATE_KEY"}}}}`, g.base)
	got := runGeminiCLISettings(t, gemini, settings, g.base, "coder", t.TempDir(), "Call the gateway probe tool with the word kiwi, then say done.")
	if !strings.Contains(got, finalReply) {
		t.Errorf("answer %q lacks the backend's final text", got)
	}
	checkProbeRoundTrip(t, g, script, "gemini cli")
}
