package handlers

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/providers"
)

// Paths of the organization reports llm_admin answers.
const (
	UsageReportPath = "/v1/organizations/usage_report/messages"
	CostReportPath  = "/v1/organizations/cost_report"
)

// AdminKeyPrefix starts every Anthropic organization admin key.
const AdminKeyPrefix = "sk-ant-admin"

// Admin answers the organization usage and cost reports, from the ledger
// (Upstream empty) or by forwarding to the provider's admin API.
type Admin struct {
	Store    ledger.Store     // ledger mode, when Upstream == ""
	Upstream string           // proxy mode: e.g. https://api.anthropic.com
	AdminKey string           // proxy mode secret; never logged or echoed
	Client   *http.Client     // proxy mode
	Now      func() time.Time // injectable clock; default time.Now
	// Controls are the runtime keys and workspaces the admin API manages.
	Controls *Controls

	bufs sync.Pool // *[]byte copy buffers for proxied bodies
}

// Match reports whether r is under the organization API, which the admin
// handler owns: its reports, and a 404 for the paths it does not serve.
func (a *Admin) Match(r *http.Request) bool {
	p := r.URL.Path
	return p == "/v1/organizations" || strings.HasPrefix(p, "/v1/organizations/") || isUIPath(p) || IsBrowserRoot(r)
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

func (a *Admin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if isUIPath(r.URL.Path) {
		serveUI(w, r)
		return
	}
	if IsBrowserRoot(r) {
		http.Redirect(w, r, UIPath, http.StatusFound)
		return
	}
	if a.serveControls(w, r) {
		return
	}
	if r.URL.Path == SessionsPath {
		a.serveSessions(w, r)
		return
	}
	if p := r.URL.Path; p != UsageReportPath && p != CostReportPath && p != ClaudeCodeReportPath {
		if len(p) > 200 {
			p = p[:200] + "…"
		}
		writeAnthropicError(w, http.StatusNotFound, "no endpoint for "+r.Method+" "+p+" on this gateway")
		return
	}
	id := IdentityFrom(r.Context())
	if id == nil {
		writeAnthropicError(w, http.StatusUnauthorized, "missing or unknown API key")
		return
	}
	if id.Role != RoleAdmin && a.Upstream != "" {
		// The provider's reports are the organization's: only the admin
		// key reads them. The ledger's can be cut to one key's rows.
		writeAnthropicError(w, http.StatusForbidden, "usage and cost reports need the gateway's admin key")
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeAnthropicError(w, http.StatusMethodNotAllowed, "method "+r.Method+" not allowed; use GET")
		return
	}
	if a.Upstream != "" {
		a.proxy(w, r)
		return
	}
	if r.URL.Path == ClaudeCodeReportPath {
		a.serveClaudeCode(w, r)
		return
	}
	a.fromLedger(w, r)
}

// ownRows is the key filter a report runs with: an admin's as asked, a
// regular key's always its own, whatever it asked.
func ownRows(r *http.Request, asked []string) []string {
	if id := IdentityFrom(r.Context()); id != nil && id.Role != RoleAdmin {
		return []string{id.KeyID}
	}
	return asked
}

func writeAnthropicError(w http.ResponseWriter, status int, msg string) {
	(&providers.APIError{Status: status, Message: msg}).Write(w, providers.FormatAnthropic)
}

func (a *Admin) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

func (a *Admin) fromLedger(w http.ResponseWriter, r *http.Request) {
	if a.Store == nil {
		writeAnthropicError(w, http.StatusInternalServerError, "usage ledger not configured")
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
	default:
		var q ledger.ReportQuery
		if q, err = ledger.ParseCostQuery(v, a.now()); err == nil {
			q.APIKeyIDs = ownRows(r, q.APIKeyIDs)
			body, err = ledger.CostReport(r.Context(), a.Store, q)
		}
	}
	if pe, ok := errors.AsType[*ledger.ParamError](err); ok {
		(&providers.APIError{Status: http.StatusBadRequest, Param: pe.Param, Message: pe.Error()}).
			Write(w, providers.FormatAnthropic)
		return
	}
	if err != nil {
		if r.Context().Err() != nil {
			return // the client left; nobody reads an answer
		}
		writeAnthropicError(w, http.StatusInternalServerError, "reading the usage ledger failed")
		return
	}
	b, err := json.Marshal(body)
	if err != nil {
		writeAnthropicError(w, http.StatusInternalServerError, "encoding the report failed")
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

func (a *Admin) proxy(w http.ResponseWriter, r *http.Request) {
	target := strings.TrimRight(a.Upstream, "/") + r.URL.Path
	if r.URL.RawQuery != "" {
		target += "?" + r.URL.RawQuery // byte-for-byte: the provider parses its own query
	}
	req, err := http.NewRequestWithContext(r.Context(), r.Method, target, nil)
	if err != nil {
		writeAnthropicError(w, http.StatusInternalServerError, "admin upstream URL is invalid")
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
		writeAnthropicError(w, http.StatusBadGateway, fmt.Sprintf("admin upstream %s unreachable", hostOf(a.Upstream)))
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
