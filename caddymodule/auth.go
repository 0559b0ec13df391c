package caddymodule

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"

	auditlog "github.com/modelgate/modelgate/audit"
	"github.com/modelgate/modelgate/breaker"
	"github.com/modelgate/modelgate/handlers"
	"github.com/modelgate/modelgate/identity"
	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/money"
	"github.com/modelgate/modelgate/policy"
	"github.com/modelgate/modelgate/providers"
	"github.com/modelgate/modelgate/scim"
	"github.com/modelgate/modelgate/upstream"
	"github.com/modelgate/modelgate/workctx"
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
	// Workspaces set limits shared by every key in a workspace.
	Workspaces []WorkspaceConfig `json:"workspaces,omitempty"`
	// AdminPaths are paths only admin keys may call on the site, matched
	// as Caddy's path matcher does (case-insensitive, cleaned); other
	// keys get 403. Default: /metrics, where a `metrics` handler would
	// show every key's and alias's counters to any valid key.
	AdminPaths []string `json:"admin_paths,omitempty"`
	// OIDC signs people in with the company's identity provider: the
	// dashboard's sessions and the per-person keys of `caddy modelgate
	// login`.
	OIDC *OIDCConfig `json:"oidc,omitempty"`
	// Groups map the provider's groups to workspace, role, models and
	// limits, in order.
	Groups []GroupConfig `json:"groups,omitempty"`

	// SCIMToken is the bearer token an identity provider presents to
	// /scim/v2 (normally {env.SCIM_TOKEN}); empty: no SCIM endpoint.
	SCIMToken string `json:"scim_token,omitempty"`

	auth       *policy.Auth
	adminPaths policy.PathSet
	identity   *identity.Handler
	scim       *scim.Handler
	// site is the site's route table: who serves a path (the sign-in and
	// SCIM are this module's), and the family a refusal is written in.
	site *handlers.Site
}

// OIDCConfig is the `oidc { … }` block. Issuer, ClientID and
// ClientSecret take placeholders ({env.NAME}), resolved at provision.
type OIDCConfig struct {
	Issuer       string         `json:"issuer"`
	ClientID     string         `json:"client_id"`
	ClientSecret string         `json:"client_secret,omitempty"`
	GroupsClaim  string         `json:"groups_claim,omitempty"`
	Scopes       []string       `json:"scopes,omitempty"`
	SessionTTL   caddy.Duration `json:"session_ttl,omitempty"`
	KeyTTL       caddy.Duration `json:"key_ttl,omitempty"`
	Name         string         `json:"name,omitempty"`
	RedirectURL  string         `json:"redirect_url,omitempty"`
}

// GroupConfig is one `group <idp group> { … }` rule.
type GroupConfig struct {
	Name      string        `json:"name"`
	Workspace string        `json:"workspace,omitempty"`
	Role      string        `json:"role,omitempty"`
	Models    []string      `json:"models,omitempty"`
	Limits    *LimitsConfig `json:"limits,omitempty"`
	// Leads (emails or subjects) approve or deny the spend limit
	// increase requests of the group's members.
	Leads []string `json:"leads,omitempty"`
	// Downgrade is `at_cap downgrade <alias>`: past a member's budget,
	// requests go to that free alias; "" (`at_cap refuse`) refuses them.
	Downgrade string `json:"downgrade,omitempty"`
	// DowngradeBound (`max_price <in> <out> allowance <dollars>` after the
	// alias) lets Downgrade be a priced alias within it.
	DowngradeBound *ledger.DowngradeBound `json:"downgrade_bound,omitempty"`
}

// Identity is the sign-in handler, nil without an oidc block: the
// integrator wires its Auditor and SCIM's group resolution through it.
func (a *Auth) Identity() *identity.Handler { return a.identity }

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
	// MCP optionally restricts the MCP servers and tools this key may
	// use: entries "server" or "server/tool".
	MCP []string `json:"mcp,omitempty"`
	// Limits are the key's budgets and rates.
	Limits *LimitsConfig `json:"limits,omitempty"`
}

