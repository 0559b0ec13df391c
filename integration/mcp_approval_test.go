package integration

import (
	"context"
	"encoding/json"
	"errors"
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
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
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

// decide opens an approval link as an approver would: its page, then the
// page's button (a POST, with the gateway's admin key: the link alone
// decides nothing). It returns the status of the last step.
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
	req, _ := http.NewRequest(http.MethodPost, link, nil)
	req.Header.Set("Authorization", "Bearer "+adminKey)
	resp, err = http.DefaultClient.Do(req)
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
		models:     scriptedProbeModels(up.URL, probe.URL, "require_approval: ["+probeTool+"]", "approval_timeout: 3s")})

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

	cfg := claudeMCPConfig(t, dir, g.base, aliceKey)
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
	for _, want := range []string{probeAnswer, `MCP error -32030: tool "gateway_probe" of MCP server "internal": key `,
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

// TestMCPApprovalCLI: a key's own mcp_approval makes a tool its server
// does not guard wait for approval (another key calls it at once); the
// pending call is listed and approved with `caddy modelgate approvals`,
// a second approve of it is refused, a denial is an MCP error; each
// decision is in the audit log and the MCP report counts them.
func TestMCPApprovalCLI(t *testing.T) {
	var ran atomic.Int64
	probe := countingProbe(t, &ran)
	g := startGateway(t, gatewayConfig{
		authExtra: "key {env.CAROL_KEY} {\n\t\t\tid carol\n\t\t\tmcp_approval internal/" + probeTool + "\n\t\t}",
		env:       []string{"CAROL_KEY=sk-test-carol-0123456789"},
		models: fmt.Sprintf(`model_list:
  - model_name: echo
    proxy_params: {model: echo/echo}
mcp_servers:
  internal:
    url: %s
`, probe.URL)})
	cctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	connectKey := func(key string) *sdk.ClientSession { return mcpConnect(cctx, t, g.base+"/mcp", key) }
	call := func(cs *sdk.ClientSession, word string) chan error {
		ch := make(chan error, 1)
		go func() {
			res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "internal-" + probeTool, Arguments: map[string]any{"word": word}})
			if err == nil && res.IsError {
				err = fmt.Errorf("tool error %+v", res.Content)
			}
			ch <- err
		}()
		return ch
	}
	// Alice's key has no mcp_approval: her call runs at once.
	if err := <-call(connectKey(aliceKey), "kiwi"); err != nil || ran.Load() != 1 {
		t.Fatalf("alice's call: %v, ran %d", err, ran.Load())
	}
	carol := connectKey("sk-test-carol-0123456789")
	env := []string{"MODELGATE_ADMIN_KEY=" + adminKey}
	cli := func(args ...string) (string, error) {
		out, stderr, err := caddyCmd(t, env, append([]string{"modelgate", "--gateway", g.base}, args...)...)
		if err != nil {
			return out + stderr, err
		}
		return out, nil
	}
	pending := func() []admincliApproval {
		var list []admincliApproval
		testwait.Until(func() bool {
			out, err := cli("approvals", "list", "--json")
			if err != nil {
				t.Fatalf("approvals list: %v %s", err, out)
			}
			_ = json.Unmarshal([]byte(out), &list)
			return len(list) > 0
		})
		return list
	}

	first := call(carol, "kiwi")
	list := pending()
	if len(list) != 1 || list[0].APIKeyID != "carol" || list[0].Tool != probeTool || list[0].Arguments != `{"word":"kiwi"}` || list[0].State != "pending" {
		t.Fatalf("pending %+v", list)
	}
	if out, err := cli("approvals", "approve", list[0].ID); err != nil || !strings.Contains(out, "approved") {
		t.Fatalf("approve: %v %s", err, out)
	}
	if err := <-first; err != nil || ran.Load() != 2 {
		t.Fatalf("approved call: %v, ran %d", err, ran.Load())
	}
	if out, err := cli("approvals", "approve", list[0].ID); err == nil || !strings.Contains(out, "409") || !strings.Contains(out, "consumed") {
		t.Fatalf("approving twice: %v %s", err, out)
	}

	second := call(carol, "fig")
	list = pending()
	if out, err := cli("approvals", "deny", list[0].ID); err != nil || !strings.Contains(out, "denied") {
		t.Fatalf("deny: %v %s", err, out)
	}
	var rpcErr *jsonrpc.Error
	if err := <-second; !errors.As(err, &rpcErr) || rpcErr.Code != -32030 || !strings.Contains(err.Error(), `tool "`+probeTool+`"`) || ran.Load() != 2 {
		t.Fatalf("denied call: %v, ran %d", err, ran.Load())
	}

	code, _, body := g.do(t, "GET", "/v1/organizations/audit_log?limit=100", adminKey, "")
	if code != http.StatusOK {
		t.Fatalf("audit log: %d %s", code, body)
	}
	for _, action := range []string{"mcp.approval.request", "mcp.approval.approved", "mcp.approval.consumed", "mcp.approval.denied"} {
		if !strings.Contains(string(body), `"`+action+`"`) {
			t.Errorf("the audit log lacks %s: %s", action, body)
		}
	}
	start := time.Now().UTC().Truncate(24 * time.Hour).Format(time.RFC3339)
	var report ledger.MCPReportPage
	testwait.Until(func() bool {
		code, _, body = g.do(t, "GET", "/v1/organizations/usage_report/mcp?starting_at="+start+"&group_by[]=api_key_id", adminKey, "")
		report = ledger.MCPReportPage{}
		_ = json.Unmarshal(body, &report)
		for _, b := range report.Data {
			for _, r := range b.Results {
				if r.APIKeyID != nil && *r.APIKeyID == "carol" && r.Approved == 1 && r.ApprovalDenied == 1 {
					return true
				}
			}
		}
		return false
	})
	if !strings.Contains(string(body), `"approved":1`) || !strings.Contains(string(body), `"approval_denied":1`) {
		t.Fatalf("MCP report: %d %s", code, body)
	}
}

