package caddymodule

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/caddyserver/caddy/v2"
)

// The gateway's public URL: the one base of every link it posts for
// people to open (the approvers' spend-limit increase link, the loop
// breaker's resume link, the MCP approvals' approve and deny links). It
// is configuration, never a request's Host header: the request that
// makes a link comes from the person the link is about, who could point
// the approvers' browsers at a server of their own.

// provisionPublicURL resolves public_url, and mcp_approvals public_url,
// its older name for the MCP links: either sets the one base; both must
// agree.
func (a *App) provisionPublicURL() error {
	pub, err := resolvePublicURL("public_url", a.PublicURL)
	if err != nil {
		return err
	}
	if c := a.MCPApprovals; c != nil && c.publicURL != "" {
		if pub != "" && strings.TrimRight(pub, "/") != strings.TrimRight(c.publicURL, "/") {
			return fmt.Errorf("mcp_approvals public_url %q differs from public_url %q: the gateway has one public URL; remove mcp_approvals public_url", c.publicURL, pub)
		}
		pub = c.publicURL
	}
	a.publicURL = strings.TrimRight(pub, "/")
	if a.MCPApprovals != nil {
		a.MCPApprovals.publicURL = a.publicURL
	}
	return nil
}

// resolvePublicURL expands v's placeholders and checks it is a base URL
// (scheme and host, no path or query).
func resolvePublicURL(field, v string) (string, error) {
	pub, err := caddy.NewReplacer().ReplaceOrErr(v, true, true)
	if err != nil {
		return "", fmt.Errorf("%s: %v", field, err)
	}
	if pub == "" {
		return "", nil
	}
	u, err := url.Parse(pub)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.User != nil {
		return "", fmt.Errorf("%s: %q must be the gateway's base URL as people's browsers reach it, e.g. https://gateway.example.com", field, pub)
	}
	return pub, nil
}
