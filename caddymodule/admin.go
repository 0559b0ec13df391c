package caddymodule

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/modelgate/modelgate/handlers/admin"
	"github.com/modelgate/modelgate/ledger"
)

func init() {
	caddy.RegisterModule(Admin{})
	httpcaddyfile.RegisterHandlerDirective("llm_admin", parseAdmin)
	httpcaddyfile.RegisterDirectiveOrder("llm_admin", httpcaddyfile.After, "route")
}

// Admin serves the organization usage and cost reports in the provider's
// Admin API shape: computed from the gateway's ledger, or, with Upstream,
// proxied to the provider with the admin key kept server-side. Only admin
// keys may read them.
type Admin struct {
	// Upstream switches to proxy mode, e.g. https://api.anthropic.com.
	Upstream string `json:"upstream,omitempty"`
	// AdminAPIKey is the provider's organization admin key for proxy
	// mode, normally {env.ADMIN_API_KEY}. Clients never see it.
	AdminAPIKey string `json:"admin_api_key,omitempty"`
	// TicketPattern finds ticket keys in branch names and pull request
	// titles for the work report (a Go regular expression); default
	// [A-Z][A-Z0-9]+-[0-9]+ (ABC-123).
	TicketPattern string `json:"ticket_pattern,omitempty"`

	h         *admin.Handler
	transport *http.Transport
}

// CaddyModule returns the Caddy module information.
func (Admin) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{ID: "http.handlers.llm_admin", New: func() caddy.Module { return new(Admin) }}
}

// Provision selects the mode and checks the admin key's kind.
func (a *Admin) Provision(ctx caddy.Context) error {
	h := &admin.Handler{}
	// Keys and workspaces are the gateway's own in either mode.
	appIface, err := ctx.App("modelgate")
	if err != nil {
		return fmt.Errorf("loading modelgate app: %v", err)
	}
	h.Controls, h.Site = appIface.(*App).Controls(), siteOf(ctx)
	h.Audit = appIface.(*App).Audit()
	if a.TicketPattern != "" {
		if h.Tickets, err = admin.CompileTicketPattern(a.TicketPattern); err != nil {
			return fmt.Errorf("llm_admin ticket_pattern %q: %v; write a Go regular expression such as [A-Z][A-Z0-9]+-[0-9]+", a.TicketPattern, err)
		}
	}
	h.Spend = appIface.(*App).spendLimits()
	h.Breaker = appIface.(*App).Breaker()
	if a.Upstream == "" {
		if a.AdminAPIKey != "" {
			return fmt.Errorf("admin_api_key: only used with upstream (proxy mode); remove it or add upstream https://api.anthropic.com")
		}
		h.Store = appStore{appIface.(*App)}
		a.h = h
		return nil
	}
	up := strings.TrimRight(a.Upstream, "/")
	if !strings.HasPrefix(up, "https://") && !strings.HasPrefix(up, "http://") {
		return fmt.Errorf("upstream: want an http(s) URL such as https://api.anthropic.com, got %q", a.Upstream)
	}
	if a.AdminAPIKey == "" {
		return fmt.Errorf("admin_api_key: required with upstream; set admin_api_key {env.ADMIN_API_KEY}")
	}
	key, err := caddy.NewReplacer().ReplaceOrErr(a.AdminAPIKey, true, true)
	if err != nil {
		return fmt.Errorf("admin_api_key: %v", err)
	}
	if err := admin.ValidateAdminKey(key); err != nil {
		return fmt.Errorf("admin_api_key: %v", err)
	}
	a.transport = &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
		ForceAttemptHTTP2:     true,
		IdleConnTimeout:       2 * time.Minute,
		ResponseHeaderTimeout: time.Minute,
	}
	h.Upstream, h.AdminKey = up, key
	h.Client = &http.Client{Transport: a.transport, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	a.h = h
	return nil
}

// Cleanup closes idle connections to the provider.
func (a *Admin) Cleanup() error {
	if a.transport != nil {
		a.transport.CloseIdleConnections()
	}
	return nil
}

// ServeHTTP answers the report paths and passes every other path on.
func (a *Admin) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	if !a.h.Match(r) {
		return next.ServeHTTP(w, r)
	}
	a.h.ServeHTTP(w, r)
	return nil
}

func parseAdmin(h httpcaddyfile.Helper) (caddyhttp.MiddlewareHandler, error) {
	a := new(Admin)
	return a, a.UnmarshalCaddyfile(h.Dispenser)
}

