package integration

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/modelgate/modelgate/ledger"
)

type mcpEchoIn struct {
	Text string `json:"text"`
}

func mcpEchoServer(name string) *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: name}, nil)
	sdk.AddTool(s, &sdk.Tool{Name: "echo", Description: "echoes its text"}, func(ctx context.Context, req *sdk.CallToolRequest, in mcpEchoIn) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: name + ":" + in.Text}}}, nil, nil
	})
	return s
}

// TestMCPStdioHelper is not a test: run with MODELGATE_MCP_STDIO_HELPER=1
// it is the stdio MCP server process the gateway starts.
func TestMCPStdioHelper(t *testing.T) {
	if os.Getenv("MODELGATE_MCP_STDIO_HELPER") != "1" {
		t.Skip("the stdio MCP server of TestMCPGateway; runs only as its child process")
	}
	fmt.Fprintln(os.Stderr, "stdio helper starting")
	_ = mcpEchoServer("local").Run(context.Background(), &sdk.StdioTransport{})
	os.Exit(0)
}

type mcpBearer struct{ key string }

func (b mcpBearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if b.key != "" {
		r.Header.Set("Authorization", "Bearer "+b.key)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// TestMCPGateway drives the built binary with the official Go SDK client:
// an in-test Go SDK server behind an upstream bearer token (Streamable
// HTTP), a stdio server the gateway starts itself, and a server that is
// down; calls are recorded in the ledger.
func TestMCPGateway(t *testing.T) {
	const upstreamToken = "upstream-secret-token-7f3a"
	srv := mcpEchoServer("internal")
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+upstreamToken {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	defer up.Close()
	models := fmt.Sprintf(`model_list:
  - model_name: echo
    proxy_params:
      model: echo/echo
mcp_servers:
  internal:
    url: %s/mcp
    headers:
      Authorization: os.environ/INTERNAL_MCP_AUTH
  local:
    transport: stdio
    command: %s
    args: ["-test.run=^TestMCPStdioHelper$"]
    env:
      MODELGATE_MCP_STDIO_HELPER: "1"
  dead:
    url: http://127.0.0.1:1/mcp
`, up.URL, os.Args[0])
	g := startGateway(t, gatewayConfig{models: models, globalExtra: "debug", env: []string{"INTERNAL_MCP_AUTH=Bearer " + upstreamToken}})

	// No key: 401.
	if code, _, _ := g.do(t, "POST", "/mcp", "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`); code != http.StatusUnauthorized {
		t.Fatalf("no key: status %d, want 401", code)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "go-sdk-test"}, nil).Connect(ctx, &sdk.StreamableClientTransport{Endpoint: g.base + "/mcp", HTTPClient: &http.Client{Transport: mcpBearer{aliceKey}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	var names []string
	for ctx.Err() == nil {
		names = names[:0]
		res, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, tl := range res.Tools {
			names = append(names, tl.Name)
		}
		if len(names) == 2 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if strings.Join(names, ",") != "internal-echo,local-echo" {
		t.Fatalf("tools %v; log:\n%s", names, g.stderr.String())
	}
	// The keyless readiness probe names the server that is not connected,
	// and stays ready.
	if code, _, body := g.do(t, "GET", "/health/readiness", "", ""); code != http.StatusOK || !strings.Contains(string(body), `"mcp_not_connected":["dead"]`) {
		t.Fatalf("readiness: %d %s", code, body)
	}
	for _, tc := range []struct{ tool, want string }{{"internal-echo", "internal:hi"}, {"local-echo", "local:hi"}} {
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: tc.tool, Arguments: map[string]any{"text": "hi"}})
		if err != nil || res.IsError || res.Content[0].(*sdk.TextContent).Text != tc.want {
			t.Fatalf("%s: %+v %v", tc.tool, res, err)
		}
	}
	if _, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "dead-anything"}); err == nil || !strings.Contains(err.Error(), "dead-anything") {
		t.Fatalf("unknown tool: %v", err)
	}

	// One server unprefixed at /mcp/<server>.
	one, err := sdk.NewClient(&sdk.Implementation{Name: "go-sdk-test"}, nil).Connect(ctx, &sdk.StreamableClientTransport{Endpoint: g.base + "/mcp/local", HTTPClient: &http.Client{Transport: mcpBearer{bobKey}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer one.Close()
	res, err := one.CallTool(ctx, &sdk.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "x"}})
	if err != nil || res.Content[0].(*sdk.TextContent).Text != "local:x" {
		t.Fatalf("/mcp/local: %+v %v", res, err)
	}

	// Malformed JSON-RPC: a JSON-RPC error, never a 5xx.
	code, _, body := g.do(t, "POST", "/mcp", aliceKey, `{"jsonrpc":"2.0","id":1,`, "Accept", "application/json, text/event-stream", "Content-Type", "application/json")
	if code >= 500 || code == 200 {
		t.Fatalf("malformed: %d %s", code, body)
	}

	cs.Close()
	one.Close()
	log := g.stderr.String()
	if strings.Contains(log, upstreamToken) {
		t.Fatal("the upstream token reached the log")
	}
	if !strings.Contains(log, "stdio helper starting") {
		t.Fatalf("stdio server's stderr is not in the debug log:\n%s", log)
	}
	var mcpRecs []ledger.Record
	failed := 0
	for _, r := range g.ledgerRecords(t) {
		if r.Endpoint == ledger.EndpointMCP && r.Provider == "dead" {
			// The call to the dead server, failed at the door: the server
			// never listed the tool, so its name is not in the ledger.
			failed++
			if r.UpstreamModel != "(unknown)" || r.Outcome != ledger.OutcomeError || r.Status != 502 {
				t.Fatalf("failed record %+v", r)
			}
			continue
		}
		if r.Endpoint == ledger.EndpointMCP {
			mcpRecs = append(mcpRecs, r)
		}
	}
	if failed != 1 {
		t.Fatalf("%d mcp records of the dead server, want 1", failed)
	}
	if len(mcpRecs) != 3 {
		t.Fatalf("mcp ledger records %+v", mcpRecs)
	}
	for _, r := range mcpRecs {
		if r.Outcome != ledger.OutcomeOK || r.UpstreamModel != "echo" || r.SessionID == "" || r.KeyID == "" {
			t.Fatalf("record %+v", r)
		}
	}
}
