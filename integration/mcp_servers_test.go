package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/modelgate/modelgate/internal/testlane"
	"github.com/modelgate/modelgate/ledger"
)

// mcpServerBin returns the reference MCP server executable scripts/mcp-servers.sh
// installed, or skips: env is MODELGATE_TEST_MCP_EVERYTHING or
// MODELGATE_TEST_MCP_FILESYSTEM.
func mcpServerBin(t *testing.T, env string) string {
	t.Helper()
	testlane.FullOnly(t, "the reference MCP servers (npm)")
	p := os.Getenv(env)
	if p == "" {
		t.Skipf("%s is not set; run scripts/mcp-servers.sh (scripts/test.sh does) to install the reference MCP servers", env)
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed; the reference MCP servers need it")
	}
	return p
}

// mcpConnect opens a Go SDK client session on the gateway's endpoint with key.
func mcpConnect(ctx context.Context, t *testing.T, endpoint, key string) *sdk.ClientSession {
	t.Helper()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "go-sdk-test"}, nil).Connect(ctx,
		&sdk.StreamableClientTransport{Endpoint: endpoint, HTTPClient: &http.Client{Transport: mcpBearer{key}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// mcpWaitTools lists tools until every name in want is there (stdio
// servers connect in the background) and returns the listed names.
func mcpWaitTools(ctx context.Context, t *testing.T, cs *sdk.ClientSession, want ...string) map[string]bool {
	t.Helper()
	for {
		res, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]bool{}
		for _, tl := range res.Tools {
			got[tl.Name] = true
		}
		missing := ""
		for _, w := range want {
			if !got[w] {
				missing = w
			}
		}
		if missing == "" {
			return got
		}
		if ctx.Err() != nil {
			t.Fatalf("tool %s never listed; have %v", missing, got)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// mcpCallText calls tool and returns its first text content, failing on
// any error.
func mcpCallText(ctx context.Context, t *testing.T, cs *sdk.ClientSession, tool string, args map[string]any) string {
	t.Helper()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError || len(res.Content) == 0 {
		t.Fatalf("tool result %+v", res)
	}
	tc, ok := res.Content[0].(*sdk.TextContent)
	if !ok {
		t.Fatalf("content %T", res.Content[0])
	}
	return tc.Text
}

// TestMCPReferenceServers drives the real reference MCP servers (npm
// @modelcontextprotocol/server-everything over stdio and over Streamable
// HTTP, server-filesystem over stdio on a temp dir) through the built
// gateway with the official Go SDK client.
func TestMCPReferenceServers(t *testing.T) {
	everything := mcpServerBin(t, "MODELGATE_TEST_MCP_EVERYTHING")
	filesystem := mcpServerBin(t, "MODELGATE_TEST_MCP_FILESYSTEM")

	// server-everything's Streamable HTTP transport as its own process,
	// listening on the PORT its README names.
	port := freePort(t)
	httpSrv := exec.Command("node", everything, "streamableHttp")
	httpSrv.Env = append(os.Environ(), fmt.Sprintf("PORT=%d", port))
	var httpLog syncBuffer
	httpSrv.Stdout, httpSrv.Stderr = &httpLog, &httpLog
	if err := httpSrv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = httpSrv.Process.Kill(); _ = httpSrv.Wait() })
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("server-everything streamableHttp did not listen on %d: %s", port, httpLog.String())
		}
		time.Sleep(100 * time.Millisecond)
	}

	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "notes.txt"), []byte("filed through the gateway\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	models := fmt.Sprintf(`model_list:
  - model_name: echo
    proxy_params:
      model: echo/echo
mcp_servers:
  every:
    transport: stdio
    command: node
    args: [%q, "stdio"]
  everyhttp:
    url: http://127.0.0.1:%d/mcp
    transport: http
  fs:
    transport: stdio
    command: node
    args: [%q, %q]
    allowed_tools: [read_file, read_text_file, list_directory]
`, everything, port, filesystem, root)
	g := startGateway(t, gatewayConfig{models: models})

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs := mcpConnect(ctx, t, g.base+"/mcp", aliceKey)
	tools := mcpWaitTools(ctx, t, cs, "every-echo", "everyhttp-echo", "fs-read_file", "fs-list_directory")
	if tools["fs-write_file"] {
		t.Fatal("fs-write_file is listed though allowed_tools leaves it out")
	}

	if got := mcpCallText(ctx, t, cs, "every-echo", map[string]any{"message": "over stdio"}); got != "Echo: over stdio" {
		t.Fatalf("every-echo: %q", got)
	}
	if got := mcpCallText(ctx, t, cs, "everyhttp-echo", map[string]any{"message": "over http"}); got != "Echo: over http" {
		t.Fatalf("everyhttp-echo: %q", got)
	}
	if got := mcpCallText(ctx, t, cs, "everyhttp-get-sum", map[string]any{"a": 2, "b": 3}); !strings.Contains(got, "5") {
		t.Fatalf("everyhttp-get-sum: %q", got)
	}
	if got := mcpCallText(ctx, t, cs, "fs-read_file", map[string]any{"path": filepath.Join(root, "notes.txt")}); !strings.Contains(got, "filed through the gateway") {
		t.Fatalf("fs-read_file: %q", got)
	}
	if _, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "fs-write_file", Arguments: map[string]any{"path": filepath.Join(root, "x"), "content": "x"}}); err == nil || !strings.Contains(err.Error(), "fs-write_file") {
		t.Fatalf("fs-write_file outside allowed_tools: %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, "x")); err == nil {
		t.Fatal("a disallowed tool reached the filesystem server")
	}

	// One server unprefixed at /mcp/<server>.
	one := mcpConnect(ctx, t, g.base+"/mcp/every", aliceKey)
	mcpWaitTools(ctx, t, one, "echo")
	if got := mcpCallText(ctx, t, one, "echo", map[string]any{"message": "alone"}); got != "Echo: alone" {
		t.Fatalf("/mcp/every echo: %q", got)
	}

	cs.Close()
	one.Close()
	var calls []string
	for _, r := range g.ledgerRecords(t) {
		if r.Endpoint == ledger.EndpointMCP {
			calls = append(calls, r.Provider+"/"+r.UpstreamModel+":"+string(r.Outcome))
		}
	}
	// Five calls answered; the refused fs-write_file never reached a
	// server but is recorded as refused.
	if strings.Join(calls, ",") != "every/echo:ok,everyhttp/echo:ok,everyhttp/get-sum:ok,fs/read_file:ok,fs/write_file:refused,every/echo:ok" {
		t.Fatalf("mcp ledger records %v", calls)
	}
}

// TestMCPRateLimit: a key's rpm counts its MCP tool calls; the call past
// the limit is an MCP error naming the limit and reaches no server.
// countingEchoServer is the "internal" echo MCP server over Streamable
// HTTP, counting the tools/call requests that reach it.
func countingEchoServer(t *testing.T) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	srv := mcpEchoServer("internal")
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	served := new(atomic.Int64)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			if strings.Contains(string(body), `"tools/call"`) {
				served.Add(1)
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(up.Close) // after the client sessions close: they hold a GET stream open
	return up, served
}

func TestMCPRateLimit(t *testing.T) {
	const carolKey = "sk-test-carol-0123456789"
	up, served := countingEchoServer(t)
	models := fmt.Sprintf(`model_list:
  - model_name: echo
    proxy_params:
      model: echo/echo
mcp_servers:
  internal:
    url: %s/mcp
`, up.URL)
	g := startGateway(t, gatewayConfig{models: models, authExtra: "key " + carolKey + " {\n\t\t\tid carol\n\t\t\trpm 2\n\t\t}"})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs := mcpConnect(ctx, t, g.base+"/mcp", carolKey)
	mcpWaitTools(ctx, t, cs, "internal-echo")
	for i := range 2 {
		if got := mcpCallText(ctx, t, cs, "internal-echo", map[string]any{"text": "hi"}); got != "internal:hi" {
			t.Fatalf("call %d: %q", i+1, got)
		}
	}
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "internal-echo", Arguments: map[string]any{"text": "hi"}})
	msg := ""
	if err != nil {
		msg = err.Error()
	} else if res.IsError && len(res.Content) > 0 {
		msg = res.Content[0].(*sdk.TextContent).Text
	}
	if !strings.Contains(msg, "rate limit for api key carol: 2 requests") {
		t.Fatalf("third call within the minute: %+v %v", res, err)
	}
	if n := served.Load(); n != 2 {
		t.Fatalf("the server saw %d tool calls, want 2", n)
	}
	// The MCP report counts the calls per server, tool and key.
	since := time.Now().UTC().Add(-time.Hour).Format(time.RFC3339)
	code, _, body := g.do(t, "GET", "/v1/organizations/usage_report/mcp?starting_at="+since+"&bucket_width=1h&group_by[]=server&group_by[]=tool&group_by[]=api_key_id", adminKey, "")
	var calls, refused, bytes int64
	for try := 0; ; try++ {
		var rep ledger.MCPReportPage
		if err := json.Unmarshal(body, &rep); code != http.StatusOK || err != nil {
			t.Fatalf("mcp report: %d %s", code, body)
		}
		calls, refused, bytes = 0, 0, 0
		for _, b := range rep.Data {
			for _, r := range b.Results {
				if *r.Server != "internal" || *r.Tool != "echo" || *r.APIKeyID != "carol" {
					t.Fatalf("mcp report row %s", body)
				}
				calls, refused, bytes = calls+r.Calls, refused+r.Refused, bytes+r.Bytes
			}
		}
		if calls == 3 || try == 50 {
			break
		}
		// The ledger writes in the background.
		time.Sleep(100 * time.Millisecond)
		code, _, body = g.do(t, "GET", "/v1/organizations/usage_report/mcp?starting_at="+since+"&bucket_width=1h&group_by[]=server&group_by[]=tool&group_by[]=api_key_id", adminKey, "")
	}
	if calls != 3 || refused != 1 {
		t.Fatalf("mcp report: %d calls, %d refused: %s", calls, refused, body)
	}
	// Each call's arguments (and result) count: {"text":…} is at least 10 bytes.
	if bytes < 30 {
		t.Fatalf("mcp report: %d bytes for 3 calls with arguments: %s", bytes, body)
	}
	if code, _, body := g.do(t, "GET", "/v1/organizations/usage_report/mcp?starting_at="+since+"&group_by[]=model", adminKey, ""); code != http.StatusBadRequest || !strings.Contains(string(body), "group_by") {
		t.Fatalf("group_by model: %d %s", code, body)
	}

	cs.Close()
	var outcomes []string
	for _, r := range g.ledgerRecords(t) {
		if r.Endpoint == ledger.EndpointMCP {
			outcomes = append(outcomes, string(r.Outcome))
		}
	}
	if len(outcomes) != 3 || outcomes[2] != string(ledger.OutcomeRefused) {
		t.Fatalf("mcp ledger outcomes %v", outcomes)
	}

}

// TestMCPResourcesPrompts reads server-everything's resources, templates,
// prompts and completions through the built gateway with the Go SDK
// client, on /mcp (names and URIs prefixed "every-") and on /mcp/every,
// and gets its long-running tool's progress under the client's token.
func TestMCPResourcesPrompts(t *testing.T) {
	everything := mcpServerBin(t, "MODELGATE_TEST_MCP_EVERYTHING")
	models := fmt.Sprintf(`model_list:
  - model_name: echo
    proxy_params:
      model: echo/echo
mcp_servers:
  every:
    transport: stdio
    command: node
    args: [%q, "stdio"]
`, everything)
	g := startGateway(t, gatewayConfig{models: models})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	var progress atomic.Int32
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "go-sdk-test"}, &sdk.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
			if req.Params.ProgressToken == "p-1" {
				progress.Add(1)
			}
		},
	}).Connect(ctx, &sdk.StreamableClientTransport{Endpoint: g.base + "/mcp", HTTPClient: &http.Client{Transport: mcpBearer{aliceKey}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	mcpWaitTools(ctx, t, cs, "every-echo")

	rl, err := cs.ListResources(ctx, nil)
	if err != nil || len(rl.Resources) == 0 {
		t.Fatalf("resources/list %+v %v", rl, err)
	}
	first := rl.Resources[0].URI
	if !strings.HasPrefix(first, "every-demo://") {
		t.Fatalf("aggregate resource URI %q lacks the every- prefix", first)
	}
	rr, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: first})
	if err != nil || len(rr.Contents) == 0 || rr.Contents[0].URI != first {
		t.Fatalf("resources/read %s: %+v %v", first, rr, err)
	}
	tl, err := cs.ListResourceTemplates(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var tmpl string
	for _, rt := range tl.ResourceTemplates {
		if rt.URITemplate == "every-demo://resource/dynamic/text/{resourceId}" {
			tmpl = rt.URITemplate
		}
	}
	if tmpl == "" {
		t.Fatalf("templates %+v", tl.ResourceTemplates)
	}
	rr, err = cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "every-demo://resource/dynamic/text/3"})
	if err != nil || !strings.Contains(rr.Contents[0].Text, "Resource 3") {
		t.Fatalf("templated read %+v %v", rr, err)
	}
	cr, err := cs.Complete(ctx, &sdk.CompleteParams{Ref: &sdk.CompleteReference{Type: "ref/resource", URI: tmpl}, Argument: sdk.CompleteParamsArgument{Name: "resourceId", Value: "4"}})
	if err != nil || strings.Join(cr.Completion.Values, ",") != "4" {
		t.Fatalf("resource completion %+v %v", cr, err)
	}

	pl, err := cs.ListPrompts(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range pl.Prompts {
		names = append(names, p.Name)
	}
	if !strings.Contains(strings.Join(names, ","), "every-completable-prompt") {
		t.Fatalf("prompts %v", names)
	}
	cr, err = cs.Complete(ctx, &sdk.CompleteParams{Ref: &sdk.CompleteReference{Type: "ref/prompt", Name: "every-completable-prompt"}, Argument: sdk.CompleteParamsArgument{Name: "department", Value: "S"}})
	if err != nil || strings.Join(cr.Completion.Values, ",") != "Sales,Support" {
		t.Fatalf("prompt completion %+v %v", cr, err)
	}
	gp, err := cs.GetPrompt(ctx, &sdk.GetPromptParams{Name: "every-completable-prompt", Arguments: map[string]string{"department": "Sales", "name": "Eve"}})
	if err != nil || !strings.Contains(gp.Messages[0].Content.(*sdk.TextContent).Text, "promote Eve to the head of the Sales team") {
		t.Fatalf("prompts/get %+v %v", gp, err)
	}

	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "every-trigger-long-running-operation", Arguments: map[string]any{"duration": 1, "steps": 3}, Meta: sdk.Meta{"progressToken": "p-1"}})
	if err != nil || res.IsError {
		t.Fatalf("long-running operation %+v %v", res, err)
	}
	for i := 0; progress.Load() < 3 && i < 50; i++ {
		time.Sleep(20 * time.Millisecond)
	}
	if n := progress.Load(); n != 3 {
		t.Fatalf("%d progress notifications under the client's token, want 3", n)
	}

	one := mcpConnect(ctx, t, g.base+"/mcp/every", aliceKey)
	mcpWaitTools(ctx, t, one, "echo")
	gp, err = one.GetPrompt(ctx, &sdk.GetPromptParams{Name: "completable-prompt", Arguments: map[string]string{"department": "Support", "name": "Kim"}})
	if err != nil || !strings.Contains(gp.Messages[0].Content.(*sdk.TextContent).Text, "Kim") {
		t.Fatalf("/mcp/every prompts/get %+v %v", gp, err)
	}
	rr, err = one.ReadResource(ctx, &sdk.ReadResourceParams{URI: "demo://resource/dynamic/text/2"})
	if err != nil || !strings.Contains(rr.Contents[0].Text, "Resource 2") {
		t.Fatalf("/mcp/every resources/read %+v %v", rr, err)
	}
}

// TestMCPCaddyfileWorkspaceAllowList: a Caddyfile workspace's `mcp` list
// narrows its keys' tools: a key of a workspace allowed only another
// server sees none of this one and its call reaches no server.
func TestMCPCaddyfileWorkspaceAllowList(t *testing.T) {
	const daveKey, erinKey = "sk-test-dave-0123456789", "sk-test-erin-0123456789"
	up, served := countingEchoServer(t)
	models := fmt.Sprintf("model_list:\n  - model_name: echo\n    proxy_params:\n      model: echo/echo\nmcp_servers:\n  internal:\n    url: %s/mcp\n", up.URL)
	g := startGateway(t, gatewayConfig{models: models, authExtra: "key " + daveKey + " {\n\t\t\tid dave\n\t\t\tworkspace locked\n\t\t}\n\t\tkey " + erinKey +
		" {\n\t\t\tid erin\n\t\t\tworkspace open\n\t\t}\n\t\tworkspace locked {\n\t\t\tmcp elsewhere\n\t\t}\n\t\tworkspace open {\n\t\t\tmcp internal\n\t\t}"})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	open := mcpConnect(ctx, t, g.base+"/mcp", erinKey)
	mcpWaitTools(ctx, t, open, "internal-echo")
	locked := mcpConnect(ctx, t, g.base+"/mcp", daveKey)
	res, err := locked.ListTools(ctx, nil)
	if err != nil || len(res.Tools) != 0 {
		t.Fatalf("tools a key of workspace locked sees: %+v %v", res, err)
	}
	call, err := locked.CallTool(ctx, &sdk.CallToolParams{Name: "internal-echo", Arguments: map[string]any{"text": "hi"}})
	if err == nil && !call.IsError {
		t.Fatalf("a call outside the workspace's list: %+v", call)
	}
	if n := served.Load(); n != 0 {
		t.Fatalf("the server saw %d calls from a workspace not allowed it", n)
	}
}