// admincliApproval is what `approvals list --json` prints.
type admincliApproval struct {
	ID        string `json:"id"`
	APIKeyID  string `json:"api_key_id"`
	Tool      string `json:"tool"`
	Arguments string `json:"arguments"`
	State     string `json:"state"`
}

// TestDashboardApprovals: the dashboard's Approvals view lists a waiting
// MCP call with its arguments, and its Approve button, in a real browser,
// runs the call.
func TestDashboardApprovals(t *testing.T) {
	ctx, problems := browser(t)
	up := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return mcpEchoServer("internal") }, nil))
	t.Cleanup(up.Close)
	g := startGateway(t, gatewayConfig{models: fmt.Sprintf("model_list:\n  - model_name: echo\n    proxy_params:\n      model: echo/echo\nmcp_servers:\n  internal:\n    url: %s/mcp\n    require_approval: true\n", up.URL)})
	cctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs := mcpConnect(cctx, t, g.base+"/mcp", aliceKey)
	mcpWaitTools(cctx, t, cs, "internal-echo")
	done := make(chan string, 1)
	go func() {
		res, err := cs.CallTool(cctx, &sdk.CallToolParams{Name: "internal-echo", Arguments: map[string]any{"text": "deploy prod"}})
		if err != nil {
			done <- err.Error()
			return
		}
		done <- res.Content[0].(*sdk.TextContent).Text
	}()
	// The call is pending before the page opens: the view lists it at once.
	if !testwait.Until(func() bool {
		_, _, body := g.do(t, "GET", "/v1/organizations/mcp_approvals?state=pending", adminKey, "")
		return strings.Contains(string(body), "deploy prod")
	}) {
		t.Fatal("the call never became a pending approval")
	}
	var text string
	if err := chromedp.Run(ctx, chromedp.Navigate(g.base+"/ui/#approvals"), chromedp.WaitVisible("#key", chromedp.ByID),
		chromedp.SendKeys("#key", adminKey+kb.Enter, chromedp.ByID), chromedp.WaitVisible("#approvals-pending button.approve", chromedp.ByQuery),
		chromedp.Text("#approvals-pending", &text, chromedp.ByID), chromedp.Click("#approvals-pending button.approve", chromedp.ByQuery)); err != nil {
		t.Fatalf("%v: problems %v", err, problems())
	}
	if !strings.Contains(text, "internal/echo") || !strings.Contains(text, `{"text":"deploy prod"}`) || !strings.Contains(text, "alice") {
		t.Fatalf("approvals view: %q", text)
	}
	select {
	case got := <-done:
		if got != "internal:deploy prod" {
			t.Fatalf("call after the dashboard's approval: %q", got)
		}
	case <-time.After(testwait.Bound):
		t.Fatal("the call still waits after Approve was clicked")
	}
	if p := problems(); len(p) > 0 {
		t.Errorf("browser problems: %v", p)
	}
}

