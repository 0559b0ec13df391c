package caddymodule

import (
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"

	"github.com/modelgate/modelgate/modellist"
)

// TestMCPTokenKey: the modelgate app's mcp_token_key; an auth: oauth
// server without it, or with one too short, stops the start with the fix,
// never echoing the key; no auth: oauth server needs none.
func TestMCPTokenKey(t *testing.T) {
	v, err := parseAppOption(caddyfile.NewTestDispenser("modelgate {\nmcp_token_key {env.MCP_TOKEN_KEY}\n}"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(v.(httpcaddyfile.App).Value), `{"mcp_token_key":"{env.MCP_TOKEN_KEY}"}`; got != want {
		t.Errorf("parsed %s, want %s", got, want)
	}
	if _, err := parseAppOption(caddyfile.NewTestDispenser("modelgate {\nmcp_token_key\n}"), nil); err == nil || !strings.Contains(err.Error(), "mcp_token_key: give one key") {
		t.Errorf("no value: %v", err)
	}
	oauth := []*modellist.MCPServer{{Name: "plain", Auth: modellist.MCPAuthShared}, {Name: "gh", URL: "https://x/mcp", Auth: modellist.MCPAuthOAuth, OAuth: &modellist.MCPOAuth{}}}
	if b, err := mcpCredentials(&App{}, oauth[:1], ""); b != nil || err != nil {
		t.Errorf("shared servers only: %v %v", b, err)
	}
	for key, want := range map[string]string{
		"":            "mcp_servers.gh: auth: oauth keeps each person's tokens sealed in the ledger under a key of the gateway's: add mcp_token_key {env.MCP_TOKEN_KEY} to the modelgate global options",
		"SECRET-tiny": "mcp_token_key: too short; give at least 32 random bytes",
	} {
		_, err := mcpCredentials(&App{MCPTokenKey: key, publicURL: "https://gw.example"}, oauth, "")
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "SECRET") {
			t.Errorf("key %q: %v, want %q", key, err, want)
		}
	}
	if _, err := mcpCredentials(&App{MCPTokenKey: strings.Repeat("k", 32)}, oauth, ""); err == nil || !strings.Contains(err.Error(), "mcp_servers.gh: auth: oauth sends each person's browser") || !strings.Contains(err.Error(), "set public_url") {
		t.Errorf("without public_url: %v", err)
	}
	if b, err := mcpCredentials(&App{MCPTokenKey: strings.Repeat("k", 32), publicURL: "https://gw.example"}, oauth, ""); b == nil || err != nil || !b.Has("gh") || b.Has("plain") {
		t.Errorf("with a key: %v", err)
	}
}
