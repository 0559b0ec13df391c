package integration

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestDashboardMCPView: the dashboard's MCP view shows each tool's calls,
// refusals and bytes as the MCP report counts them, in a real browser.
func TestDashboardMCPView(t *testing.T) {
	ctx, problems := browser(t)
	srv := mcpEchoServer("internal")
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	up := httptest.NewServer(h)
	t.Cleanup(up.Close)
	const carolKey = "sk-test-carol-0123456789"
	models := fmt.Sprintf("model_list:\n  - model_name: echo\n    proxy_params:\n      model: echo/echo\nmcp_servers:\n  internal:\n    url: %s/mcp\n", up.URL)
	g := startGateway(t, gatewayConfig{models: models, authExtra: "key " + carolKey + " {\n\t\t\tid carol\n\t\t\trpm 3\n\t\t}"})
	cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs := mcpConnect(cctx, t, g.base+"/mcp", carolKey)
	mcpWaitTools(cctx, t, cs, "internal-echo")
	for i := range 4 { // the fourth passes carol's rpm: refused
		_, _ = cs.CallTool(cctx, &sdk.CallToolParams{Name: "internal-echo", Arguments: map[string]any{"text": fmt.Sprint("call ", i)}})
	}
	var text string
	deadline := time.Now().Add(15 * time.Second)
	for {
		err := chromedp.Run(ctx, chromedp.Navigate(g.base+"/ui/#mcp"), chromedp.WaitVisible("#key", chromedp.ByID),
			chromedp.SendKeys("#key", adminKey+kb.Enter, chromedp.ByID), chromedp.WaitVisible("#view h2", chromedp.ByQuery),
			chromedp.Sleep(200*time.Millisecond), chromedp.Text("#view", &text, chromedp.ByID))
		if err != nil {
			t.Fatal(err)
		}
		// The ledger writes in the background: reload until it shows.
		if strings.Contains(text, "internal") || time.Now().After(deadline) {
			break
		}
		_ = chromedp.Run(ctx, chromedp.Evaluate(`sessionStorage.clear()`, nil))
		time.Sleep(300 * time.Millisecond)
	}
	var row string
	if err := chromedp.Run(ctx, chromedp.Text("#mcp-tools tbody tr", &row, chromedp.ByQuery)); err != nil {
		t.Fatalf("no MCP table: %v (view %q)", err, text)
	}
	// Server, tool, 4 calls, 0 errors, 1 refused, a duration, bytes.
	cells := strings.Fields(row)
	if len(cells) < 8 || cells[0] != "internal" || cells[1] != "echo" || cells[2] != "4" || cells[3] != "0" || cells[4] != "1" || cells[7] == "0" {
		t.Errorf("MCP row %q", row)
	}
	if p := problems(); len(p) > 0 {
		t.Errorf("browser problems: %v", p)
	}
}
