package integration

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/internal/testbin"
	"github.com/modelgate/modelgate/ledger"
)

// TestClaudeCodeCloudModesThroughGateway runs the real Claude Code in its
// Bedrock mode and in its Vertex mode with the gateway as the cloud
// (ANTHROPIC_BEDROCK_BASE_URL / ANTHROPIC_VERTEX_BASE_URL, the clouds' own
// auth skipped, the gateway key in ANTHROPIC_CUSTOM_HEADERS), to a
// chat-only upstream: its own Bedrock and Vertex model ids are mapped to
// the alias by model_aliases, and a Bash tool loop must complete.
func TestClaudeCodeCloudModesThroughGateway(t *testing.T) {
	claude := testbin.ClaudeCode(t)
	script := &scriptedBackend{}
	up := httptest.NewServer(script)
	t.Cleanup(up.Close)
	g := startGateway(t, gatewayConfig{models: fmt.Sprintf(`model_list:
  - model_name: coder
    proxy_params:
      model: openai/scripted-coder
      api_base: %s/v1
      api_key: %s
model_aliases:
  "claude-*": coder
`, up.URL, upstreamKey)})

	modes := []struct {
		name     string
		env      []string
		endpoint ledger.Endpoint
	}{
		{"bedrock", []string{
			"CLAUDE_CODE_USE_BEDROCK=1",
			"ANTHROPIC_BEDROCK_BASE_URL=" + g.base,
			"CLAUDE_CODE_SKIP_BEDROCK_AUTH=1",
			"AWS_REGION=us-east-1",
			"ANTHROPIC_CUSTOM_HEADERS=x-api-key: " + aliceKey,
		}, ledger.EndpointBedrockInvoke},
		{"vertex", []string{
			"CLAUDE_CODE_USE_VERTEX=1",
			"ANTHROPIC_VERTEX_BASE_URL=" + g.base + "/v1",
			"CLAUDE_CODE_SKIP_VERTEX_AUTH=1",
			"ANTHROPIC_VERTEX_PROJECT_ID=gateway-project",
			"CLOUD_ML_REGION=us-east5",
			"ANTHROPIC_CUSTOM_HEADERS=Authorization: Bearer " + aliceKey,
		}, ledger.EndpointVertexRawPredict},
	}
	sessions := map[string]string{}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			before := len(script.requests())
			dir := t.TempDir()
			res := runClaude(t, claude, claudeRun{
				prompt: "Create the marker file with the Bash tool, then say you are done.",
				dir:    dir,
				env:    m.env,
				args:   []string{"--allowedTools", "Bash"},
			})
			marker, err := os.ReadFile(filepath.Join(dir, "marker.txt"))
			if err != nil {
				t.Fatalf("the Bash tool did not run: %v", err)
			}
			if strings.TrimSpace(string(marker)) != toolMarker {
				t.Errorf("marker.txt = %q", marker)
			}
			if !strings.Contains(res.Result, finalReply) || res.NumTurns < 2 {
				t.Errorf("result %q after %d turns, want %q after at least 2", res.Result, res.NumTurns, finalReply)
			}
			var answered bool
			for _, c := range script.requests()[before:] {
				if c.req.Model != "scripted-coder" || c.header.Get("Authorization") != "Bearer "+upstreamKey {
					t.Errorf("upstream request: model %q, Authorization %q", c.req.Model, c.header.Get("Authorization"))
				}
				if _, _, ok := c.req.toolResult(); ok {
					answered = true
				}
			}
			if !answered {
				t.Errorf("no upstream request carried the Bash result")
			}
			sessions[m.name] = res.SessionID
		})
	}
	if t.Failed() {
		return
	}
	for _, m := range modes {
		n := 0
		for _, r := range g.ledgerRecords(t) {
			if r.Endpoint == m.endpoint && r.Alias == "coder" && r.KeyID == "alice" && r.Outcome == ledger.OutcomeOK {
				n++
				if r.SessionID != "" && r.SessionID != sessions[m.name] {
					t.Errorf("%s: record under session %q, Claude Code's was %q", m.name, r.SessionID, sessions[m.name])
				}
			}
			if r.Endpoint == m.endpoint && r.Outcome != ledger.OutcomeOK {
				t.Errorf("%s: a %s record that is not ok: %+v", m.name, m.endpoint, r)
			}
		}
		t.Logf("%s: %d %s records", m.name, n, m.endpoint)
		if n < 2 {
			t.Errorf("%s: %d ok %s records for alice on coder, want at least 2 (tool call, answer)", m.name, n, m.endpoint)
		}
	}
}

// TestClaudeCodeGatewayModelDiscovery: with
// CLAUDE_CODE_ENABLE_GATEWAY_MODEL_DISCOVERY=1 Claude Code lists the
// gateway's models (GET /v1/models?limit=1000 in Anthropic's shape) and
// keeps the aliases starting "claude" or "anthropic"; a discovered alias
// then serves a turn.
func TestClaudeCodeGatewayModelDiscovery(t *testing.T) {
	claude := testbin.ClaudeCode(t)
	g := startGateway(t, gatewayConfig{models: `model_list:
  - model_name: claude-team-echo
    proxy_params:
      model: echo/echo
  - model_name: anthropic-team-echo
    proxy_params:
      model: echo/echo
  - model_name: local-echo
    proxy_params:
      model: echo/echo
`})
	home := t.TempDir()
	env := []string{
		"HOME=" + home,
		"ANTHROPIC_BASE_URL=" + g.base,
		"ANTHROPIC_AUTH_TOKEN=" + aliceKey,
		"ANTHROPIC_MODEL=local-echo",
		"CLAUDE_CODE_ENABLE_GATEWAY_MODEL_DISCOVERY=1",
		// Discovery is a request Claude Code counts as nonessential.
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=",
	}
	runClaude(t, claude, claudeRun{prompt: "first", dir: t.TempDir(), env: env})
	raw, err := os.ReadFile(filepath.Join(home, ".claude", "cache", "gateway-models.json"))
	if err != nil {
		t.Fatalf("Claude Code cached no gateway models: %v", err)
	}
	var cache struct {
		BaseURL string `json:"baseUrl"`
		Models  []struct {
			ID string `json:"id"`
		} `json:"models"`
	}
	if err := json.Unmarshal(raw, &cache); err != nil {
		t.Fatalf("cache %s: %v", raw, err)
	}
	var ids []string
	for _, m := range cache.Models {
		ids = append(ids, m.ID)
	}
	t.Logf("discovered: %s", raw)
	if cache.BaseURL != g.base || !slices.Equal(ids, []string{"claude-team-echo", "anthropic-team-echo"}) {
		t.Fatalf("discovered %v at %q, want claude-team-echo and anthropic-team-echo at %q", ids, cache.BaseURL, g.base)
	}
	// A discovered alias, chosen as a user picks it from /model.
	prompt := "discovered alias turn 5521"
	res := runClaude(t, claude, claudeRun{prompt: prompt, dir: t.TempDir(), env: env, args: []string{"--model", ids[0]}})
	if !strings.Contains(res.Result, prompt) {
		t.Errorf("result %q does not echo the prompt", res.Result)
	}
	used := false
	for _, r := range g.ledgerRecords(t) {
		if r.Alias == "claude-team-echo" && r.Endpoint == ledger.EndpointMessages && r.Outcome == ledger.OutcomeOK {
			used = true
		}
	}
	if !used {
		t.Errorf("no ok messages record on the discovered alias claude-team-echo")
	}
}
