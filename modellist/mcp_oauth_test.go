package modellist

import (
	"strings"
	"testing"
)

// TestMCPOAuthParse: auth: oauth with and without its client fields;
// the secret comes from the environment.
func TestMCPOAuthParse(t *testing.T) {
	env := func(n string) (string, bool) { return "sekret-client", n == "GH_SECRET" }
	c, _, err := Parse([]byte(mcpBase+`mcp_servers:
  gh:
    url: https://mcp.example.com/mcp
    auth: oauth
    authorization_server: https://auth.example.com
    client_id: modelgate
    client_secret: os.environ/GH_SECRET
    scopes: [repo, read:org]
  linear:
    url: https://mcp.linear.app/mcp
    auth: oauth
  plain:
    url: https://x.example.com/mcp
`), "m.yaml", env)
	if err != nil {
		t.Fatal(err)
	}
	gh, lin, plain := c.MCPServers[0], c.MCPServers[1], c.MCPServers[2]
	if gh.Auth != MCPAuthOAuth || gh.OAuth.ClientSecret != "sekret-client" || gh.OAuth.ClientID != "modelgate" || len(gh.OAuth.Scopes) != 2 || gh.OAuth.AuthorizationServer != "https://auth.example.com" {
		t.Fatalf("gh %+v %+v", gh, gh.OAuth)
	}
	if lin.Auth != MCPAuthOAuth || lin.OAuth == nil || lin.OAuth.ClientID != "" {
		t.Fatalf("linear %+v", lin)
	}
	if plain.Auth != MCPAuthShared || plain.OAuth != nil {
		t.Fatalf("plain %+v", plain)
	}
}

// TestMCPOAuthErrors: each mistake names the entry, the field and the fix,
// and never the secret.
func TestMCPOAuthErrors(t *testing.T) {
	env := func(n string) (string, bool) { return "sekret-value", n == "SET" }
	for _, tc := range []struct{ yaml, want string }{
		{"mcp_servers:\n  a: {url: http://x, auth: kerberos}\n", "mcp_servers.a: auth: must be shared"},
		{"mcp_servers:\n  a: {url: http://x, client_id: c}\n", "mcp_servers.a: client_id: is for auth: oauth; add auth: oauth"},
		{"mcp_servers:\n  a: {transport: stdio, command: x, auth: oauth}\n", "mcp_servers.a: auth: auth: oauth is for url servers"},
		{"mcp_servers:\n  a: {url: http://x, auth: oauth, headers: {authorization: os.environ/SET}}\n", "mcp_servers.a: headers: an auth: oauth server gets each person's token"},
		{"mcp_servers:\n  a: {url: http://x, auth: oauth, client_secret: os.environ/SET}\n", "mcp_servers.a: client_secret: a client_secret needs the client_id"},
		{"mcp_servers:\n  a: {url: http://x, auth: oauth, authorization_server: http://auth.example.com}\n", "mcp_servers.a: authorization_server: must be"},
		{"mcp_servers:\n  a: {url: http://x, auth: oauth, scopes: [\"a b\"]}\n", "mcp_servers.a: scopes: scope \"a b\""},
		{"mcp_servers:\n  a: {url: http://x, auth: oauth, client_id: c, client_secret: os.environ/UNSET}\n", "environment variable UNSET is unset"},
		// hostile review H8: the secret goes only to a named issuer.
		{"mcp_servers:\n  a: {url: http://x, auth: oauth, client_id: c, client_secret: os.environ/SET}\n", "mcp_servers.a: client_secret: a client_secret is sent only to an authorization server you name; add authorization_server"},
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
