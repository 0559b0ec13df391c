package admin

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/modelgate/modelgate/adminapi"
	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/money"
	"github.com/modelgate/modelgate/policy"
	"github.com/modelgate/modelgate/spendlimit"
)

// The Spend Limits API (docs/spend-limits-api.md): limits on the
// organization, a group, a person or a key, the effective report, and
// increase requests (spend_requests.go), in the shapes of Anthropic's
// Admin API so its official SDKs work unchanged.

// SpendLimits is what the Spend Limits API stands on; the zero value
// answers 404 to its calls.
type SpendLimits struct {
	// Store is the ledger, nil while it opens; it keeps limits and
	// requests (ledger.SpendLimitStore, ledger.IncreaseRequestStore).
	Store func() ledger.Store
	// Budgets admit requests: the effective report reads what they do.
	Budgets *policy.Budgets
	// Chat posts one line to the team's chat (nil: none configured).
	Chat func(text string)
	// Leads are the people who may resolve the requests of a group's
	// members (nil: admins only).
	Leads func(group string) []string
	// DowngradeTarget is why alias may not be an at_cap downgrade's
	// target ("" when it may: it is known and free); nil checks nothing.
	DowngradeTarget func(alias string, bound ledger.DowngradeBound) string
	// PublicURL is the gateway's base URL as approvers' browsers reach
	// it, the base of the approvers' chat link; "" posts no link.
	PublicURL string
}

// spendStore is the ledger's spend limit and request tables.
type spendStore interface {
	ledger.SpendLimitStore
	ledger.IncreaseRequestStore
}