// WorkspaceConfig is a workspace's shared limits.
type WorkspaceConfig struct {
	Name   string        `json:"name"`
	Limits *LimitsConfig `json:"limits,omitempty"`
	// MCP optionally restricts the MCP servers and tools the workspace's
	// keys may use ("server" or "server/tool"); a key gets what both its
	// own list and its workspace's allow.
	MCP []string `json:"mcp,omitempty"`
	// CountAgentReported makes the costs its keys' coding agents report
	// (POST /v1/logs) count against its budgets, each bounded by its
	// tokens at list price; without it they are reports only.
	CountAgentReported bool `json:"count_agent_reported,omitempty"`
}

// LimitsConfig are budgets in cents and rates. An absent budget is none,
// and a budget of 0 admits no paid use; zero rates are no limit.
type LimitsConfig struct {
	BudgetCents        *int64 `json:"budget_cents,omitempty"`
	BudgetPeriod       string `json:"budget_period,omitempty"`
	SoftBudgetCents    int64  `json:"soft_budget_cents,omitempty"`
	SessionBudgetCents *int64 `json:"session_budget_cents,omitempty"`
	RPM                int64  `json:"rpm,omitempty"`
	TPM                int64  `json:"tpm,omitempty"`
	MaxParallel        int64  `json:"max_parallel,omitempty"`
	// MCPApproval adds MCP servers ("server") or tools ("server/tool")
	// whose calls wait for a person's approval (docs/mcp-approvals.md).
	MCPApproval []string `json:"mcp_approval,omitempty"`
	// MCPToolSearch gives the MCP gateway's small tool list: a search tool
	// and a call tool instead of every tool.
	MCPToolSearch bool `json:"mcp_tool_search,omitempty"`
	// Breaker watches the agent sessions for loops and runaway spend.
	Breaker *ledger.BreakerRules `json:"breaker,omitempty"`
}

func (l *LimitsConfig) ledger(models []string) ledger.Limits {
	if l == nil {
		return ledger.Limits{Models: models}
	}
	return ledger.Limits{Models: models, BudgetCents: l.BudgetCents, BudgetPeriod: l.BudgetPeriod, SoftBudgetCents: l.SoftBudgetCents,
		SessionBudgetCents: l.SessionBudgetCents, RPM: l.RPM, TPM: l.TPM, MaxParallel: l.MaxParallel, MCPApproval: l.MCPApproval,
		MCPToolSearch: l.MCPToolSearch, Breaker: l.Breaker}
}

// validate bounds the amounts of a JSON config, which does not pass
// through the Caddyfile's parsing.
func (l *LimitsConfig) validate() error {
	if l == nil {
		return nil
	}
	for name, c := range map[string]*int64{"budget_cents": l.BudgetCents, "soft_budget_cents": &l.SoftBudgetCents, "session_budget_cents": l.SessionBudgetCents} {
		if c != nil && (*c < 0 || *c > money.MaxBudgetCents) {
			return fmt.Errorf("%s: %d is not from 0 to %d cents ($%d)", name, *c, money.MaxBudgetCents, money.MaxBudgetCents/100)
		}
	}
	if l.Breaker != nil {
		return breaker.Validate(l.Breaker)
	}
	return nil
}

