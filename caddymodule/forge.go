package caddymodule

import (
	"fmt"
	"net/http"
	"strings"

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
	// GitHubCommentToken and GitLabCommentToken turn on the comment a
	// merged pull request gets with its agent cost: API tokens allowed to
	// comment. Empty: no comment (the default).
	GitHubCommentToken string `json:"github_comment_token,omitempty"`
	GitLabCommentToken string `json:"gitlab_comment_token,omitempty"`
	// GitHubAPI and GitLabAPI are the forges' API roots, for GitHub
	// Enterprise or a GitLab whose API is elsewhere; defaults
	// https://api.github.com and https://<host>/api/v4.
	GitHubAPI string `json:"github_api,omitempty"`
	GitLabAPI string `json:"gitlab_api,omitempty"`

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
	vals := map[string]*string{"github_secret": &f.GitHubSecret, "gitlab_token": &f.GitLabToken,
		"github_comment_token": &f.GitHubCommentToken, "gitlab_comment_token": &f.GitLabCommentToken}
	resolved := map[string]string{}
	for name, v := range vals {
		s, err := repl.ReplaceOrErr(*v, true, true)
		if err != nil {
			return fmt.Errorf("llm_forge %s: %v", name, err)
		}
		resolved[name] = s
	}
	gh, gl := resolved["github_secret"], resolved["gitlab_token"]
	if gh == "" && gl == "" {
		return fmt.Errorf("llm_forge: set github_secret or gitlab_token (each forge's webhook secret); with neither there is nothing to receive")
	}
	for _, api := range []struct{ name, v string }{{"github_api", f.GitHubAPI}, {"gitlab_api", f.GitLabAPI}} {
		if api.v != "" && !strings.HasPrefix(api.v, "https://") && !strings.HasPrefix(api.v, "http://") {
			return fmt.Errorf("llm_forge %s: want the API's URL, e.g. https://github.example.com/api/v3, got %q", api.name, api.v)
		}
	}
	store := workStore(appIface.(*App))
	o := forge.Options{GitHubSecret: gh, GitLabToken: gl, Store: store}
	if resolved["github_comment_token"] != "" || resolved["gitlab_comment_token"] != "" {
		logger := ctx.Logger()
		c := &forge.Commenter{GitHubToken: resolved["github_comment_token"], GitLabToken: resolved["gitlab_comment_token"],
			GitHubAPI: f.GitHubAPI, GitLabAPI: f.GitLabAPI, Store: store,
			Logf: func(format string, args ...any) { logger.Warn(fmt.Sprintf(format, args...)) }}
		o.Merged = c.Merged
	}
	f.rc = forge.NewReceiver(o)
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
//		github_comment_token {env.GITHUB_TOKEN}
//		gitlab_comment_token {env.GITLAB_TOKEN}
//		github_api https://github.example.com/api/v3
//		gitlab_api https://gitlab.example.com/api/v4
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
		case "github_comment_token":
			dst = &f.GitHubCommentToken
		case "gitlab_comment_token":
			dst = &f.GitLabCommentToken
		case "github_api":
			dst = &f.GitHubAPI
		case "gitlab_api":
			dst = &f.GitLabAPI
		default:
			return d.Errf("unrecognized llm_forge option %q (known: github_secret, gitlab_token, github_comment_token, gitlab_comment_token, github_api, gitlab_api)", opt)
		}
		if *dst != "" {
			return d.Errf("llm_forge %s already specified", opt)
		}
		if !d.NextArg() {
			return d.Errf("llm_forge %s: want one value (a secret as a placeholder such as {env.GITHUB_WEBHOOK_SECRET}, or an API URL)", opt)
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
