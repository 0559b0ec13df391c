package caddymodule

import (
	"fmt"
	"net/http"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/modelgate/modelgate/forge"
)

func init() {
	caddy.RegisterModule(Forge{})
	httpcaddyfile.RegisterHandlerDirective("llm_forge", parseForge)
	// Before any key check: a forge signs its deliveries instead.
	httpcaddyfile.RegisterDirectiveOrder("llm_forge", httpcaddyfile.Before, "basic_auth")
}

// Forge receives GitHub's and GitLab's pull request webhooks at
// /hooks/github and /hooks/gitlab into the ledger, for the work report.
type Forge struct {
	// GitHubSecret is the GitHub webhook's secret, normally {env.…}.
	GitHubSecret string `json:"github_secret,omitempty"`
	// GitLabToken is the GitLab webhook's secret token.
	GitLabToken string `json:"gitlab_token,omitempty"`

	rc *forge.Receiver
}

// CaddyModule returns the Caddy module information.
func (Forge) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{ID: "http.handlers.llm_forge", New: func() caddy.Module { return new(Forge) }}
}

// Provision resolves the secrets and builds the receivers.
func (f *Forge) Provision(ctx caddy.Context) error {
	appIface, err := ctx.App("modelgate")
	if err != nil {
		return fmt.Errorf("loading modelgate app: %v", err)
	}
	repl := caddy.NewReplacer()
	gh, err := repl.ReplaceOrErr(f.GitHubSecret, true, true)
	if err != nil {
		return fmt.Errorf("llm_forge github_secret: %v", err)
	}
	gl, err := repl.ReplaceOrErr(f.GitLabToken, true, true)
	if err != nil {
		return fmt.Errorf("llm_forge gitlab_token: %v", err)
	}
	if gh == "" && gl == "" {
		return fmt.Errorf("llm_forge: set github_secret or gitlab_token (each forge's webhook secret); with neither there is nothing to receive")
	}
	f.rc = forge.NewReceiver(forge.Options{GitHubSecret: gh, GitLabToken: gl, Store: workStore(appIface.(*App))})
	return nil
}

// ServeHTTP answers the webhook paths and passes every other path on.
func (f *Forge) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	if !f.rc.Match(r) {
		return next.ServeHTTP(w, r)
	}
	f.rc.ServeHTTP(w, r)
	return nil
}

func parseForge(h httpcaddyfile.Helper) (caddyhttp.MiddlewareHandler, error) {
	f := new(Forge)
	return f, f.UnmarshalCaddyfile(h.Dispenser)
}

// UnmarshalCaddyfile parses:
//
//	llm_forge {
//		github_secret {env.GITHUB_WEBHOOK_SECRET}
//		gitlab_token {env.GITLAB_WEBHOOK_TOKEN}
//	}
func (f *Forge) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next()
	if d.NextArg() {
		return d.ArgErr()
	}
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		opt := d.Val()
		var dst *string
		switch opt {
		case "github_secret":
			dst = &f.GitHubSecret
		case "gitlab_token":
			dst = &f.GitLabToken
		default:
			return d.Errf("unrecognized llm_forge option %q (known: github_secret, gitlab_token)", opt)
		}
		if *dst != "" {
			return d.Errf("llm_forge %s already specified", opt)
		}
		if !d.NextArg() {
			return d.Errf("llm_forge %s: want one value, the webhook's secret, e.g. {env.GITHUB_WEBHOOK_SECRET}", opt)
		}
		*dst = d.Val()
		if d.NextArg() {
			return d.Errf("llm_forge %s: too many arguments", opt)
		}
	}
	return nil
}

// Interface guards.
var (
	_ caddy.Provisioner           = (*Forge)(nil)
	_ caddyhttp.MiddlewareHandler = (*Forge)(nil)
	_ caddyfile.Unmarshaler       = (*Forge)(nil)
)
