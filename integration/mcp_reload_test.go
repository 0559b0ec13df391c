package integration

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestMCPSessionReload: an MCP session does not outlive the config that
// admitted it. Every POST /mcp passes the current llm_auth, and the
// reloaded gateway's MCP server knows none of the old one's sessions: after
// a reload rotates bob's Caddyfile secret, his call on the session he
// opened before fails and reaches no upstream; a new session with the old
// secret is refused, one with the new secret works.
func TestMCPSessionReload(t *testing.T) {
	srv := mcpEchoServer("internal")
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	var calls atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if bytes.Contains(body, []byte(`"tools/call"`)) {
			calls.Add(1)
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		h.ServeHTTP(w, r)
	}))
	// Closed after the gateway stops (cleanups run last first): the
	// gateway holds the upstream's GET stream open until then.
	t.Cleanup(up.Close)
	models := fmt.Sprintf("model_list:\n  - model_name: echo\n    proxy_params:\n      model: echo/echo\nmcp_servers:\n  internal:\n    url: %s/mcp\n", up.URL)
	g := startGateway(t, gatewayConfig{models: models})

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	connect := func(key string) (*sdk.ClientSession, error) {
		return sdk.NewClient(&sdk.Implementation{Name: "go-sdk-test"}, nil).Connect(ctx,
			&sdk.StreamableClientTransport{Endpoint: g.base + "/mcp", HTTPClient: &http.Client{Transport: mcpBearer{key}}, MaxRetries: 1}, nil)
	}
	call := func(cs *sdk.ClientSession) error {
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "internal-echo", Arguments: map[string]any{"text": "hi"}})
		if err == nil && (res.IsError || res.Content[0].(*sdk.TextContent).Text != "internal:hi") {
			err = fmt.Errorf("answered %+v", res)
		}
		return err
	}
	bob, err := connect(bobKey)
	if err != nil {
		t.Fatal(err)
	}
	defer bob.Close()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		err := call(bob)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("bob's call before the reload: %v", err)
		}
	}

	rotated := g.rotateBob(t)
	before := calls.Load()
	g.reload(t)

	if err := call(bob); err == nil {
		t.Error("bob's call on his session from before the reload was served")
	} else {
		t.Logf("bob's call after the reload: %v", err)
	}
	if cs, err := connect(bobKey); err == nil {
		cs.Close()
		t.Error("a new session with bob's old secret was admitted")
	}
	if n := calls.Load() - before; n != 0 {
		t.Errorf("%d tool calls reached the upstream under the old secret", n)
	}
	fresh, err := connect(rotated)
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		err := call(fresh)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("bob's call with the rotated secret: %v", err)
		}
	}
}
