package caddymodule

import (
	"fmt"

	"github.com/caddyserver/caddy/v2"

	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/mcp/upstreamauth"
	"github.com/modelgate/modelgate/modellist"
)

// mcpCredentials is the keeper of people's own tokens to the auth: oauth
// servers of servers (docs/mcp-upstream-auth.md); nil when none says
// auth: oauth. Without the app's mcp_token_key such a server is a
// configuration error: the tokens would have nothing to be sealed with.
// site binds the grants to the Caddy site (upstreamauth.Options.Site).
func mcpCredentials(app *App, servers []*modellist.MCPServer, site string) (*upstreamauth.Broker, error) {
	first := ""
	for _, s := range servers {
		if s.Auth == modellist.MCPAuthOAuth {
			first = s.Name
			break
		}
	}
	if first == "" {
		return nil, nil
	}
	fix := "add mcp_token_key {env.MCP_TOKEN_KEY} to the modelgate global options, with MCP_TOKEN_KEY=$(openssl rand -base64 32) in Caddy's environment"
	if app.MCPTokenKey == "" {
		return nil, fmt.Errorf("mcp_servers.%s: auth: oauth keeps each person's tokens sealed in the ledger under a key of the gateway's: %s", first, fix)
	}
	key, err := caddy.NewReplacer().ReplaceOrErr(app.MCPTokenKey, true, true)
	if err != nil || key == "" {
		return nil, fmt.Errorf("mcp_token_key: the placeholder resolved to nothing; %s", fix)
	}
	if app.publicURL == "" {
		return nil, fmt.Errorf("mcp_servers.%s: auth: oauth sends each person's browser to the server's authorization server and back to the gateway: set public_url in the modelgate global options (the gateway's base URL as browsers reach it, e.g. public_url https://gateway.example.com)", first)
	}
	b, err := upstreamauth.New(upstreamauth.Options{
		Servers: servers, Key: key, PublicURL: app.publicURL, Audit: app.Audit(), Site: site,
		Store: func() ledger.MCPUpstreamTokenStore {
			s, _ := app.Store().(ledger.MCPUpstreamTokenStore)
			return s
		},
	})
	if err != nil {
		return nil, err
	}
	// Grants the ledger deletes with their holder (a revoked key, a
	// person deprovisioned) are revoked at their authorization server;
	// the store is open once the app starts. Gateway.Cleanup closes b.
	app.onStart = append(app.onStart, func() { b.Watch(app.Store()) })
	return b, nil
}
