package integration

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/modelgate/modelgate/internal/testbin"
	"github.com/modelgate/modelgate/internal/testwait"
	"github.com/modelgate/modelgate/ledger"
)

// countingProbe is the probe server of mcp_clients_test.go that also
// counts the calls it ran.
func countingProbe(t *testing.T, ran *atomic.Int64) *httptest.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "probe"}, nil)
	sdk.AddTool(s, &sdk.Tool{Name: probeTool, Description: "Returns the probe answer for a word."}, func(_ context.Context, _ *sdk.CallToolRequest, in struct {
		Word string `json:"word"`
	}) (*sdk.CallToolResult, any, error) {
		ran.Add(1)
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "probe-answer-" + in.Word + "-7731"}}}, nil, nil
	})
	srv := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil))
	t.Cleanup(srv.Close)
	return srv
}

var approvalLink = regexp.MustCompile(`(Approve|Deny): (\S+)`)

// decide opens an approval link as a person would: its page, then the
// page's button (a POST). It returns the status of the last step.
func decide(link string) (int, error) {
	resp, err := http.Get(link)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return resp.StatusCode, nil
	}
	resp, err = http.Post(link, "application/x-www-form-urlencoded", nil)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

// TestMCPApprovalClaudeCode: Claude Code calls a tool whose server has
// require_approval. The call waits; the approval request reaches the team
// chat (Claude Code declares elicitation, but in print mode it cancels the
// question, so the gateway falls back to the chat) with signed links.
// Approved through the link, the tool runs once. Then the model calls it
// again with the same arguments: replaying the first approval is refused,
// and the new approval is denied; then with changed arguments: the first
// approval is refused again and nobody approves, so the wait times out.
// Claude Code hands both refusals to the model as the tool's error.
func TestMCPApprovalClaudeCode(t *testing.T) {
	claude := testbin.ClaudeCode(t)
	var ran atomic.Int64
	probe := countingProbe(t, &ran)
	var last atomic.Value
	last.Store("")
	script := &scriptedBackend{
		pick: func(tools []string) (string, string) {
			name, _ := pickProbe(tools)
			if name == "" {
				return "", ""
			}
			if strings.Contains(last.Load().(string), "-32030") {
				return name, `{"word":"fig"}`
			}
			return name, `{"word":"kiwi"}`
		},
		// Go on until the third call's refusal (the timeout).
		more: func(result string) bool {
			last.Store(result)
			return !strings.Contains(result, "-32031")
		},
	}
	up := httptest.NewServer(script)
	t.Cleanup(up.Close)
	chat := startChatSink(t)
	dir := t.TempDir()
	g := startGateway(t, gatewayConfig{
		dir:        dir,
		ledgerLine: fmt.Sprintf("ledger sqlite %s\n\t\tmcp_approvals {\n\t\t\twebhook %s\n\t\t\tpublic_url %s\n\t\t}", filepath.Join(dir, "ledger.db"), chat.URL, gatewayBaseURL),
		models: fmt.Sprintf(`model_list:
  - model_name: coder
    proxy_params:
      model: openai/scripted-coder
      api_base: %s/v1
      api_key: %s
model_aliases:
  "claude-*": coder
mcp_servers:
  internal:
    url: %s
    require_approval: [%s]
    approval_timeout: 3s
`, up.URL, upstreamKey, probe.URL, probeTool)})

	// The approver: reads the chat and clicks as the test's story says.
	type step struct {
		msg     string
		replay  int // status of the first approval's link, clicked again
		decided int // status of this message's own link
	}
	steps := make(chan step, 3)
	go func() {
		var first string
		for i := 0; i < 3; i++ {
			var msg string
			posted := func() bool {
				if p := chat.Posts(); len(p) > i {
					msg = p[i]
					return true
				}
				return false
			}
			// Claude Code starts and takes a model turn first: up to a
			// minute on a loaded machine.
			for try := 0; try < 6 && !posted(); try++ {
				testwait.Until(posted)
			}
			if msg == "" {
				close(steps)
				return
			}
			links := map[string]string{}
			for _, m := range approvalLink.FindAllStringSubmatch(msg, -1) {
				links[m[1]] = m[2]
			}
			s := step{msg: msg}
			switch i {
			case 0:
				first = links["Approve"]
				s.decided, _ = decide(first)
			case 1:
				s.replay, _ = decide(first)
				s.decided, _ = decide(links["Deny"])
			case 2:
				s.replay, _ = decide(first)
			}
			steps <- s
		}
		close(steps)
	}()

	cfg := filepath.Join(dir, "mcp.json")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`{"mcpServers":{"gw":{"type":"http","url":"%s/mcp","headers":{"Authorization":"Bearer %s"}}}}`, g.base, aliceKey)), 0o600); err != nil {
		t.Fatal(err)
	}
	res := runClaude(t, claude, claudeRun{
		prompt: "Call the gateway probe tool with the word kiwi, then say you are done.",
		dir:    dir,
		env:    []string{"ANTHROPIC_BASE_URL=" + g.base, "ANTHROPIC_AUTH_TOKEN=" + aliceKey, "ANTHROPIC_MODEL=coder"},
		args:   []string{"--mcp-config", cfg, "--strict-mcp-config", "--allowedTools", "mcp__gw__internal-" + probeTool},
	})
	if !strings.Contains(res.Result, finalReply) {
		t.Errorf("result %q lacks the backend's final text", res.Result)
	}

	var got []step
	for s := range steps {
		got = append(got, s)
	}
	if len(got) != 3 {
		t.Fatalf("approval requests in the chat: %d, want 3 (%q)", len(got), chat.Posts())
	}
	if !strings.Contains(got[0].msg, "internal/"+probeTool) || !strings.Contains(got[0].msg, `{"word":"kiwi"}`) || got[0].decided != http.StatusOK {
		t.Errorf("first request %q, approve link answered %d", got[0].msg, got[0].decided)
	}
	if got[1].replay != http.StatusConflict || got[1].decided != http.StatusOK {
		t.Errorf("second call: replayed approval answered %d (want 409), deny %d", got[1].replay, got[1].decided)
	}
	if !strings.Contains(got[2].msg, `{"word":"fig"}`) || got[2].replay != http.StatusConflict {
		t.Errorf("changed arguments: request %q, replayed approval answered %d (want 409)", got[2].msg, got[2].replay)
	}
	if n := ran.Load(); n != 1 {
		t.Errorf("the tool ran %d times, want once", n)
	}

	// What the model was shown for each refusal: Claude Code's "MCP error
	// <code>: <message>".
	var results []string
	for _, c := range script.requests() {
		if _, content, ok := c.req.toolResult(); ok {
			results = append(results, content)
		}
	}
	all := strings.Join(results, "\n")
	for _, want := range []string{probeAnswer, `MCP error -32030: tool "gateway_probe" of MCP server "internal": chat link denied the call`,
		`MCP error -32031: tool "gateway_probe" of MCP server "internal": nobody approved the call within 3s`} {
		if !strings.Contains(all, want) {
			t.Errorf("the model never saw %q; tool results:\n%s", want, all)
		}
	}
	t.Logf("tool results the model saw:\n%s", all)

	var ok, refused int
	for _, r := range g.ledgerRecords(t) {
		if r.Endpoint == ledger.EndpointMCP && r.UpstreamModel == probeTool {
			switch r.Outcome {
			case ledger.OutcomeOK:
				ok++
			case ledger.OutcomeRefused:
				refused++
			}
		}
	}
	if ok != 1 || refused != 2 {
		t.Errorf("ledger: %d ok and %d refused probe calls, want 1 and 2", ok, refused)
	}
}
