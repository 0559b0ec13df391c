// Package admin is llm_admin's handler: the organization API in the shape
// of Anthropic's Admin API (the usage, cost and Claude Code reports, from
// the ledger or proxied; runtime keys and workspaces; coding-agent
// sessions) and the dashboard that drives it. It stands on the gateway's
// handlers package for the caller's Identity and the Controls registry;
// nothing below imports it.
package admin

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelgate/modelgate/audit"
	"github.com/modelgate/modelgate/breaker"
	"github.com/modelgate/modelgate/handlers"
	"github.com/modelgate/modelgate/internal/route"
	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/policy"
	"github.com/modelgate/modelgate/providers"
)

// Paths of the organization reports llm_admin answers.
const (
	UsageReportPath = "/v1/organizations/usage_report/messages"
	// MCPReportPath is the gateway's MCP tool-call report (no provider has
	// one, so proxy mode answers it from the ledger too).
	MCPReportPath  = "/v1/organizations/usage_report/mcp"
	CostReportPath = "/v1/organizations/cost_report"
	// SecretsReportPath is the secret firewall's detections per rule,
	// person, key and model (the gateway's own, answered from the ledger).
	SecretsReportPath = "/v1/organizations/secrets_report"
)

// AdminKeyPrefix starts every Anthropic organization admin key.
const AdminKeyPrefix = "sk-ant-admin"

// Handler answers the organization API: reports from the ledger (Upstream
// empty) or forwarded to the provider's admin API, the runtime keys and
// workspaces, the sessions list, and the dashboard.
type Handler struct {
	Store    ledger.Store     // ledger mode, when Upstream == ""
	Upstream string           // proxy mode: e.g. https://api.anthropic.com
	AdminKey string           // proxy mode secret; never logged or echoed
	Client   *http.Client     // proxy mode
	Now      func() time.Time // injectable clock; default time.Now
	// Controls are the runtime keys and workspaces the admin API manages.
	Controls *policy.Controls
	// Site names this handler's site among those registered in Controls:
	// the Caddyfile keys the API lists are that site's.
	Site string
	// Audit receives every admin action; nil records none.
	Audit audit.Recorder
	// Tickets finds ticket keys in branch names and pull request titles
	// for the work report; nil: ledger.DefaultTicketPattern.
	Tickets *regexp.Regexp
	// Spend is what the Spend Limits API stands on (spend_limits.go).
	Spend SpendLimits
	// Breaker is the loop breaker whose paused sessions the sessions API
	// shows and resumes; nil: none.
	Breaker *breaker.Breaker

	bufs      sync.Pool // *[]byte copy buffers for proxied bodies
	routeOnce sync.Once
	mux       *http.ServeMux
	siteOnce  sync.Once
	// site is the site's route table, which says what this handler owns.
	site *handlers.Site
}

// Match reports whether r is the admin handler's, as the site's route
// table says (handlers.Site): the organization API (its reports, and a 404
// for the paths it does not serve) and the dashboard's files, and a
// browser opening the site's root.
func (a *Handler) Match(r *http.Request) bool {
	switch a.owner(r) {
	case handlers.OwnerAdmin, handlers.OwnerDashboard, handlers.OwnerSpendLinks:
		return true
	}
	// A path that cleans to the organization API's ("//v1/organizations/…")
	// is answered in its family: a 404, as ServeHTTP answers any path
	// that is not canonical.
	if p := r.URL.Path; !route.Canonical(r.URL.EscapedPath()) && strings.HasPrefix(path.Clean("/"+p)+"/", "/v1/organizations/") {
		return true
	}
	return policy.IsBrowserRoot(r)
}

// owner is who the site's route table says serves r.
func (a *Handler) owner(r *http.Request) handlers.Owner {
	a.siteOnce.Do(func() { a.site = handlers.NewSite() })
	return a.site.Owner(r)
}

// ValidateAdminKey checks that key looks like an organization admin key,
// without ever printing it: a regular API key cannot read reports.
func ValidateAdminKey(key string) error {
	const fix = "the usage and cost reports need an organization admin key (sk-ant-admin...), " +
		"which an organization admin creates in the Console under organization settings → API keys"
	if key == "" {
		return errors.New("admin_api_key is empty: " + fix)
	}
	if !strings.HasPrefix(key, AdminKeyPrefix) {
		return errors.New("admin_api_key is not an admin key: " + fix)
	}
	return nil
}

