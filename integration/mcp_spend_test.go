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

	"github.com/modelgate/modelgate/ledger"
)

// A priced MCP server (cost_per_call) through the binary: each call is
// admitted against the caller's budget before the server is called, so a
// key with 5 cents makes two 2-cent calls and is refused the third, with
// the limit named; each call's ledger row carries its cost.
func TestMCPPricedCallsStopAtTheBudget(t *testing.T) {
	srv := mcpEchoServer("paid")
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	up := httptest.NewServer(h)
	defer up.Close()
	models := fmt.Sprintf(`model_list:
  - model_name: echo
    proxy_params:
      model: echo/echo
mcp_servers:
  paid:
    url: %s/mcp
    cost_per_call: 0.02
`, up.URL)
	g := startGateway(t, gatewayConfig{models: models})
	k := createKey(t, g, `{"name":"mcp-capped","budget":{"amount":"5","period":"daily"}}`)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "go-sdk-test"}, nil).Connect(ctx, &sdk.StreamableClientTransport{Endpoint: g.base + "/mcp/paid", HTTPClient: &http.Client{Transport: mcpBearer{k.Value}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	ok, refused := 0, ""
	for range 5 {
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
		if err != nil {
			refused = err.Error()
			break
		}
		if res.IsError || res.Content[0].(*sdk.TextContent).Text != "paid:hi" {
			t.Fatalf("call: %+v", res)
		}
		ok++
	}
	if ok != 2 || !strings.Contains(refused, "budget") {
		t.Fatalf("%d calls, then %q; want 2, then a budget refusal", ok, refused)
	}
	cs.Close()
	var costs []int64
	for _, r := range g.ledgerRecords(t) {
		if r.Endpoint == ledger.EndpointMCP && r.Outcome == ledger.OutcomeOK {
			costs = append(costs, r.CostPicoUSD)
		}
	}
	if len(costs) != 2 || costs[0] != 2e10 || costs[1] != 2e10 {
		t.Errorf("the calls' records cost %v pico; want two of 2 cents", costs)
	}
}