// spendCaller guards the spend limits calls: a caller with a key or a
// session, a ledger that keeps limits, and a bounded call.
func (a *Handler) spendCaller(next func(w http.ResponseWriter, r *http.Request, st spendStore)) http.HandlerFunc {
	return requireCaller(func(w http.ResponseWriter, r *http.Request) {
		var st spendStore
		if a.Spend.Store != nil {
			st, _ = a.Spend.Store().(spendStore)
		}
		if st == nil {
			w.Header().Set("Retry-After", "5")
			fail(w, http.StatusServiceUnavailable, "spend limits live in the ledger database, which is not open yet; retry")
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
		defer cancel()
		next(w, r.WithContext(ctx), st)
	})
}

// isAdmin reports a caller who may change spend limits.
func isAdmin(r *http.Request) bool {
	id := policy.IdentityFrom(r.Context())
	return id != nil && id.Role == policy.RoleAdmin
}

// limitWire is l as the API shows it.
func limitWire(l ledger.SpendLimit) adminapi.SpendLimit {
	out := adminapi.SpendLimit{ID: l.ID, Type: "spend_limit", Currency: "USD", IsEnabled: true, Period: l.Period,
		Scope: scopeWire(l.Scope, l.ScopeID), CreatedAt: *rfc3339(l.CreatedAt), UpdatedAt: *rfc3339(l.UpdatedAt)}
	if l.AmountCents != nil {
		s := strconv.FormatInt(*l.AmountCents, 10)
		out.Amount = &s
	}
	if l.Downgrade != "" {
		out.AtCap = atCapWire(l)
	}
	return out
}

// scopeWire is a stored scope as the API names it.
func scopeWire(scope, id string) adminapi.SpendScope {
	switch scope {
	case ledger.ScopeUser:
		return adminapi.SpendScope{Type: "user", UserID: id}
	case ledger.ScopeGroup:
		return adminapi.SpendScope{Type: "rbac_group", RBACGroupID: id}
	case ledger.ScopeGroupPool:
		return adminapi.SpendScope{Type: "rbac_group", RBACGroupID: id, Shared: true}
	case ledger.ScopeKey:
		return adminapi.SpendScope{Type: "api_key", APIKeyID: id}
	case ledger.ScopeWorkspace:
		return adminapi.SpendScope{Type: "workspace", WorkspaceID: id}
	case ledger.ScopeSession:
		user, group, key, session := spendlimit.SessionSelector(id)
		return adminapi.SpendScope{Type: "session", UserID: user, RBACGroupID: group, APIKeyID: key, SessionID: session}
	}
	return adminapi.SpendScope{Type: "organization"}
}

// scopeOrder is the list's order of scope types, as Anthropic's.
func scopeOrder(scope string) int {
	return slices.Index([]string{ledger.ScopeOrganization, ledger.ScopeGroup, ledger.ScopeGroupPool, ledger.ScopeUser, ledger.ScopeKey, ledger.ScopeSession}, scope)
}

// listSpendLimits answers GET /v1/organizations/spend_limits.
func (a *Handler) listSpendLimits(w http.ResponseWriter, r *http.Request, st spendStore) {
	if !policy.IdentityFrom(r.Context()).ReadsAll() {
		fail(w, http.StatusForbidden, "listing spend limits needs the gateway's admin key or an admin or auditor sign-in; see your own on GET /v1/me")
		return
	}
	if !hasBeta(r, adminapi.SpendLimitReadsBeta) {
		fail(w, http.StatusBadRequest, "anthropic-beta: this endpoint is in beta: send "+adminapi.SpendLimitReadsBeta+" in the anthropic-beta header")
		return
	}
	q := r.URL.Query()
	if q.Get("workspace_id") != "" {
		fail(w, http.StatusBadRequest, "workspace_id: a workspace's limit is its budget on /v1/organizations/workspaces/{id} on this gateway; leave the filter out")
		return
	}
	types := queryList(q, "scope_type")
	for _, t := range types {
		if _, ok := scopeTypes[t]; !ok {
			fail(w, http.StatusBadRequest, "scope_type: "+strconv.Quote(t)+" is not a scope type this gateway has (organization, rbac_group, user, api_key, session)")
			return
		}
	}
	all, err := st.SpendLimits(r.Context())
	if err != nil {
		storeFailed(w, err)
		return
	}
	var out []adminapi.SpendLimit
	slices.SortStableFunc(all, func(x, y ledger.SpendLimit) int { return scopeOrder(x.Scope) - scopeOrder(y.Scope) })
	for _, l := range all {
		wl := limitWire(l)
		if len(types) == 0 || slices.Contains(types, wl.Scope.Type) {
			out = append(out, wl)
		}
	}
	writeCursorPage(w, r, out, func(l adminapi.SpendLimit) string { return l.ID })
}

// scopeTypes are the scope types a list may filter on.
var scopeTypes = map[string]struct{}{"organization": {}, "rbac_group": {}, "user": {}, "api_key": {}, "session": {}}

// setSpendLimit answers POST /v1/organizations/spend_limits: an upsert
// keyed on scope and period.
func (a *Handler) setSpendLimit(w http.ResponseWriter, r *http.Request, st spendStore) {
	if !isAdmin(r) {
		fail(w, http.StatusForbidden, "setting spend limits needs the gateway's admin key or an admin sign-in")
		return
	}
	l, ok := readBody(w, r, decodeSetSpendLimit)
	if !ok {
		return
	}
	if l.Downgrade != "" && a.Spend.DowngradeTarget != nil {
		if why := a.Spend.DowngradeTarget(l.Downgrade, l.Bound); why != "" {
			fail(w, http.StatusBadRequest, "at_cap.alias: "+why)
			return
		}
	}
	l.UpdatedAt = a.now()
	stored, err := st.PutSpendLimit(r.Context(), l)
	if err != nil {
		storeFailed(w, err)
		return
	}
	amount := "null"
	if stored.AmountCents != nil {
		amount = strconv.FormatInt(*stored.AmountCents, 10)
	}
	a.record(r, "spend_limit.set", stored.ID, map[string]string{"scope": stored.Scope, "scope_id": stored.ScopeID,
		"period": stored.Period, "amount": amount, "downgrade": stored.Downgrade, "downgrade_bound": boundText(stored.Bound)})
	writeJSON(w, limitWire(stored))
}

// decodeSetSpendLimit reads the body of a set: amount (cents as a
// decimal string, or null for an explicit no-limit override; required),
// scope, period (default monthly) and the at_cap extension.
func decodeSetSpendLimit(body []byte) (ledger.SpendLimit, string) {
	var req struct {
		adminapi.SetSpendLimit
		// Raw: null (no limit) differs from absent (an error).
		Amount json.RawMessage `json:"amount"`
	}
	if msg := decodeStrict(body, &req); msg != "" {
		return ledger.SpendLimit{}, msg
	}
	var l ledger.SpendLimit
	switch {
	case req.Amount == nil:
		return l, "amount: required: a limit in cents as a decimal string (\"5000\" is $50.00), or null for no limit"
	case string(req.Amount) != "null":
		var s string
		if json.Unmarshal(req.Amount, &s) != nil {
			return l, "amount: must be a string of cents (\"5000\" is $50.00) or null"
		}
		c, err := money.ParseCents(s)
		if err != nil {
			return l, "amount: " + err.Error()
		}
		l.AmountCents = &c
	}
	var msg string
	if l.Scope, l.ScopeID, msg = scopeOf(req.Scope); msg != "" {
		return l, msg
	}
	if l.Period, msg = periodOf(l.Scope, req.Period); msg != "" {
		return l, msg
	}
	if c := req.AtCap; c != nil {
		switch c.Action {
		case "refuse":
			if c.Alias != "" || c.MaxPrice != nil || c.Allowance != "" {
				return l, "at_cap: alias, max_price and allowance go only with action downgrade"
			}
		case "downgrade":
			if c.Alias == "" || len(c.Alias) > 256 {
				return l, "at_cap.alias: name the cheaper alias requests go to past the cap"
			}
			l.Downgrade = c.Alias
			if l.Bound, msg = boundOf(c); msg != "" {
				return l, msg
			}
		default:
			return l, "at_cap.action: " + strconv.Quote(c.Action) + " is not refuse or downgrade"
		}
	}
	return l, ""
}

// scopeOf is the stored scope of a request's scope object.
func scopeOf(s adminapi.SpendScope) (scope, id, msg string) {
	need := func(field, v string) string {
		switch {
		case v == "":
			return "scope." + field + ": required for a " + s.Type + " scope"
		case len(v) > 256 || strings.ContainsAny(v, "\n\x00"):
			return "scope." + field + ": at most 256 characters, on one line"
		}
		return ""
	}
	if s.SessionID != "" && s.Type != "session" {
		return "", "", "scope.session_id: only a session scope names a session"
	}
	if s.Shared && s.Type != "rbac_group" {
		return "", "", "scope.shared: only an rbac_group scope can be shared (one pool for its members together)"
	}
	switch s.Type {
	case "organization":
		return ledger.ScopeOrganization, ledger.OrganizationID, ""
	case "user":
		if msg := need("user_id", s.UserID); msg != "" {
			return "", "", msg
		}
		return ledger.ScopeUser, s.UserID, ""
	case "rbac_group":
		if msg := need("rbac_group_id", s.RBACGroupID); msg != "" {
			return "", "", msg
		}
		if s.Shared {
			return ledger.ScopeGroupPool, s.RBACGroupID, ""
		}
		return ledger.ScopeGroup, s.RBACGroupID, ""
	case "api_key":
		if msg := need("api_key_id", s.APIKeyID); msg != "" {
			return "", "", msg
		}
		return ledger.ScopeKey, s.APIKeyID, ""
	case "session":
		return sessionScopeOf(s)
	case "workspace":
		return "", "", "scope.type: a workspace's limit is its budget: set it with POST /v1/organizations/workspaces/{id} {\"budget\": …}"
	case "":
		return "", "", "scope.type: required: organization, rbac_group, user, api_key or session"
	}
	return "", "", "scope.type: " + strconv.Quote(s.Type) + " is not organization, rbac_group, user, api_key or session on this gateway"
}

// getSpendLimit answers GET /v1/organizations/spend_limits/{id}.
func (a *Handler) getSpendLimit(w http.ResponseWriter, r *http.Request, st spendStore) {
	if !policy.IdentityFrom(r.Context()).ReadsAll() {
		fail(w, http.StatusForbidden, "reading spend limits needs the gateway's admin key or an admin or auditor sign-in")
		return
	}
	l, ok := findLimit(w, r, st)
	if ok {
		writeJSON(w, limitWire(l))
	}
}

func findLimit(w http.ResponseWriter, r *http.Request, st spendStore) (ledger.SpendLimit, bool) {
	all, err := st.SpendLimits(r.Context())
	if err != nil {
		storeFailed(w, err)
		return ledger.SpendLimit{}, false
	}
	id := r.PathValue("id")
	for _, l := range all {
		if l.ID == id {
			return l, true
		}
	}
	fail(w, http.StatusNotFound, "no spend limit "+strconv.Quote(clip(id))+" on this gateway")
	return ledger.SpendLimit{}, false
}

// deleteSpendLimit answers DELETE /v1/organizations/spend_limits/{id}.
func (a *Handler) deleteSpendLimit(w http.ResponseWriter, r *http.Request, st spendStore) {
	if !isAdmin(r) {
		fail(w, http.StatusForbidden, "deleting spend limits needs the gateway's admin key or an admin sign-in")
		return
	}
	l, ok := findLimit(w, r, st)
	if !ok {
		return
	}
	if _, err := st.DeleteSpendLimit(r.Context(), l.ID); err != nil {
		storeFailed(w, err)
		return
	}
	a.record(r, "spend_limit.delete", l.ID, map[string]string{"scope": l.Scope, "scope_id": l.ScopeID, "period": l.Period})
	writeJSON(w, map[string]string{"id": l.ID, "type": "spend_limit_deleted"})
}

// storeFailed answers a ledger error without its text (it may name the
// database).
func storeFailed(w http.ResponseWriter, _ error) {
	w.Header().Set("Retry-After", "1")
	fail(w, http.StatusServiceUnavailable, "the ledger database did not answer; retry")
}

func clip(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}

// hasBeta reports whether the request's anthropic-beta headers name beta.
func hasBeta(r *http.Request, beta string) bool {
	for _, v := range r.Header.Values("anthropic-beta") {
		for _, b := range strings.Split(v, ",") {
			if strings.TrimSpace(b) == beta {
				return true
			}
		}
	}
	return false
}

// queryList is a query's list parameter, as name[]=a&name[]=b (how the
// SDKs send arrays) or name=a.
func queryList(q map[string][]string, name string) []string {
	return append(slices.Clone(q[name+"[]"]), q[name]...)
}

// writeCursorPage answers one page of items in the spend limits calls' cursor
// paging: limit (1–1000, default 20) and page, the opaque cursor the last
// page's next_page gave.
func writeCursorPage[T any](w http.ResponseWriter, r *http.Request, items []T, idOf func(T) string) {
	from, n, msg := cursorBounds(r, len(items), func(i int) string { return idOf(items[i]) })
	if msg != "" {
		fail(w, http.StatusBadRequest, msg)
		return
	}
	page := adminapi.CursorPage[T]{Data: items[from:min(from+n, len(items))]}
	if page.Data == nil {
		page.Data = []T{}
	}
	if from+n < len(items) {
		next := cursorOf(idOf(items[from+n-1]))
		page.NextPage = &next
	}
	writeJSON(w, page)
}

// cursorBounds reads limit and page: the first item of the page and how
// many.
func cursorBounds(r *http.Request, total int, idAt func(int) string) (from, n int, msg string) {
	q := r.URL.Query()
	n = 20
	if s := q.Get("limit"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 || v > 1000 {
			return 0, 0, "limit: must be an integer from 1 to 1000"
		}
		n = v
	}
	cursor := q.Get("page")
	if cursor == "" {
		return 0, n, ""
	}
	after, err := base64.RawURLEncoding.DecodeString(cursor)
	if err == nil {
		for i := range total {
			if idAt(i) == string(after) {
				return i + 1, n, ""
			}
		}
	}
	return 0, 0, "page: not a cursor this list gave (next_page), or its item is gone; start again without page"
}

// cursorOf is the opaque page cursor of the page after id.
func cursorOf(id string) string { return base64.RawURLEncoding.EncodeToString([]byte(id)) }

// readBody reads the request's body and decodes it with decode, or
// answers 400 with what is wrong.
func readBody[T any](w http.ResponseWriter, r *http.Request, decode func([]byte) (T, string)) (T, bool) {
	var v T
	body, err := readAdminBody(r)
	msg := ""
	if err != nil {
		msg = err.Error()
	} else {
		v, msg = decode(body)
	}
	if msg != "" {
		fail(w, http.StatusBadRequest, msg)
		return v, false
	}
	return v, true
}

// strictly is decodeStrict into a new T, for readBody; no body is T's
// zero value (every field of the calls it reads is optional, or checked
// after).
func strictly[T any](body []byte) (T, string) {
	var v T
	if len(body) == 0 {
		return v, ""
	}
	return v, decodeStrict(body, &v)
}