// parseLimit reads one limit option into l; ok is false for an option that
// is not a limit.
func parseLimit(d *caddyfile.Dispenser, l *LimitsConfig) (ok bool, err error) {
	opt := d.Val()
	dollars := func() (int64, error) {
		if !d.NextArg() {
			return 0, d.Errf("%s: give an amount in US dollars, e.g. %s 50", opt, opt)
		}
		c, perr := money.ParseDollars(d.Val())
		if perr != nil {
			return 0, d.Errf("%s: %v", opt, perr)
		}
		return c, nil
	}
	count := func() (int64, error) {
		var s string
		if !d.AllArgs(&s) {
			return 0, d.ArgErr()
		}
		n, perr := strconv.ParseInt(s, 10, 64)
		if perr != nil || n < 1 {
			return 0, d.Errf("%s: %q is not a positive whole number", opt, s)
		}
		return n, nil
	}
	switch opt {
	case "budget":
		var c int64
		if c, err = dollars(); err != nil {
			return true, err
		}
		l.BudgetCents = &c
		if !d.NextArg() {
			return true, d.Err("budget: give a period after the amount: daily, weekly, monthly or total")
		}
		switch l.BudgetPeriod = d.Val(); l.BudgetPeriod {
		case "daily", "weekly", "monthly", "total":
		default:
			return true, d.Errf("budget: period %q is not daily, weekly, monthly or total", l.BudgetPeriod)
		}
		if d.NextArg() {
			return true, d.ArgErr()
		}
	case "soft_budget":
		// An alert at $0 would say nothing: a soft budget is a cent or more.
		if l.SoftBudgetCents, err = dollars(); err == nil && l.SoftBudgetCents == 0 {
			err = d.Err("soft_budget: must be at least 0.01; leave it out for none")
		}
	case "session_budget":
		var c int64
		if c, err = dollars(); err == nil {
			l.SessionBudgetCents = &c
		}
	case "rpm":
		l.RPM, err = count()
	case "tpm":
		l.TPM, err = count()
	case "max_parallel":
		l.MaxParallel, err = count()
	case "mcp_tool_search":
		l.MCPToolSearch = true
		if d.NextArg() {
			err = d.Err("mcp_tool_search: takes no value; give it alone to offer a search tool instead of every MCP tool")
		}
	case "mcp_approval":
		if l.MCPApproval = d.RemainingArgs(); len(l.MCPApproval) == 0 {
			err = d.Err("mcp_approval: list at least one MCP server or server/tool whose calls need approval, e.g. mcp_approval prod github/merge_pull_request")
		}
	case "breaker":
		l.Breaker, err = parseBreaker(d)
	default:
		return false, nil
	}
	if err == nil && (opt == "soft_budget" || opt == "session_budget") && d.NextArg() {
		err = d.ArgErr()
	}
	return true, err
}

// CaddyModule returns the Caddy module information.
func (Auth) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{ID: "http.handlers.llm_auth", New: func() caddy.Module { return new(Auth) }}
}

