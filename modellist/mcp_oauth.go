package modellist

import (
	"net"
	"net/url"
	"strings"

	"gopkg.in/yaml.v3"
)

// MCP upstream authentication: how the gateway proves itself to a server.
const (
	// MCPAuthShared is the default: every caller reaches the server with
	// the entry's own headers (a shared credential).
	MCPAuthShared = "shared"
	// MCPAuthOAuth reaches the server with each person's own OAuth token,
	// which they grant once (docs/mcp-upstream-auth.md).
	MCPAuthOAuth = "oauth"
)

// MCPOAuth is an auth: oauth entry's client settings; every field is
// optional. AuthorizationServer overrides the issuer the server's RFC 9728
// metadata names; without ClientID the gateway registers itself (RFC
// 7591). ClientSecret is a resolved secret, never printed.
type MCPOAuth struct {
	AuthorizationServer string
	ClientID            string
	ClientSecret        string
	Scopes              []string
}

// mcpOAuthFields are the entry's fields that only auth: oauth takes.
var mcpOAuthFields = []string{"authorization_server", "client_id", "client_secret", "scopes"}

// mcpAuth reads auth and its client fields into s.
func (p *parser) mcpAuth(s *MCPServer, fs map[string]field, n *yaml.Node, w where) {
	s.Auth = MCPAuthShared
	if f, ok := fs["auth"]; ok {
		switch v, _ := p.scalar(f.val, w.sub("auth")); v {
		case MCPAuthShared, "":
		case MCPAuthOAuth:
			s.Auth = MCPAuthOAuth
		default:
			p.errorf(f.val, w.sub("auth"), "must be shared (the entry's headers, for every caller) or oauth (each person's own OAuth token)")
		}
	}
	if s.Auth != MCPAuthOAuth {
		for _, name := range mcpOAuthFields {
			if f, ok := fs[name]; ok {
				p.errorf(f.val, w.sub(name), "is for auth: oauth; add auth: oauth or remove %s", name)
			}
		}
		return
	}
	o := &MCPOAuth{}
	if f, ok := fs["authorization_server"]; ok {
		if v, ok := p.optional(f.val, w.sub("authorization_server")); ok && v != "" {
			if !httpsOrLoopback(v) {
				p.errorf(f.val, w.sub("authorization_server"), "must be the authorization server's issuer as an https:// URL (http:// only on loopback), e.g. https://auth.example.com")
			} else {
				o.AuthorizationServer = v
			}
		}
	}
	if f, ok := fs["client_id"]; ok {
		o.ClientID, _ = p.optional(f.val, w.sub("client_id"))
	}
	if f, ok := fs["client_secret"]; ok {
		o.ClientSecret, _ = p.optional(f.val, w.sub("client_secret"))
		switch {
		case o.ClientSecret != "" && o.ClientID == "":
			p.errorf(f.val, w.sub("client_secret"), "a client_secret needs the client_id it belongs to; add client_id, or remove both to let the gateway register itself")
		case o.ClientSecret != "" && o.AuthorizationServer == "":
			// Without it the MCP server's own metadata (RFC 9728) would
			// name where the secret is sent.
			p.errorf(f.val, w.sub("client_secret"), "a client_secret is sent only to an authorization server you name; add authorization_server (the issuer the client is registered at, e.g. https://auth.example.com)")
		}
	}
	if f, ok := fs["scopes"]; ok {
		o.Scopes = p.stringList(f.val, w.sub("scopes"), false)
		for _, sc := range o.Scopes {
			if sc == "" || strings.ContainsAny(sc, " \"\\") {
				p.errorf(f.val, w.sub("scopes"), "scope %q: a scope is one word without spaces, quotes or backslashes", sc)
			}
		}
	}
	s.OAuth = o
	switch {
	case s.Transport == MCPTransportStdio:
		p.errorf(n, w.sub("auth"), "auth: oauth is for url servers (transport http or sse); a stdio server takes its credentials through env")
	case hasHeader(s.Headers, "Authorization"):
		p.errorf(n, w.sub("headers"), "an auth: oauth server gets each person's token in Authorization; remove the Authorization header")
	}
}

func hasHeader(h map[string]string, name string) bool {
	for k := range h {
		if strings.EqualFold(k, name) {
			return true
		}
	}
	return false
}

// httpsOrLoopback: an https URL, or http on a loopback host.
func httpsOrLoopback(v string) bool {
	u, err := url.Parse(v)
	if err != nil || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return false
	}
	if u.Scheme == "https" {
		return true
	}
	h := u.Hostname()
	ip := net.ParseIP(h)
	return u.Scheme == "http" && (h == "localhost" || ip != nil && ip.IsLoopback())
}