// UnmarshalCaddyfile parses:
//
//	llm_admin {
//		upstream https://api.anthropic.com
//		admin_api_key {env.ADMIN_API_KEY}
//		ticket_pattern [A-Z][A-Z0-9]+-[0-9]+
//	}
func (a *Admin) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next()
	if d.NextArg() {
		return d.ArgErr()
	}
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		switch d.Val() {
		case "upstream":
			if a.Upstream != "" {
				return d.Err("upstream already specified")
			}
			if !d.AllArgs(&a.Upstream) {
				return d.ArgErr()
			}
		case "admin_api_key":
			if a.AdminAPIKey != "" {
				return d.Err("admin_api_key already specified")
			}
			if !d.NextArg() {
				return d.ArgErr()
			}
			a.AdminAPIKey = d.Val()
			if d.NextArg() {
				return d.Err("admin_api_key: too many arguments")
			}
		case "ticket_pattern":
			if a.TicketPattern != "" {
				return d.Err("ticket_pattern already specified")
			}
			if !d.NextArg() {
				return d.Err("ticket_pattern: want one regular expression, e.g. [A-Z][A-Z0-9]+-[0-9]+")
			}
			a.TicketPattern = d.Val()
			if d.NextArg() {
				return d.Err("ticket_pattern: too many arguments")
			}
		default:
			return d.Errf("unrecognized llm_admin option %q (known: upstream, admin_api_key, ticket_pattern)", d.Val())
		}
	}
	return nil
}

// Interface guards.
var (
	_ caddy.Provisioner           = (*Admin)(nil)
	_ caddy.CleanerUpper          = (*Admin)(nil)
	_ caddyhttp.MiddlewareHandler = (*Admin)(nil)
	_ caddyfile.Unmarshaler       = (*Admin)(nil)
)

// appStore reads the ledger of the app, which opens its store only when
// Caddy starts it, after handlers are provisioned.
type appStore struct{ app *App }

var errLedgerNotStarted = errors.New("the ledger is not open yet")

func (s appStore) store() (ledger.Store, error) {
	st := s.app.Store()
	if st == nil {
		return nil, errLedgerNotStarted
	}
	return st, nil
}

func (s appStore) Insert(ctx context.Context, recs []ledger.Record) error {
	st, err := s.store()
	if err != nil {
		return err
	}
	return st.Insert(ctx, recs)
}

func (s appStore) Query(ctx context.Context, f ledger.Filter) ([]ledger.Record, error) {
	st, err := s.store()
	if err != nil {
		return nil, err
	}
	return st.Query(ctx, f)
}

func (s appStore) Aggregate(ctx context.Context, f ledger.Filter, width time.Duration, dims []ledger.Dimension) ([]ledger.AggregateRow, error) {
	st, err := s.store()
	if err != nil {
		return nil, err
	}
	return st.Aggregate(ctx, f, width, dims)
}

// Close does nothing: the app owns the store.
func (appStore) Close() error { return nil }

func (s appStore) Sessions(ctx context.Context, f ledger.Filter, limit, offset int) ([]ledger.SessionRow, bool, error) {
	st, err := s.store()
	if err != nil {
		return nil, false, err
	}
	l, ok := st.(ledger.SessionLister)
	if !ok {
		return nil, false, errors.New("this ledger store lists no sessions")
	}
	return l.Sessions(ctx, f, limit, offset)
}

func (s appStore) DeleteAgentReported(ctx context.Context, sel ledger.AgentReportedSelector) (ledger.AgentReportedDeleted, error) {
	st, err := s.store()
	if err != nil {
		return ledger.AgentReportedDeleted{}, err
	}
	d, ok := st.(ledger.AgentReportedDeleter)
	if !ok {
		return ledger.AgentReportedDeleted{}, errors.New("this ledger store deletes no agent-reported usage")
	}
	return d.DeleteAgentReported(ctx, sel)
}

func (s appStore) ClaudeCodeDay(ctx context.Context, day time.Time, keys []string) ([]ledger.ClaudeCodeRow, error) {
	st, err := s.store()
	if err != nil {
		return nil, err
	}
	r, ok := st.(ledger.ClaudeCodeReporter)
	if !ok {
		return nil, errors.New("this ledger store has no claude_code report")
	}
	return r.ClaudeCodeDay(ctx, day, keys)
}

func (s appStore) OrganizationID(ctx context.Context) (string, error) {
	st, err := s.store()
	if err != nil {
		return "", err
	}
	r, ok := st.(ledger.ClaudeCodeReporter)
	if !ok {
		return "", errors.New("this ledger store has no claude_code report")
	}
	return r.OrganizationID(ctx)
}