// Provision resolves the key placeholders.
func (a *Auth) Provision(ctx caddy.Context) error {
	a.site = handlers.NewSite()
	repl := caddy.NewReplacer()
	var keys []policy.Key
	add := func(list []KeyConfig, admin bool, field string) error {
		for i, k := range list {
			secret, err := repl.ReplaceOrErr(k.Key, true, true)
			if err != nil {
				// The error names the placeholder, not a value.
				return fmt.Errorf("%s[%d]: %v", field, i, err)
			}
			if err := k.Limits.validate(); err != nil {
				return fmt.Errorf("%s[%d]: limits: %v", field, i, err)
			}
			id := k.ID
			if id == "" && admin {
				id = "admin"
				if len(list) > 1 {
					id = fmt.Sprintf("admin-%d", i+1)
				}
			}
			keys = append(keys, policy.Key{Secret: secret, ID: id, Workspace: k.Workspace, Models: k.Models, MCP: k.MCP, Admin: admin,
				Limits: k.Limits.ledger(nil)})
		}
		return nil
	}
	if err := add(a.Keys, false, "keys"); err != nil {
		return err
	}
	if err := add(a.AdminKeys, true, "admin_keys"); err != nil {
		return err
	}
	auth, err := policy.NewAuth(keys)
	if err != nil {
		return err
	}
	adminPaths := a.AdminPaths
	if len(adminPaths) == 0 {
		adminPaths = []string{"/metrics"}
	}
	for i, p := range adminPaths {
		if !strings.HasPrefix(p, "/") {
			return fmt.Errorf("admin_paths[%d]: %q is not a path; write it with its leading slash, e.g. /metrics", i, p)
		}
	}
	a.adminPaths = policy.NewPathSet(adminPaths)
	// Runtime keys (created through the admin API, kept in the ledger
	// database) authenticate here too, from the app's in-memory snapshot.
	appIface, err := ctx.App("modelgate")
	if err != nil {
		return fmt.Errorf("loading modelgate app: %v", err)
	}
	controls := appIface.(*App).Controls()
	auth.WithRuntime(controls)
	if a.SCIMToken != "" {
		token, err := repl.ReplaceOrErr(a.SCIMToken, true, true)
		if err != nil {
			return fmt.Errorf("scim_token: %v", err)
		}
		if len(token) < 16 {
			return fmt.Errorf("scim_token: the token is shorter than 16 characters; generate one with `openssl rand -hex 32` and set it with scim_token {env.SCIM_TOKEN}")
		}
		a.scim = &scim.Handler{Token: token, Source: controls, Audit: appIface.(*App).Audit(), Keys: scim.ControlKeys{Store: controls}}
	}
	var workspaces []string
	limits := map[string]ledger.Limits{}
	for _, ws := range a.Workspaces {
		if err := ws.Limits.validate(); err != nil {
			return fmt.Errorf("workspace %s: limits: %v", ws.Name, err)
		}
		workspaces = append(workspaces, ws.Name)
		l := ws.Limits.ledger(nil)
		l.MCP, l.CountAgentReported = ws.MCP, ws.CountAgentReported
		limits[ws.Name] = l
	}
	for _, k := range keys {
		if _, seen := limits[k.Workspace]; k.Workspace != "" && !seen {
			workspaces = append(workspaces, k.Workspace)
			limits[k.Workspace] = ledger.Limits{}
		}
	}
	site := siteOf(ctx)
	if err := controls.RegisterStatic(site, auth.Identities(), workspaces, limits); err != nil {
		return err
	}
	// Batches and the admin API keep sites apart; the ledger's records,
	// key budgets and api_key spend limits know a key by its id alone.
	// Admin keys (each site's is "admin" by default) spend nothing.
	for _, id := range auth.Identities() {
		if other := controls.StaticElsewhere(site, id.KeyID); len(other) > 0 && id.Role != policy.RoleAdmin {
			ctx.Logger().Warn("a key id is declared on more than one site; usage reports, key budgets and api_key spend limits count them as one key: give different keys different ids",
				zap.String("key_id", id.KeyID), zap.String("site", site), zap.Strings("other_sites", other))
		}
	}
	a.auth = auth
	return a.provisionIdentity(ctx, repl, controls, appIface.(*App))
}