// ServeHTTP serves the dashboard's files and the browser's redirect to it
// as they are, and the API through its routes (routes.go).
func (a *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	owner := a.owner(r)
	switch {
	case owner == handlers.OwnerSpendLinks:
		a.serveSpendLink(w, r)
	case owner == handlers.OwnerDashboard:
		serveUI(w, r)
	case policy.IsBrowserRoot(r):
		http.Redirect(w, r, policy.UIPath, http.StatusFound)
	case !route.Canonical(r.URL.EscapedPath()):
		// ServeMux would redirect to the cleaned path; no endpoint of
		// this API is named with dot segments or doubled slashes. Under
		// the keys and workspaces, only a caller who may manage them
		// learns that.
		if p := r.URL.Path; strings.HasPrefix(p, keysPath+"/") || strings.HasPrefix(p, workspacesPath+"/") {
			a.controls(noControlsEndpoint)(w, r)
			return
		}
		noEndpoint(w, r)
	default:
		a.routeOnce.Do(func() { a.mux = a.routes() })
		a.mux.ServeHTTP(w, r)
	}
}

// requireCaller refuses a request without an identity: llm_auth did not run.
func requireCaller(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if policy.IdentityFrom(r.Context()) == nil {
			fail(w, http.StatusUnauthorized, "missing or unknown API key")
			return
		}
		next(w, r)
	}
}

// reportCaller guards the three reports: any key may read the ledger's
// (cut to its own rows), only the admin key the provider's, which are the
// organization's.
func (a *Handler) reportCaller(next http.HandlerFunc) http.HandlerFunc {
	return requireCaller(func(w http.ResponseWriter, r *http.Request) {
		if !policy.IdentityFrom(r.Context()).ReadsAll() && a.Upstream != "" {
			fail(w, http.StatusForbidden, "usage and cost reports need the gateway's admin key")
			return
		}
		next(w, r)
	})
}

// report answers a usage or cost report: forwarded in proxy mode, else
// from the ledger.
func (a *Handler) report(w http.ResponseWriter, r *http.Request) {
	if a.Upstream != "" {
		a.proxy(w, r)
		return
	}
	a.fromLedger(w, r)
}

// claudeCode answers the Claude Code report: forwarded in proxy mode, else
// computed from the ledger.
func (a *Handler) claudeCode(w http.ResponseWriter, r *http.Request) {
	if a.Upstream != "" {
		a.proxy(w, r)
		return
	}
	a.serveClaudeCode(w, r)
}

// ownRows is the key filter a report runs with: an admin's or auditor's
// as asked, a regular key's always its own, whatever it asked, and a
// signed-in member's the keys minted for them.
func ownRows(r *http.Request, asked []string) []string {
	if id := policy.IdentityFrom(r.Context()); id != nil && !id.ReadsAll() {
		return append([]string{id.KeyID}, id.OwnKeys...)
	}
	return asked
}

func (a *Handler) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

func (a *Handler) fromLedger(w http.ResponseWriter, r *http.Request) {
	if a.Store == nil {
		fail(w, http.StatusInternalServerError, "usage ledger not configured")
		return
	}
	v, err := ledger.ParseRawQuery(r.URL.RawQuery)
	var body any
	switch {
	case err != nil:
	case r.URL.Path == UsageReportPath:
		var q ledger.ReportQuery
		if q, err = ledger.ParseUsageQuery(v, a.now()); err == nil {
			q.APIKeyIDs = ownRows(r, q.APIKeyIDs)
			body, err = ledger.UsageReport(r.Context(), a.Store, q)
		}
	case r.URL.Path == MCPReportPath:
		var q ledger.ReportQuery
		if q, err = ledger.ParseMCPQuery(v, a.now()); err == nil {
			q.APIKeyIDs = ownRows(r, q.APIKeyIDs)
			body, err = ledger.MCPReport(r.Context(), a.Store, q)
		}
	case r.URL.Path == SecretsReportPath:
		var q ledger.ReportQuery
		if q, err = ledger.ParseSecretsQuery(v, a.now()); err == nil {
			q.APIKeyIDs = ownRows(r, q.APIKeyIDs)
			body, err = ledger.SecretsReportFrom(r.Context(), a.Store, q)
		}
	default:
		var q ledger.ReportQuery
		if q, err = ledger.ParseCostQuery(v, a.now()); err == nil {
			q.APIKeyIDs = ownRows(r, q.APIKeyIDs)
			body, err = ledger.CostReport(r.Context(), a.Store, q)
		}
	}
	answerReport(w, r, body, err)
}

