package integration

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/modelgate/modelgate/internal/testwait"
	"github.com/modelgate/modelgate/secretscan/secrettest"
)

// TestMCPToolArgumentsSecretFirewall (hostile pass 10, H10-1): through
// the binary, a tool call whose arguments carry a GitHub token reaches
// an MCP server that sets no secrets action with the placeholder (the
// default, redact), and one whose server sets block is refused with an
// MCP error naming the rule, never the value.
func TestMCPToolArgumentsSecretFirewall(t *testing.T) {
	pat := secrettest.Corpus(31)[8].Value
	serve := func(name string) string {
		srv := mcpEchoServer(name)
		up := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
		t.Cleanup(up.Close)
		return up.URL
	}
	models := fmt.Sprintf("model_list:\n  - model_name: echo\n    proxy_params:\n      model: echo/echo\nmcp_servers:\n  open:\n    url: %s/mcp\n  strict:\n    url: %s/mcp\n    secrets: {action: block}\n",
		serve("open"), serve("strict"))
	g := startGateway(t, gatewayConfig{models: models})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "go-sdk-test"}, nil).Connect(ctx, &sdk.StreamableClientTransport{Endpoint: g.base + "/mcp", HTTPClient: &http.Client{Transport: mcpBearer{aliceKey}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	call := func(tool string) (res *sdk.CallToolResult, err error) {
		// The servers connect in the background: until then the tool is
		// unknown.
		testwait.Until(func() bool {
			res, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: map[string]any{"text": "deploy creds: " + pat}})
			return err == nil || !strings.Contains(err.Error(), "unknown tool")
		})
		return res, err
	}
	res, err := call("open-echo")
	if err != nil || res.IsError {
		t.Fatalf("open: %+v %v", res, err)
	}
	if got := res.Content[0].(*sdk.TextContent).Text; strings.Contains(got, pat) || !strings.Contains(got, "open:deploy creds: [REDACTED:github-pat:") {
		t.Fatalf("the open server saw %q", got)
	}
	res, err = call("strict-echo")
	if err == nil || !strings.Contains(err.Error(), "rule github-pat") || strings.Contains(err.Error(), pat) {
		t.Fatalf("strict: %+v %v", res, err)
	}
}
