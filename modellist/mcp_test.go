package modellist

import (
	"strings"
	"testing"
)

const mcpBase = "model_list:\n  - model_name: m\n    proxy_params: {model: openai/gpt-4o, api_key: k}\n"

func TestMCPServersParse(t *testing.T) {
	env := func(n string) (string, bool) {
		if n == "GH_TOKEN" {
			return "sekret-gh", true
		}
		return "", false
	}
	c, _, err := Parse([]byte(mcpBase+`mcp_servers:
  everything:
    transport: stdio
    command: npx
    args: ["-y", "@modelcontextprotocol/server-everything"]
    env: {TOKEN: os.environ/GH_TOKEN}
  gh:
    url: https://mcp.example.com/mcp
    headers: {Authorization: "os.environ/GH_TOKEN"}
    allowed_tools: [search]
    timeout: 30s
  legacy:
    url: http://127.0.0.1:9/sse
    transport: sse
`), "m.yaml", env)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.MCPServers) != 3 {
		t.Fatalf("servers %d", len(c.MCPServers))
	}
	e, gh, sse := c.MCPServers[0], c.MCPServers[1], c.MCPServers[2]
	if e.Transport != MCPTransportStdio || e.Command != "npx" || len(e.Args) != 2 || e.Env["TOKEN"] != "sekret-gh" {
		t.Fatalf("stdio %+v", e)
	}
	if gh.Transport != MCPTransportHTTP || gh.Headers["Authorization"] != "sekret-gh" || gh.Timeout.Seconds() != 30 || !gh.ToolAllowed("search") || gh.ToolAllowed("delete") {
		t.Fatalf("http %+v", gh)
	}
	if sse.Transport != MCPTransportSSE {
		t.Fatalf("sse %+v", sse)
	}
}

func TestMCPServersErrors(t *testing.T) {
	env := func(n string) (string, bool) { return "sekret-value", n == "SET" }
	for _, tc := range []struct{ yaml, want string }{
		{"mcp_servers:\n  a: {transport: stdio}\n", "mcp_servers.a: command: a stdio server needs"},
		{"mcp_servers:\n  a: {url: ftp://x}\n", "mcp_servers.a: url: must be an http:// or https:// URL"},
		{"mcp_servers:\n  a: {transport: ws, url: http://x}\n", `unknown transport "ws"`},
		{"mcp_servers:\n  a: {url: http://x, headers: {Authorization: os.environ/UNSET}}\n", "environment variable UNSET is unset"},
		{"mcp_servers:\n  a-b: {url: http://x}\n", "server names must be letters"},
		{"mcp_servers:\n  a: {url: http://x, allowed_tools: [t], disallowed_tools: [t]}\n", `tool "t" is in both`},
		{"mcp_servers:\n  a: {}\n", "needs either url"},
		{"mcp_servers:\n  a: {url: http://x, comand: y}\n", `unknown field "comand"`},
		{"mcp_servers:\n  a: {url: http://x, headers: {Authorization: os.environ/SET}, timeout: -1s}\n", "timeout"},
	} {
		_, _, err := Parse([]byte(mcpBase+tc.yaml), "m.yaml", env)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want %q", tc.yaml, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "sekret") {
			t.Errorf("%q: secret in error %v", tc.yaml, err)
		}
	}
}

// TestMCPServerSecrets: an MCP server's secrets: {action: …} is read, and
// a wrong word is an error naming the server and the field.
func TestMCPServerSecrets(t *testing.T) {
	c, _, err := Parse([]byte(mcpBase+"mcp_servers:\n  a: {url: http://x, secrets: {action: block}}\n  b: {url: http://y}\n"), "m.yaml", nil)
	if err != nil || c.MCPServers[0].Secrets != SecretsBlock || c.MCPServers[1].Secrets != SecretsDefault {
		t.Fatalf("%+v %v", c, err)
	}
	_, _, err = Parse([]byte(mcpBase+"mcp_servers:\n  a: {url: http://x, secrets: {action: hide}}\n"), "m.yaml", nil)
	if err == nil || !strings.Contains(err.Error(), "mcp_servers.a: secrets.action") || !strings.Contains(err.Error(), `unknown action "hide"`) {
		t.Fatalf("err %v", err)
	}
}

func TestMCPRequireApproval(t *testing.T) {
	c, _, err := Parse([]byte(mcpBase+`mcp_servers:
  all: {url: http://x, require_approval: true, approval_timeout: 30s, approval_from: team}
  some: {url: http://y, require_approval: [deploy]}
  none: {url: http://z, require_approval: false}
`), "m.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	all, some, none := c.MCPServers[0], c.MCPServers[1], c.MCPServers[2]
	if !all.NeedsApproval("anything") || all.ApprovalTimeout.Seconds() != 30 || all.ApprovalFrom != "team" {
		t.Errorf("all: %+v", all)
	}
	if !some.NeedsApproval("deploy") || some.NeedsApproval("read") || some.ApprovalTimeout != 0 {
		t.Errorf("some: %+v", some)
	}
	if none.NeedsApproval("deploy") {
		t.Errorf("none: %+v", none)
	}
	for bad, want := range map[string]string{
		"require_approval: yes please": "mcp_servers.a: require_approval: must be true",
		"approval_from: me":            "mcp_servers.a: approval_from: must be client",
	} {
		_, _, err = Parse([]byte(mcpBase+"mcp_servers:\n  a: {url: http://x, "+bad+"}\n"), "m.yaml", nil)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v", bad, err)
		}
	}
}

// cost_per_call is US dollars per call, kept in picodollars; what is not
// a plain price is refused naming the server and the field.
func TestMCPCostPerCall(t *testing.T) {
	c, _, err := Parse([]byte(mcpBase+"mcp_servers:\n  paid: {url: http://x, cost_per_call: 0.0125}\n  free: {url: http://y}\n"), "m.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.MCPServers[0].CostPerCallPico; got != 125e8 {
		t.Errorf("paid: %d pico per call, want 1.25 cents", got)
	}
	if got := c.MCPServers[1].CostPerCallPico; got != 0 {
		t.Errorf("free: %d pico per call", got)
	}
	for _, bad := range []string{"-1", "0.0000001", "1e3", "5000", "free"} {
		_, _, err = Parse([]byte(mcpBase+"mcp_servers:\n  a: {url: http://x, cost_per_call: "+bad+"}\n"), "m.yaml", nil)
		if err == nil || !strings.Contains(err.Error(), "mcp_servers.a: cost_per_call: ") {
			t.Errorf("%s: err = %v", bad, err)
		}
	}
}