// provisionIdentity builds the OIDC relying party. It makes no network
// call: a provider that is down does not stop the gateway.
func (a *Auth) provisionIdentity(ctx caddy.Context, repl *caddy.Replacer, controls *policy.Controls, app *App) error {
	if a.OIDC == nil {
		if len(a.Groups) > 0 {
			return fmt.Errorf("group %s: group rules apply to people signed in with oidc; add an oidc { issuer …; client_id … } block", a.Groups[0].Name)
		}
		return nil
	}
	o := a.OIDC
	resolve := func(field, v string) (string, error) {
		out, err := repl.ReplaceOrErr(v, true, true)
		if err != nil {
			return "", fmt.Errorf("oidc %s: %v", field, err)
		}
		return out, nil
	}
	cfg := identity.Config{GroupsClaim: o.GroupsClaim, Scopes: o.Scopes, SessionTTL: time.Duration(o.SessionTTL),
		KeyTTL: time.Duration(o.KeyTTL), Name: o.Name, RedirectURL: o.RedirectURL}
	var err error
	if cfg.Issuer, err = resolve("issuer", o.Issuer); err != nil {
		return err
	}
	if cfg.ClientID, err = resolve("client_id", o.ClientID); err != nil {
		return err
	}
	if o.ClientSecret != "" {
		if cfg.ClientSecret, err = resolve("client_secret", o.ClientSecret); err != nil {
			return err
		}
		if cfg.ClientSecret == "" {
			return errors.New("oidc client_secret: the placeholder resolved to nothing; set the environment variable it names")
		}
	}
	leads, downgrades := map[string][]string{}, map[string]groupDowngrade{}
	if appIface, err := ctx.App("modelgate"); err == nil {
		defer appIface.(*App).setGroupLeads(leads)
	}
	for _, g := range a.Groups {
		var bound ledger.DowngradeBound
		if g.DowngradeBound != nil {
			bound = *g.DowngradeBound
		}
		if g.Downgrade != "" {
			downgrades[g.Name] = groupDowngrade{g.Downgrade, bound}
		}
		if len(g.Leads) > 0 {
			leads[g.Name] = g.Leads
		}
		rule := identity.Group{Name: g.Name, Workspace: g.Workspace, Models: g.Models, Downgrade: g.Downgrade, DowngradeBound: bound}
		if g.Role != "" {
			if rule.Role, err = identity.ParseRole(g.Role); err != nil {
				return fmt.Errorf("group %s: %v", g.Name, err)
			}
		}
		if err := g.Limits.validate(); err != nil {
			return fmt.Errorf("group %s: limits: %v", g.Name, err)
		}
		rule.Limits = g.Limits.ledger(nil)
		cfg.Groups = append(cfg.Groups, rule)
	}
	if app != nil && app.downgrades != nil {
		if err := app.downgrades.addGroups(downgrades); err != nil {
			return err
		}
	}
	log := ctx.Logger(a)
	audit := identity.AuditFunc(func(rctx context.Context, e identity.AuditEvent) {
		fields := []zap.Field{zap.String("actor", e.Actor), zap.String("action", e.Action), zap.String("target", e.Target),
			zap.String("source", e.Source), zap.Time("time", e.Time)}
		for k, v := range e.Fields {
			fields = append(fields, zap.String(k, v))
		}
		log.Info("audit", fields...)
		if app != nil && app.Audit() != nil {
			app.Audit().Record(rctx, auditlog.Event(e))
		}
	})
	h, err := identity.New(cfg, controls, audit)
	if err != nil {
		return err
	}
	a.identity = h
	h.SetUnavailable(func(err error) { log.Warn("identity provider unavailable", zap.Error(err)) })
	if app != nil {
		h.SetBudgets(app.Budgets())
	}
	if a.scim != nil {
		h.SetDirectory(scimDirectory{a.scim})
	}
	if a.scim != nil && len(cfg.Groups) > 0 {
		// SCIM group changes move a person's keys by the same rules as
		// sign-in. Without rules, Resolve would clear their settings.
		groups := identity.Groups(cfg.Groups)
		a.scim.Keys = scim.ControlKeys{Store: controls, Resolve: func(gs []string) scim.Grant {
			g := groups.Resolve(gs)
			limits, budget := g.Split()
			return scim.Grant{OK: g.OK, Workspace: g.Workspace, Limits: limits, Groups: ledger.GroupLines(g.Matched), Budget: budget, Role: string(g.Role)}
		}}
	}
	return nil
}

