package handlers

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
)

// TestReadinessNamesMCPServers: the readiness probe names the MCP servers
// with no live session and stays ready (model traffic does not need
// them); with no MCP servers configured it says nothing of MCP.
func TestReadinessNamesMCPServers(t *testing.T) {
	yaml := "model_list:\n" + entry("m", "http://127.0.0.1:1")
	for _, c := range []struct {
		down []string
		want []string
	}{{[]string{"fs", "search"}, []string{"fs", "search"}}, {[]string{}, []string{}}, {nil, nil}} {
		g, _ := testGateway(t, yaml, func(o *GatewayOptions) {
			if c.down != nil {
				o.MCPNotConnected = func() []string { return c.down }
			}
		})
		w := httptest.NewRecorder()
		g.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/health/readiness", nil))
		var got struct {
			Status          string    `json:"status"`
			MCPNotConnected *[]string `json:"mcp_not_connected"`
		}
		if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil || w.Code != http.StatusOK || got.Status != "ok" {
			t.Fatalf("%d %s: %v", w.Code, w.Body, err)
		}
		if (got.MCPNotConnected == nil) != (c.want == nil) || (c.want != nil && !slices.Equal(*got.MCPNotConnected, c.want)) {
			t.Fatalf("down %v: readiness %s", c.down, w.Body)
		}
	}
}