// TestMCPApprovalTwoInstances: over a PostgreSQL ledger, a workspace made
// on instance a with mcp_tool_search and mcp_approval gives its key, on
// instance b, the small tool list; a call through mcp_tool_call waits on
// b, and an approval made through a's admin API reaches it within about
// a second.
func TestMCPApprovalTwoInstances(t *testing.T) {
	a, b := mcpTwoInstances(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, bad := range []string{`"internal"`, `["bad entry"]`} {
		if status, _, out := a.do(t, "POST", "/v1/organizations/workspaces", adminKey, `{"name":"x","mcp_approval":`+bad+`}`); status != 400 || !strings.Contains(string(out), "mcp_approval") {
			t.Errorf("mcp_approval %s: %d %s", bad, status, out)
		}
	}
	status, _, out := a.do(t, "POST", "/v1/organizations/workspaces", adminKey, `{"name":"guarded","mcp_approval":["internal/`+probeTool+`"],"mcp_tool_search":true}`)
	var ws struct {
		ID string `json:"id"`
	}
	if status != 200 || json.Unmarshal(out, &ws) != nil || !strings.Contains(string(out), `"mcp_tool_search":true`) {
		t.Fatalf("create workspace: %d %s", status, out)
	}
	k := createKey(t, a, `{"name":"agent","workspace_id":"`+ws.ID+`"}`)
	cs := mcpSessionWith(ctx, t, b, k.Value, "mcp_tool_call", "mcp_tool_search")
	found := mcpCallText(ctx, t, cs, "mcp_tool_search", map[string]any{"query": "probe"})
	if !strings.Contains(found, `"name":"internal-`+probeTool+`"`) {
		t.Fatalf("search: %s", found)
	}
	done := make(chan string, 1)
	go func() {
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "mcp_tool_call", Arguments: map[string]any{"name": "internal-" + probeTool, "arguments": map[string]any{"word": "kiwi"}}})
		if err != nil || len(res.Content) == 0 {
			done <- fmt.Sprint(res, err)
			return
		}
		done <- res.Content[0].(*sdk.TextContent).Text
	}()
	var pending []admincliApproval
	testwait.Until(func() bool {
		_, _, body := a.do(t, "GET", "/v1/organizations/mcp_approvals?state=pending", adminKey, "")
		var list struct{ Data []admincliApproval }
		_ = json.Unmarshal(body, &list)
		pending = list.Data
		return len(pending) == 1
	})
	if len(pending) != 1 || pending[0].Arguments != `{"word":"kiwi"}` {
		t.Fatalf("pending on a: %+v", pending)
	}
	start := time.Now()
	if status, _, out := a.do(t, "POST", "/v1/organizations/mcp_approvals/"+pending[0].ID+"/approve", adminKey, ""); status != 200 {
		t.Fatalf("approve on a: %d %s", status, out)
	}
	select {
	case got := <-done:
		took := time.Since(start)
		if got != probeAnswer || took > 1500*time.Millisecond {
			t.Fatalf("the call on b: %q after %s", got, took)
		}
		t.Logf("b ran the call %s after a's approval", took)
	case <-ctx.Done():
		t.Fatal("the call on b still waits")
	}
}

// claudeMCPConfig writes Claude Code's --mcp-config file with the gateway
// as MCP server "gw" under key, and returns its path.
func claudeMCPConfig(t *testing.T, dir, base, key string) string {
	t.Helper()
	cfg := filepath.Join(dir, "mcp.json")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`{"mcpServers":{"gw":{"type":"http","url":"%s/mcp","headers":{"Authorization":"Bearer %s"}}}}`, base, key)), 0o600); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestMCPApprovalClaudeCodeElicitation: Claude Code declares elicitation,
// so the gateway asks it first; its Elicitation hook (the way Claude Code
// answers one without a person at the terminal) accepts, and the call
// runs with no chat message. The approval is recorded as the caller's,
// via elicitation: why approval_from: team exists.
func TestMCPApprovalClaudeCodeElicitation(t *testing.T) {
	claude := testbin.ClaudeCode(t)
	var ran atomic.Int64
	probe := countingProbe(t, &ran)
	script := &scriptedBackend{pick: pickProbe}
	up := httptest.NewServer(script)
	t.Cleanup(up.Close)
	chat := startChatSink(t)
	dir := t.TempDir()
	g := startGateway(t, gatewayConfig{dir: dir,
		ledgerLine: fmt.Sprintf("ledger sqlite %s\n\t\tmcp_approvals {\n\t\t\twebhook %s\n\t\t}", filepath.Join(dir, "ledger.db"), chat.URL),
		models:     scriptedProbeModels(up.URL, probe.URL, "require_approval: true")})
	project := t.TempDir()
	hook := `{"hooks":{"Elicitation":[{"matcher":"gw","hooks":[{"type":"command","command":"echo '{\"hookSpecificOutput\":{\"hookEventName\":\"Elicitation\",\"action\":\"accept\",\"content\":{}}}'"}]}]}}`
	if err := os.MkdirAll(filepath.Join(project, ".claude"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(project, ".claude", "settings.local.json"), []byte(hook), 0o600); err != nil {
		t.Fatal(err)
	}
	res := runClaude(t, claude, claudeRun{
		prompt: "Call the gateway probe tool with the word kiwi, then say you are done.",
		dir:    project,
		env:    []string{"ANTHROPIC_BASE_URL=" + g.base, "ANTHROPIC_AUTH_TOKEN=" + aliceKey, "ANTHROPIC_MODEL=coder"},
		args:   []string{"--mcp-config", claudeMCPConfig(t, dir, g.base, aliceKey), "--strict-mcp-config", "--allowedTools", "mcp__gw__internal-" + probeTool},
	})
	if !strings.Contains(res.Result, finalReply) {
		t.Errorf("result %q lacks the backend's final text", res.Result)
	}
	checkProbeRoundTrip(t, g, script, "claude code")
	if n := ran.Load(); n != 1 {
		t.Errorf("the tool ran %d times", n)
	}
	if p := chat.Posts(); len(p) != 0 {
		t.Errorf("the chat was asked too: %q", p)
	}
	for _, r := range g.ledgerRecords(t) {
		if r.Endpoint == ledger.EndpointMCP && r.UpstreamModel == probeTool && !strings.HasPrefix(r.RequestID, "apr_") {
			t.Errorf("the probe call's record names no approval: %+v", r)
		}
	}
}