// ServeHTTP authenticates and passes the request on with its identity.
func (a *Auth) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	workctx.ScrubHeader(r.Header) // before the access log can print a repository URL's credentials
	site := a.site
	if site == nil {
		// An Auth made without Provision (a test): the same table.
		site = handlers.NewSite()
	}
	owner := site.Owner(r)
	if a.identity != nil && owner == handlers.OwnerOIDC {
		if presented := site.PresentedKey(r); presented != "" && r.URL.Path == identity.StatusPath {
			// The status shows an admin why the provider cannot be used.
			if id, apiErr := a.auth.Identify(presented); apiErr == nil {
				r = r.WithContext(policy.WithIdentity(r.Context(), id))
			}
		}
		a.identity.ServeHTTP(w, r)
		return nil
	}
	if a.identity == nil && r.URL.Path == identity.StatusPath && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
		// The dashboard asks before anyone signs in whether to offer an
		// identity provider; "none" is an answer, not a missing key.
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"enabled":false}`))
		return nil
	}
	if site.Public(r) {
		return next.ServeHTTP(w, r)
	}
	if a.scim != nil && owner == handlers.OwnerSCIM {
		// SCIM has its own bearer token, not a gateway key.
		a.scim.ServeHTTP(w, r)
		return nil
	}
	presented := site.PresentedKey(r)
	if presented == "" && a.identity != nil {
		// A person's dashboard session; a key, when one is presented,
		// always decides instead, so no session can lock a key out.
		id, handled := a.identity.Authenticate(w, r)
		if handled {
			return nil
		}
		if id != nil {
			return a.pass(w, r, next, id, nil, site)
		}
	}
	id, apiErr := a.auth.Identify(presented)
	if apiErr != nil {
		if policy.IsBrowserRoot(r) {
			// A person opening the site: the dashboard signs them in.
			http.Redirect(w, r, policy.UIPath, http.StatusFound)
			return nil
		}
		if a.identity != nil && site.ProtectedResource(r) {
			a.identity.Challenge(w, r, presented != "")
		}
		site.WriteError(w, r, apiErr)
		return nil
	}
	if r.Header.Get(upstream.SeatKeyHeader) != "" {
		if r, apiErr = handlers.SeatRequest(r, a.auth); apiErr != nil {
			site.WriteError(w, r, apiErr)
			return nil
		}
	}
	return a.pass(w, r, next, id, a.auth, site)
}

// pass sends an authenticated request on with its identity and, for a
// key, the resolver that found it: what is served on the request later
// (a WebSocket's turns) identifies the key again through it, the same
// path as this request.
func (a *Auth) pass(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler, id *policy.Identity, res policy.Resolver, site *handlers.Site) error {
	if id.Role != policy.RoleAdmin && a.adminPaths.Match(r) {
		site.WriteError(w, r, &providers.APIError{Status: http.StatusForbidden, Code: "admin_only",
			Message: r.URL.Path + " needs an admin key on this site (llm_auth admin_paths)"})
		return nil
	}
	ctx := policy.WithIdentity(r.Context(), id)
	if res != nil {
		ctx = policy.WithResolver(ctx, res)
	}
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
//		admin_paths /metrics
//		scim_token {env.SCIM_TOKEN}
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
				case "mcp":
					k.MCP = d.RemainingArgs()
					if len(k.MCP) == 0 {
						return d.Err("mcp: list at least one MCP server or server/tool, e.g. mcp everything fs/read_file")
					}
				default:
					if k.Limits == nil {
						k.Limits = &LimitsConfig{}
					}
					if ok, err := parseLimit(d, k.Limits); err != nil {
						return err
					} else if !ok {
						return d.Errf("unrecognized %s option %q (known: id, workspace, models, budget, soft_budget, session_budget, rpm, tpm, max_parallel, breaker)", opt, d.Val())
					}
				}
			}
			if opt == "key" {
				a.Keys = append(a.Keys, k)
			} else {
				a.AdminKeys = append(a.AdminKeys, k)
			}
		case "workspace":
			var ws WorkspaceConfig
			if !d.NextArg() {
				return d.Err("workspace: give its name, e.g. workspace frontend { budget 500 monthly }")
			}
			ws.Name = d.Val()
			if d.NextArg() {
				return d.ArgErr()
			}
			for sub := d.Nesting(); d.NextBlock(sub); {
				if d.Val() == "mcp" {
					if ws.MCP = d.RemainingArgs(); len(ws.MCP) == 0 {
						return d.Err("mcp: list at least one MCP server or server/tool, e.g. mcp everything fs/read_file")
					}
					continue
				}
				if d.Val() == "count_agent_reported" {
					if d.NextArg() {
						return d.Err("count_agent_reported: takes no value; leave it out to keep agent-reported costs out of budgets")
					}
					ws.CountAgentReported = true
					continue
				}
				if ws.Limits == nil {
					ws.Limits = &LimitsConfig{}
				}
				if ok, err := parseLimit(d, ws.Limits); err != nil {
					return err
				} else if !ok {
					return d.Errf("unrecognized workspace option %q (known: budget, soft_budget, session_budget, rpm, tpm, max_parallel, breaker, mcp, count_agent_reported)", d.Val())
				}
			}
			a.Workspaces = append(a.Workspaces, ws)
		case "admin_paths":
			paths := d.RemainingArgs()
			if len(paths) == 0 {
				return d.Err("admin_paths: list at least one path, e.g. admin_paths /metrics")
			}
			a.AdminPaths = append(a.AdminPaths, paths...)
		case "oidc":
			if err := a.parseOIDC(d); err != nil {
				return err
			}
		case "group":
			if err := a.parseGroup(d); err != nil {
				return err
			}
		case "scim_token":
			if !d.NextArg() {
				return d.Err("scim_token: give the token, e.g. scim_token {env.SCIM_TOKEN}")
			}
			a.SCIMToken = d.Val()
			if d.NextArg() {
				return d.Err("scim_token: takes one value")
			}
		default:
			return d.Errf("unrecognized llm_auth option %q (known: key, admin_key, workspace, admin_paths, oidc, group, scim_token)", opt)
		}
	}
	return nil
}

// parseOIDC reads `oidc { issuer …; client_id …; client_secret …; … }`.
func (a *Auth) parseOIDC(d *caddyfile.Dispenser) error {
	if a.OIDC != nil {
		return d.Err("oidc: given twice; one identity provider per llm_auth")
	}
	if d.NextArg() {
		return d.ArgErr()
	}
	o := &OIDCConfig{}
	one := func(dst *string) error {
		opt := d.Val()
		if !d.NextArg() {
			return d.Errf("oidc %s: missing its value", opt)
		}
		*dst = d.Val()
		if d.NextArg() {
			return d.Errf("oidc %s: takes one value", opt)
		}
		return nil
	}
	ttl := func(dst *caddy.Duration, least time.Duration) error {
		opt := d.Val()
		var s string
		if err := one(&s); err != nil {
			return err
		}
		v, err := caddy.ParseDuration(s)
		if err != nil || v < least {
			return d.Errf("oidc %s: %q is not a duration of %v or more, e.g. 12h", opt, s, least)
		}
		*dst = caddy.Duration(v)
		return nil
	}
	for sub := d.Nesting(); d.NextBlock(sub); {
		var err error
		switch opt := d.Val(); opt {
		case "issuer":
			err = one(&o.Issuer)
		case "client_id":
			err = one(&o.ClientID)
		case "client_secret":
			err = one(&o.ClientSecret)
		case "groups_claim":
			err = one(&o.GroupsClaim)
		case "name":
			err = one(&o.Name)
		case "redirect_url":
			err = one(&o.RedirectURL)
		case "scopes":
			if o.Scopes = d.RemainingArgs(); len(o.Scopes) == 0 {
				err = d.Err("oidc scopes: list them, e.g. scopes openid email profile groups offline_access")
			}
		case "session_ttl":
			err = ttl(&o.SessionTTL, time.Minute)
		case "key_ttl":
			// Short keys are for trying renewal out.
			err = ttl(&o.KeyTTL, 10*time.Second)
		default:
			err = d.Errf("unrecognized oidc option %q (known: issuer, client_id, client_secret, groups_claim, scopes, session_ttl, key_ttl, name, redirect_url)", opt)
		}
		if err != nil {
			return err
		}
	}
	if o.Issuer == "" || o.ClientID == "" {
		return d.Err("oidc: issuer and client_id are required, e.g. oidc { issuer https://example.okta.com; client_id …; client_secret {env.OIDC_CLIENT_SECRET} }")
	}
	a.OIDC = o
	return nil
}

// parseGroup reads `group <idp group> { workspace …; role …; models …; budget … }`.
func (a *Auth) parseGroup(d *caddyfile.Dispenser) error {
	var g GroupConfig
	if !d.NextArg() {
		return d.Err("group: give the identity provider's group name, e.g. group engineering { workspace eng; role member }")
	}
	g.Name = d.Val()
	if d.NextArg() {
		return d.ArgErr()
	}
	for _, other := range a.Groups {
		if other.Name == g.Name {
			return d.Errf("group %s: given twice", g.Name)
		}
	}
	for sub := d.Nesting(); d.NextBlock(sub); {
		switch opt := d.Val(); opt {
		case "workspace":
			if !d.AllArgs(&g.Workspace) {
				return d.ArgErr()
			}
		case "role":
			if !d.AllArgs(&g.Role) {
				return d.ArgErr()
			}
			if _, err := identity.ParseRole(g.Role); err != nil {
				return d.Errf("group %s: %v", g.Name, err)
			}
		case "models":
			if g.Models = d.RemainingArgs(); len(g.Models) == 0 {
				return d.Err("models: list at least one alias")
			}
		case "at_cap":
			args := d.RemainingArgs()
			switch {
			case len(args) == 1 && args[0] == "refuse":
				g.Downgrade, g.DowngradeBound = "", nil
			case len(args) >= 2 && args[0] == "downgrade":
				g.Downgrade = args[1]
				bound, err := parseDowngradeBound(args[2:])
				if err != nil {
					return d.Errf("group %s: at_cap downgrade %s: %v", g.Name, args[1], err)
				}
				g.DowngradeBound = bound
			default:
				return d.Errf("group %s: at_cap: want `at_cap refuse` or `at_cap downgrade <alias> [max_price <input> <output> allowance <dollars>]` (a free alias, or a priced one under a price bound, members' requests go to past their budget)", g.Name)
			}
		case "leads":
			if g.Leads = d.RemainingArgs(); len(g.Leads) == 0 {
				return d.Errf("group %s: leads: name at least one person (their email or subject), e.g. leads alice@example.com", g.Name)
			}
		default:
			if g.Limits == nil {
				g.Limits = &LimitsConfig{}
			}
			if ok, err := parseLimit(d, g.Limits); err != nil {
				return err
			} else if !ok {
				return d.Errf("unrecognized group option %q (known: workspace, role, models, leads, at_cap, budget, soft_budget, session_budget, rpm, tpm, max_parallel, mcp_approval, mcp_tool_search, breaker)", opt)
			}
		}
	}
	a.Groups = append(a.Groups, g)
	return nil
}

// Interface guards.
var (
	_ caddy.Provisioner           = (*Auth)(nil)
	_ caddyhttp.MiddlewareHandler = (*Auth)(nil)
	_ caddyfile.Unmarshaler       = (*Auth)(nil)
)

// scimDirectory lets sign-in consult the people SCIM provisioned: a
// deactivated person is refused, and pushed groups decide.
type scimDirectory struct{ h *scim.Handler }

func (d scimDirectory) Lookup(ctx context.Context, email, subject string) (identity.DirectoryEntry, bool) {
	e, found := d.h.Lookup(ctx, email, subject)
	return identity.DirectoryEntry{Active: e.Active, Deleted: e.Deleted, Groups: e.Groups}, found
}
