package caddymodule

import (
	"fmt"
	"net/http"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/modelgate/modelgate/handlers"
)

func init() {
	caddy.RegisterModule(Auth{})
	httpcaddyfile.RegisterHandlerDirective("llm_auth", parseAuth)
	httpcaddyfile.RegisterDirectiveOrder("llm_auth", httpcaddyfile.After, "basic_auth")
}

// Auth authenticates team members by key (Authorization: Bearer or
// x-api-key) and attaches their identity for the gateway and reports.
type Auth struct {
	// Keys are the team's client keys. Use {env.NAME} or {file.PATH}
	// placeholders: they are resolved at provision time and never appear
	// in the saved config.
	Keys []KeyConfig `json:"keys,omitempty"`
	// AdminKeys may also read usage/cost reports and /health.
	AdminKeys []KeyConfig `json:"admin_keys,omitempty"`

	auth *handlers.Auth
}

// KeyConfig is one key.
type KeyConfig struct {
	// Key is the secret, normally a placeholder such as {env.ALICE_KEY}.
	Key string `json:"key"`
	// ID is what logs, the ledger and reports show; default: a short
	// non-reversible fingerprint of the key.
	ID string `json:"id,omitempty"`
	// Workspace groups keys in reports.
	Workspace string `json:"workspace,omitempty"`
	// Models optionally restricts the aliases this key may use.
	Models []string `json:"models,omitempty"`
}

// CaddyModule returns the Caddy module information.
func (Auth) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{ID: "http.handlers.llm_auth", New: func() caddy.Module { return new(Auth) }}
}

// Provision resolves the key placeholders.
func (a *Auth) Provision(ctx caddy.Context) error {
	repl := caddy.NewReplacer()
	var keys []handlers.Key
	add := func(list []KeyConfig, admin bool, field string) error {
		for i, k := range list {
			secret, err := repl.ReplaceOrErr(k.Key, true, true)
			if err != nil {
				// The error names the placeholder, not a value.
				return fmt.Errorf("%s[%d]: %v", field, i, err)
			}
			id := k.ID
			if id == "" && admin {
				id = "admin"
				if len(list) > 1 {
					id = fmt.Sprintf("admin-%d", i+1)
				}
			}
			keys = append(keys, handlers.Key{Secret: secret, ID: id, Workspace: k.Workspace, Models: k.Models, Admin: admin})
		}
		return nil
	}
	if err := add(a.Keys, false, "keys"); err != nil {
		return err
	}
	if err := add(a.AdminKeys, true, "admin_keys"); err != nil {
		return err
	}
	auth, err := handlers.NewAuth(keys)
	if err != nil {
		return err
	}
	// Runtime keys (created through the admin API, kept in the ledger
	// database) authenticate here too, from the app's in-memory snapshot.
	appIface, err := ctx.App("modelgate")
	if err != nil {
		return fmt.Errorf("loading modelgate app: %v", err)
	}
	controls := appIface.(*App).Controls()
	auth.WithRuntime(controls)
	var workspaces []string
	seen := map[string]bool{}
	for _, k := range keys {
		if k.Workspace != "" && !seen[k.Workspace] {
			seen[k.Workspace] = true
			workspaces = append(workspaces, k.Workspace)
		}
	}
	controls.RegisterStatic(auth.Identities(), workspaces)
	a.auth = auth
	return nil
}

// ServeHTTP authenticates and passes the request on with its identity.
func (a *Auth) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	if handlers.IsPublicPath(r) {
		return next.ServeHTTP(w, r)
	}
	id, apiErr := a.auth.Identify(r)
	if apiErr != nil {
		apiErr.Write(w, handlers.ClientFormat(r))
		return nil
	}
	ctx := handlers.WithIdentity(r.Context(), id)
	caddyhttp.SetVar(ctx, "llm.key_id", id.KeyID)
	caddyhttp.SetVar(ctx, "llm.workspace", id.Workspace)
	caddyhttp.SetVar(ctx, "llm.role", string(id.Role))
	// Caddy's access log fills user_id from this placeholder, as it does
	// for basic_auth users.
	if repl, ok := ctx.Value(caddy.ReplacerCtxKey).(*caddy.Replacer); ok {
		repl.Set("http.auth.user.id", id.KeyID)
	}
	return next.ServeHTTP(w, r.WithContext(ctx))
}

func parseAuth(h httpcaddyfile.Helper) (caddyhttp.MiddlewareHandler, error) {
	a := new(Auth)
	return a, a.UnmarshalCaddyfile(h.Dispenser)
}

// UnmarshalCaddyfile parses:
//
//	llm_auth {
//		key {env.ALICE_KEY} {
//			id alice
//			workspace frontend
//			models claude local
//		}
//		key {env.CI_KEY}
//		admin_key {env.GATEWAY_ADMIN_KEY}
//	}
func (a *Auth) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next()
	if d.NextArg() {
		return d.ArgErr()
	}
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		opt := d.Val()
		switch opt {
		case "key", "admin_key":
			var k KeyConfig
			if !d.NextArg() {
				return d.Errf("%s: missing the key, e.g. %s {env.NAME}", opt, opt)
			}
			k.Key = d.Val()
			if d.NextArg() {
				// Never echo what may be a secret.
				return d.Errf("%s: too many arguments; options go in a block", opt)
			}
			for sub := d.Nesting(); d.NextBlock(sub); {
				switch d.Val() {
				case "id":
					if !d.AllArgs(&k.ID) {
						return d.ArgErr()
					}
				case "workspace":
					if !d.AllArgs(&k.Workspace) {
						return d.ArgErr()
					}
				case "models":
					k.Models = d.RemainingArgs()
					if len(k.Models) == 0 {
						return d.Err("models: list at least one alias")
					}
				default:
					return d.Errf("unrecognized %s option %q (known: id, workspace, models)", opt, d.Val())
				}
			}
			if opt == "key" {
				a.Keys = append(a.Keys, k)
			} else {
				a.AdminKeys = append(a.AdminKeys, k)
			}
		default:
			return d.Errf("unrecognized llm_auth option %q (known: key, admin_key)", opt)
		}
	}
	return nil
}

// Interface guards.
var (
	_ caddy.Provisioner           = (*Auth)(nil)
	_ caddyhttp.MiddlewareHandler = (*Auth)(nil)
	_ caddyfile.Unmarshaler       = (*Auth)(nil)
)
