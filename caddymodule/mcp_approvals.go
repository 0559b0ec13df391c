package caddymodule

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/modelgate/modelgate/identity"
	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/mcp"
	"github.com/modelgate/modelgate/mcp/approval"
	"github.com/modelgate/modelgate/policy"
)

// MCPApprovalsConfig is the modelgate app's mcp_approvals block: where a
// tool call that needs a person's approval is announced
// (docs/mcp-approvals.md).
type MCPApprovalsConfig struct {
	// Webhook is the team chat's incoming webhook (a placeholder such as
	// {env.APPROVALS_WEBHOOK}); the request is posted there when the
	// calling client cannot ask its user.
	Webhook string `json:"webhook,omitempty"`
	// PublicURL is the older name of the app's public_url (public_url.go),
	// kept for configurations that set it here.
	PublicURL string `json:"public_url,omitempty"`
	// Timeout is how long a call waits when its server sets no
	// approval_timeout. Default 2 minutes.
	Timeout caddy.Duration `json:"timeout,omitempty"`

	webhook, publicURL string // resolved in Provision
}

// provision resolves the placeholders and checks the URLs; the webhook
// URL is a credential, so no error echoes it.
func (c *MCPApprovalsConfig) provision() error {
	if c == nil {
		return nil
	}
	repl := caddy.NewReplacer()
	hook, err := repl.ReplaceOrErr(c.Webhook, true, true)
	if err != nil {
		return fmt.Errorf("mcp_approvals webhook: %v", err)
	}
	if hook != "" && !strings.HasPrefix(hook, "https://") && !strings.HasPrefix(hook, "http://") {
		return errors.New("mcp_approvals webhook: want the chat's incoming webhook URL (https://…)")
	}
	pub, err := resolvePublicURL("mcp_approvals public_url", c.PublicURL)
	if err != nil {
		return err
	}
	if c.Timeout < 0 {
		return errors.New("mcp_approvals timeout: must not be negative")
	}
	c.webhook, c.publicURL = hook, pub
	return nil
}

// parseMCPApprovals reads `mcp_approvals { webhook … public_url … timeout … }`.
func parseMCPApprovals(d *caddyfile.Dispenser) (*MCPApprovalsConfig, error) {
	c := &MCPApprovalsConfig{}
	if d.NextArg() {
		return nil, d.ArgErr()
	}
	for inner := d.Nesting(); d.NextBlock(inner); {
		opt := d.Val()
		var v string
		if !d.AllArgs(&v) {
			return nil, d.Errf("mcp_approvals %s: give one value", opt)
		}
		switch opt {
		case "webhook":
			c.Webhook = v
		case "public_url":
			c.PublicURL = v
		case "timeout":
			dur, err := caddy.ParseDuration(v)
			if err != nil || dur <= 0 {
				return nil, d.Errf("mcp_approvals timeout: %q is not a positive duration such as 2m", v)
			}
			c.Timeout = caddy.Duration(dur)
		default:
			return nil, d.Errf("mcp_approvals: unknown option %q; want webhook, public_url or timeout", opt)
		}
	}
	return c, nil
}

// approvalStore is the ledger's approval table, nil before the ledger is
// open.
func approvalStore(app *App) func() ledger.MCPApprovalStore {
	return func() ledger.MCPApprovalStore {
		s, _ := app.Store().(ledger.MCPApprovalStore)
		return s
	}
}

// mcpApprovals are the MCP gateway's approval options.
func mcpApprovals(app *App) *mcp.Approvals {
	o := &mcp.Approvals{
		Store:             approvalStore(app),
		Audit:             app.Audit(),
		WorkspaceApproval: func(ws string) []string { return app.Controls().WorkspaceLimits(ws).MCPApproval },
	}
	o.PublicURL = app.publicURL
	if c := app.MCPApprovals; c != nil {
		o.Webhook, o.Timeout = c.webhook, time.Duration(c.Timeout)
	}
	return o
}

// approvalLinks serves the chat message's approve and deny links.
func approvalLinks(app *App) *approval.LinkHandler {
	return &approval.LinkHandler{Store: approvalStore(app), Decider: func(s ledger.MCPApprovalStore) *approval.Decider {
		return &approval.Decider{Store: s, Audit: app.Audit()}
	}, Approver: linkApprover, SignInPath: identity.LoginPath, SignInStatus: identity.StatusPath}
}

// linkApprover is who signed in (llm_auth's session or key) to decide by
// a link.
func linkApprover(r *http.Request) *approval.Approver {
	id := policy.IdentityFrom(r.Context())
	if id == nil {
		return nil
	}
	return &approval.Approver{Person: id.PersonID(), KeyID: id.KeyID, Admin: id.Role == policy.RoleAdmin, Auditor: id.Role == policy.RoleAuditor || id.OwnerRole == policy.RoleAuditor}
}