// answerReport writes a report computed from the ledger, or its error: a
// bad parameter as a 400 naming it, anything else as a 500 (nothing when
// the client left: nobody reads an answer). A HEAD gets the headers only.
func answerReport(w http.ResponseWriter, r *http.Request, body any, err error) {
	if pe, ok := errors.AsType[*ledger.ParamError](err); ok {
		writeError(w, &providers.APIError{Status: http.StatusBadRequest, Param: pe.Param, Message: pe.Error()})
		return
	}
	if err != nil {
		if r.Context().Err() == nil {
			fail(w, http.StatusInternalServerError, "reading the usage ledger failed")
		}
		return
	}
	b, err := json.Marshal(body)
	if err != nil {
		fail(w, http.StatusInternalServerError, "encoding the report failed")
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(b)
	}
}

// relayedHeaders are the upstream response headers worth passing on: the
// body's type, the provider's request id for support tickets, and
// rate-limit guidance.
var relayedHeaders = [...]string{"Content-Type", "Request-Id", "Retry-After"}

func (a *Handler) proxy(w http.ResponseWriter, r *http.Request) {
	target := strings.TrimRight(a.Upstream, "/") + r.URL.Path
	if r.URL.RawQuery != "" {
		target += "?" + r.URL.RawQuery // byte-for-byte: the provider parses its own query
	}
	req, err := http.NewRequestWithContext(r.Context(), r.Method, target, nil)
	if err != nil {
		fail(w, http.StatusInternalServerError, "admin upstream URL is invalid")
		return
	}
	req.Header.Set("x-api-key", a.AdminKey)
	req.Header.Set("anthropic-version", "2023-06-01")
	for _, b := range r.Header.Values("anthropic-beta") {
		req.Header.Add("anthropic-beta", b)
	}
	req.Header.Set("Accept", "application/json")
	client := a.Client
	if client == nil {
		// Never follow a redirect: Go drops Authorization across hosts but
		// would resend x-api-key, the admin key.
		client = &http.Client{Timeout: time.Minute, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	resp, err := client.Do(req)
	if err != nil {
		if r.Context().Err() != nil {
			return
		}
		// The error text names only the URL, which carries no secret, but the
		// client gains nothing from our network details either.
		fail(w, http.StatusBadGateway, fmt.Sprintf("admin upstream %s unreachable", hostOf(a.Upstream)))
		return
	}
	defer resp.Body.Close()
	for _, name := range relayedHeaders {
		if v := resp.Header.Values(name); len(v) > 0 {
			w.Header()[name] = v
		}
	}
	w.WriteHeader(resp.StatusCode)
	bp, _ := a.bufs.Get().(*[]byte)
	if bp == nil {
		b := make([]byte, 32<<10)
		bp = &b
	}
	defer a.bufs.Put(bp)
	rc := http.NewResponseController(w)
	buf := *bp
	for {
		n, rerr := resp.Body.Read(buf)
		if n > 0 {
			if _, err := w.Write(buf[:n]); err != nil {
				return
			}
			if err := rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
				return // client gone
			}
		}
		if rerr != nil {
			return
		}
	}
}

func hostOf(u string) string {
	s := u
	if i := strings.Index(s, "://"); i >= 0 {
		s = s[i+3:]
	}
	if i := strings.IndexAny(s, "/?#"); i >= 0 {
		s = s[:i]
	}
	if i := strings.LastIndexByte(s, '@'); i >= 0 {
		s = s[i+1:] // never echo userinfo
	}
	return s
}
