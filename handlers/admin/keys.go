package admin

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/modelgate/modelgate/adminapi"
	"github.com/modelgate/modelgate/audit"
	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/money"
	"github.com/modelgate/modelgate/policy"
)

// The admin API for keys and workspaces, in the shapes of Anthropic's
// Admin API (its api_keys and workspaces objects, lists and pagination),
// with the gateway's extensions: creating keys (the secret answered once,
// in "value"), and each key's and workspace's models, budgets and rates
// (docs/keys-and-budgets.md, "Runtime keys and workspaces", lists the calls
// and fields).

const (
	keysPath       = adminapi.KeysPath
	workspacesPath = adminapi.WorkspacesPath
)

func rfc3339(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := t.UTC().Format("2006-01-02T15:04:05.000000Z")
	return &s
}

func cents(n int64) *string {
	if n <= 0 {
		return nil
	}
	s := strconv.FormatInt(n, 10)
	return &s
}

// centsOrNone shows a budget amount: null for none, "0" for a budget of
// nothing.
func centsOrNone(n *int64) *string {
	if n == nil {
		return nil
	}
	s := strconv.FormatInt(*n, 10)
	return &s
}

func positive(n int64) *int64 {
	if n <= 0 {
		return nil
	}
	return &n
}

// setLimits writes limits into an object's fields.
func limitFields(l ledger.Limits) (budget *adminapi.Budget, soft, session *string, rpm, tpm, parallel *int64) {
	if l.BudgetCents != nil {
		period := l.BudgetPeriod
		if period == "" {
			period = "total"
		}
		budget = &adminapi.Budget{Amount: strconv.FormatInt(*l.BudgetCents, 10), Period: period}
	}
	return budget, cents(l.SoftBudgetCents), centsOrNone(l.SessionBudgetCents), positive(l.RPM), positive(l.TPM), positive(l.MaxParallel)
}

func runtimeKeyObject(k ledger.ControlKey, now time.Time) adminapi.Key {
	o := adminapi.Key{ID: k.ID, Type: "api_key", Name: k.Name, CreatedAt: rfc3339(k.CreatedAt),
		CreatedBy: adminapi.CreatedBy{ID: "admin_api", Type: "admin_api"}, Status: k.Status, ExpiresAt: rfc3339(k.ExpiresAt),
		Models: k.Limits.Models, MCP: k.Limits.MCP, MCPOptions: mcpOptions(k.Limits)}
	if o.Models == nil {
		o.Models = []string{}
	}
	if c := k.CreatedBy; c != nil {
		o.CreatedBy = adminapi.CreatedBy{ID: c.ID, Type: c.Type, Email: c.Email, Subject: c.Subject}
	}
	if k.WorkspaceID != "" {
		o.WorkspaceID = &k.WorkspaceID
	}
	if k.Hint != "" {
		o.PartialKeyHint = &k.Hint
	}
	if o.Status == "active" && !k.ExpiresAt.IsZero() && !now.Before(k.ExpiresAt) {
		o.Status = "expired"
	}
	o.Budget, o.SoftBudget, o.SessionBudget, o.RPM, o.TPM, o.MaxParallel = limitFields(k.Limits)
	return o
}

func staticKeyObject(id *policy.Identity) adminapi.Key {
	o := adminapi.Key{ID: id.KeyID, Type: "api_key", Name: id.KeyID, CreatedBy: adminapi.CreatedBy{ID: "caddyfile", Type: "config"},
		Status: "active", Models: []string{}, MCP: id.MCP, MCPOptions: mcpOptions(id.Limits)}
	if id.Workspace != "" {
		ws := id.Workspace
		o.WorkspaceID = &ws
	}
	for m := range id.Models {
		o.Models = append(o.Models, m)
	}
	sort.Strings(o.Models)
	o.Budget, o.SoftBudget, o.SessionBudget, o.RPM, o.TPM, o.MaxParallel = limitFields(id.Limits)
	return o
}

// controls guards every call on keys and workspaces: only the admin key
// manages them, on a gateway with a key store, which next sees current.
// next's request context carries the call's 10 s bound.
func (a *Handler) controls(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id := policy.IdentityFrom(r.Context())
		switch {
		case id == nil:
			fail(w, http.StatusUnauthorized, "missing or unknown API key")
			return
		case id.Role == policy.RoleAuditor && r.Method != http.MethodGet && r.Method != http.MethodHead:
			fail(w, http.StatusForbidden, "an auditor reads keys and workspaces but changes nothing")
			return
		case id.Role != policy.RoleAdmin && id.Role != policy.RoleAuditor && (id.Person == "" || r.Method != http.MethodGet):
			// A signed-in member lists their own keys (listKeys, getKey).
			fail(w, http.StatusForbidden, "managing keys and workspaces needs the gateway's admin key")
			return
		case a.Controls == nil:
			fail(w, http.StatusNotFound, "this gateway has no key store")
			return
		}
		// The wait for a store still opening comes before the call's own
		// time starts.
		store := a.Controls.WaitStore(r.Context())
		ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
		defer cancel()
		if store == nil {
			w.Header().Set("Retry-After", "5")
			fail(w, http.StatusServiceUnavailable, "the key store is still opening (the ledger database is not reachable yet); retry")
			return
		}
		// Lists and objects are answered from what this instance knows,
		// made current first.
		if err := a.Controls.Refresh(ctx); err != nil {
			fail(w, http.StatusServiceUnavailable, "the key store cannot be read right now; retry")
			return
		}
		next(w, r.WithContext(ctx))
	}
}

// keyID and workspaceID name the objects the API lists and gets by id.
func keyID(k adminapi.Key) string             { return k.ID }
func workspaceID(o adminapi.Workspace) string { return o.ID }

// allKeys is every key, the Caddyfile's first, as API objects.
func (a *Handler) allKeys() []adminapi.Key {
	var out []adminapi.Key
	static, _, _ := a.Controls.Static(a.Site)
	for _, id := range static {
		out = append(out, staticKeyObject(id))
	}
	now := a.Controls.Now()
	runtime, _ := a.Controls.Runtime()
	for _, k := range runtime {
		out = append(out, runtimeKeyObject(k, now))
	}
	return out
}

func (a *Handler) listKeys(w http.ResponseWriter, r *http.Request) {
	q, err := ledger.ParseRawQuery(r.URL.RawQuery)
	if err != nil {
		fail(w, http.StatusBadRequest, err.Error())
		return
	}
	var sel []adminapi.Key
	for _, k := range a.visibleKeys(r) {
		if ws := q.Get("workspace_id"); ws != "" && (k.WorkspaceID == nil || *k.WorkspaceID != ws) {
			continue
		}
		if st := q.Get("status"); st != "" && k.Status != st {
			continue
		}
		sel = append(sel, k)
	}
	writePage(w, q, sel, keyID, true)
}

func (a *Handler) getKey(w http.ResponseWriter, r *http.Request) {
	writeOne(w, a.visibleKeys(r), keyID, r.PathValue("id"), "API key")
}

// visibleKeys is every key for an admin or auditor, and a signed-in
// member's own keys for them.
func (a *Handler) visibleKeys(r *http.Request) []adminapi.Key {
	all := a.allKeys()
	id := policy.IdentityFrom(r.Context())
	if id.ReadsAll() {
		return all
	}
	var own []adminapi.Key
	for _, k := range all {
		if k.CreatedBy.Type == "oidc" && k.CreatedBy.ID == id.Person {
			own = append(own, k)
		}
	}
	return own
}

func (a *Handler) listWorkspaces(w http.ResponseWriter, r *http.Request) {
	q, err := ledger.ParseRawQuery(r.URL.RawQuery)
	if err != nil {
		fail(w, http.StatusBadRequest, err.Error())
		return
	}
	writePage(w, q, a.allWorkspaces(q.Get("include_archived") == "true"), workspaceID, false)
}

func (a *Handler) getWorkspace(w http.ResponseWriter, r *http.Request) {
	a.writeWorkspace(w, r.PathValue("id"))
}

func (a *Handler) writeWorkspace(w http.ResponseWriter, id string) {
	writeOne(w, a.allWorkspaces(true), workspaceID, id, "workspace")
}

// writeOne answers the object of all whose idOf is id, or a 404 naming it
// as what.
func writeOne[T any](w http.ResponseWriter, all []T, idOf func(T) string, id, what string) {
	for _, o := range all {
		if idOf(o) == id {
			writeJSON(w, o)
			return
		}
	}
	fail(w, http.StatusNotFound, "no "+what+" "+strconv.Quote(id))
}

// writePage answers the page of all that q asks for. has_more says a
// later page exists, and with countBefore (the keys list, not the
// workspaces list, which never did) also an earlier one before before_id.
func writePage[T any](w http.ResponseWriter, q url.Values, all []T, idOf func(T) string, countBefore bool) {
	ids := make([]string, len(all))
	for i, o := range all {
		ids[i] = idOf(o)
	}
	lo, hi, msg := pageBounds(q, ids)
	if msg != "" {
		fail(w, http.StatusBadRequest, msg)
		return
	}
	writeList(w, all[lo:hi], ids[lo:hi], hi < len(all) || (countBefore && q.Get("before_id") != "" && lo > 0))
}

// pageBounds applies Anthropic's list pagination (before_id, after_id,
// limit 1–1000, default 20) to ids in list order.
func pageBounds(q map[string][]string, ids []string) (lo, hi int, errMsg string) {
	get := func(k string) string {
		if v := q[k]; len(v) > 0 {
			return v[0]
		}
		return ""
	}
	limit := 20
	if v := get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			return 0, 0, "limit: must be an integer from 1 to 1000"
		}
		limit = n
	}
	find := func(id string) int {
		for i, x := range ids {
			if x == id {
				return i
			}
		}
		return -1
	}
	lo, hi = 0, len(ids)
	if after := get("after_id"); after != "" {
		i := find(after)
		if i < 0 {
			return 0, 0, "after_id: no such id " + strconv.Quote(after)
		}
		lo = i + 1
	}
	if before := get("before_id"); before != "" {
		i := find(before)
		if i < 0 {
			return 0, 0, "before_id: no such id " + strconv.Quote(before)
		}
		hi = i
		if hi-limit > lo {
			lo = hi - limit
		}
	}
	if hi > lo+limit {
		hi = lo + limit
	}
	if lo > hi {
		lo = hi
	}
	return lo, hi, ""
}

func writeList[T any](w http.ResponseWriter, data []T, ids []string, more bool) {
	page := adminapi.Page[T]{Data: data, HasMore: more}
	if page.Data == nil {
		page.Data = []T{}
	}
	if len(ids) > 0 {
		page.FirstID, page.LastID = &ids[0], &ids[len(ids)-1]
	}
	writeJSON(w, page)
}

// writeJSON answers v as a 200.
func writeJSON(w http.ResponseWriter, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b)
}

// limitsRequest is the limits part of a key or workspace request. The
// fields are raw, not pointers: a pointer would decode null as absent, and
// null is how a limit is removed.
type limitsRequest struct {
	Budget        json.RawMessage `json:"budget"`
	SoftBudget    json.RawMessage `json:"soft_budget"`
	SessionBudget json.RawMessage `json:"session_budget"`
	RPM           json.RawMessage `json:"rpm"`
	TPM           json.RawMessage `json:"tpm"`
	MaxParallel   json.RawMessage `json:"max_parallel"`
	MCP           json.RawMessage `json:"mcp"`
	MCPApproval   json.RawMessage `json:"mcp_approval"`
	MCPToolSearch json.RawMessage `json:"mcp_tool_search"`
}

// keyRequest is the body of a key create or update; every field is
// optional on update.
type keyRequest struct {
	Name        *string `json:"name"`
	Status      *string `json:"status"`
	WorkspaceID *string `json:"workspace_id"`
	ExpiresAt   *string `json:"expires_at"`
	// Models is raw so that null (every alias) differs from absent.
	Models json.RawMessage `json:"models"`
	limitsRequest
}

// changesMoreThanStatus reports whether the request names any field but
// status.
func (req *keyRequest) changesMoreThanStatus() bool {
	l := req.limitsRequest
	return req.Name != nil || req.WorkspaceID != nil || req.ExpiresAt != nil || req.Models != nil ||
		l.Budget != nil || l.SoftBudget != nil || l.SessionBudget != nil || l.RPM != nil || l.TPM != nil ||
		l.MaxParallel != nil || l.MCP != nil || l.MCPApproval != nil || l.MCPToolSearch != nil
}

// workspaceRequest is the body of a workspace create or update.
type workspaceRequest struct {
	Name               *string `json:"name"`
	CountAgentReported *bool   `json:"count_agent_reported"`
	limitsRequest
}

// readStrict decodes a JSON body refusing unknown fields, naming the field
// at fault.
func readStrict(r *http.Request, dst any) string {
	body, err := readAdminBody(r)
	if err != nil {
		return err.Error()
	}
	return decodeStrict(body, dst)
}

// decodeStrict is readStrict's decoding of a body already read.
func decodeStrict(body []byte, dst any) string {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return fmt.Sprintf("%s: must be %s", te.Field, te.Type.String())
		}
		if msg := err.Error(); strings.HasPrefix(msg, "json: unknown field ") {
			return strings.Trim(strings.TrimPrefix(msg, "json: unknown field "), `"`) + ": unknown field"
		}
		return "request body is not valid JSON: " + err.Error()
	}
	return ""
}

func readAdminBody(r *http.Request) ([]byte, error) {
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(http.MaxBytesReader(nil, r.Body, 1<<20)); err != nil {
		return nil, errors.New("request body over 1 MiB or unreadable")
	}
	return buf.Bytes(), nil
}

// applyLimits sets the limit fields the request names, checking each.
func applyLimits(l *ledger.Limits, req *limitsRequest) string {
	// centsField reads an amount; null removes it. A soft budget of 0
	// would alert on nothing, so it must be at least a cent.
	centsField := func(name string, raw *json.RawMessage, dst **int64, least int64) string {
		if raw == nil {
			return ""
		}
		if string(*raw) == "null" {
			*dst = nil
			return ""
		}
		var s string
		if json.Unmarshal(*raw, &s) != nil {
			return name + `: must be an amount in cents as a decimal string, e.g. "5000", or null for none`
		}
		n, err := money.ParseCents(s)
		if err != nil {
			return name + ": " + err.Error()
		}
		if n < least {
			return name + `: must be at least 1 cent; null removes it`
		}
		*dst = &n
		return ""
	}
	intField := func(name string, raw *json.RawMessage, dst *int64) string {
		if raw == nil {
			return ""
		}
		if string(*raw) == "null" {
			*dst = 0
			return ""
		}
		var n int64
		if json.Unmarshal(*raw, &n) != nil || n < 0 {
			return name + ": must be a non-negative integer or null"
		}
		*dst = n
		return ""
	}
	if budget := given(req.Budget); budget != nil {
		if string(*budget) == "null" {
			l.BudgetCents, l.BudgetPeriod = nil, ""
		} else {
			var b adminapi.Budget
			dec := json.NewDecoder(bytes.NewReader(*budget))
			dec.DisallowUnknownFields()
			if dec.Decode(&b) != nil {
				return `budget: must be {"amount": "<cents>", "period": "daily|weekly|monthly|total"} or null`
			}
			n, err := money.ParseCents(b.Amount)
			if err != nil {
				return "budget.amount: " + err.Error() + `; "0" admits no paid use, and budget null removes the budget`
			}
			switch b.Period {
			case "daily", "weekly", "monthly", "total":
			default:
				return "budget.period: must be daily, weekly, monthly or total"
			}
			l.BudgetCents, l.BudgetPeriod = &n, b.Period
		}
	}
	if raw := given(req.MCP); raw != nil {
		if msg := mcpField(*raw, &l.MCP); msg != "" {
			return msg
		}
	}
	if msg := mcpOptionFields(l, req); msg != "" {
		return msg
	}
	softCents := centsOrNil(l.SoftBudgetCents)
	for _, msg := range []string{
		centsField("soft_budget", given(req.SoftBudget), &softCents, 1),
		centsField("session_budget", given(req.SessionBudget), &l.SessionBudgetCents, 0),
		intField("rpm", given(req.RPM), &l.RPM),
		intField("tpm", given(req.TPM), &l.TPM),
		intField("max_parallel", given(req.MaxParallel), &l.MaxParallel),
	} {
		if msg != "" {
			return msg
		}
	}
	l.SoftBudgetCents = 0
	if softCents != nil {
		l.SoftBudgetCents = *softCents
	}
	return ""
}

// mcpEntry is an MCP allow-list entry: a server name as mcp_servers
// allows it, or server/tool.
var mcpEntry = regexp.MustCompile(`^[A-Za-z0-9_]+(/[^/\s]+)?$`)

// mcpField reads an MCP allow-list, the Caddyfile mcp option's entries;
// null removes it (every server allowed).
func mcpField(raw json.RawMessage, dst *[]string) string {
	const how = `mcp: must be a list of MCP servers or server/tool entries, e.g. ["everything", "fs/read_file"], or null to allow every server`
	if string(raw) == "null" {
		*dst = nil
		return ""
	}
	var list []string
	if json.Unmarshal(raw, &list) != nil || len(list) == 0 {
		return how
	}
	for i, e := range list {
		if !mcpEntry.MatchString(e) {
			return fmt.Sprintf("mcp[%d]: %q is not a server or server/tool entry; %s", i, e, how[len("mcp: "):])
		}
	}
	*dst = list
	return ""
}

// modelsField reads a key's alias allow-list; null or [] removes it
// (every alias allowed).
func modelsField(raw json.RawMessage, dst *[]string) string {
	var list []string
	if json.Unmarshal(raw, &list) != nil {
		return `models: must be a list of aliases, e.g. ["claude", "coder"], or null to allow every alias`
	}
	for i, m := range list {
		if msg := storableField(fmt.Sprintf("models[%d]", i), m); msg != "" {
			return msg
		}
	}
	*dst = nil
	if len(list) > 0 {
		*dst = list
	}
	return ""
}

// given is a raw field, nil when the request left it out.
func given(raw json.RawMessage) *json.RawMessage {
	if raw == nil {
		return nil
	}
	return &raw
}

func centsOrNil(n int64) *int64 {
	if n <= 0 {
		return nil
	}
	return &n
}

// storableField names a text field PostgreSQL cannot store (a NUL byte or
// invalid UTF-8): a client error, never an outage.
func storableField(name, v string) string {
	if !ledger.StorableText(v) {
		return name + ": must be valid UTF-8 without NUL bytes"
	}
	return ""
}

// knownWorkspace reports whether id names a workspace of either kind.
func (a *Handler) knownWorkspace(id string) bool {
	_, static, _ := a.Controls.Static(a.Site)
	for _, ws := range static {
		if ws == id {
			return true
		}
	}
	_, runtime := a.Controls.Runtime()
	for _, ws := range runtime {
		if ws.ID == id && ws.ArchivedAt.IsZero() {
			return true
		}
	}
	return false
}

func (a *Handler) createKey(w http.ResponseWriter, r *http.Request) {
	var req keyRequest
	if msg := readStrict(r, &req); msg != "" {
		fail(w, http.StatusBadRequest, msg)
		return
	}
	if req.Name == nil || strings.TrimSpace(*req.Name) == "" || len(*req.Name) > 255 {
		fail(w, http.StatusBadRequest, "name: required, 1 to 255 characters")
		return
	}
	if msg := storableField("name", *req.Name); msg != "" {
		fail(w, http.StatusBadRequest, msg)
		return
	}
	draft := ledger.ControlKey{Status: "active"}
	if msg := a.fillKey(&draft, &req, true); msg != "" {
		fail(w, http.StatusBadRequest, msg)
		return
	}
	k, secret, err := a.Controls.MintKey(r.Context(), policy.NewKey{Name: draft.Name, Workspace: draft.WorkspaceID,
		ExpiresAt: draft.ExpiresAt, Limits: draft.Limits})
	if err != nil {
		fail(w, http.StatusServiceUnavailable, "the key could not be stored; retry")
		return
	}
	a.record(r, "key.create", k.ID, audit.Diff(nil, keyFields(k)))
	o := runtimeKeyObject(k, k.CreatedAt)
	o.Value = secret
	writeJSON(w, o)
}

// fillKey applies a create or update request to k.
func (a *Handler) fillKey(k *ledger.ControlKey, req *keyRequest, create bool) string {
	if !create && k.Status == "archived" && req.changesMoreThanStatus() {
		// Archived is final: a budget or limit written on a key nobody can
		// use would read as if it mattered, and a silent 200 hides that.
		return "API key " + k.ID + " is archived, which is final: its name, workspace, expiry, models and limits cannot change; create a new key instead"
	}
	if req.Name != nil {
		if strings.TrimSpace(*req.Name) == "" || len(*req.Name) > 255 {
			return "name: 1 to 255 characters"
		}
		if msg := storableField("name", *req.Name); msg != "" {
			return msg
		}
		k.Name = *req.Name
	}
	if req.Status != nil {
		switch *req.Status {
		case "active", "inactive", "archived":
			if create && *req.Status != "active" {
				return "status: a new key is active"
			}
			if k.Status == "archived" && *req.Status != "archived" {
				return "status: API key " + k.ID + " is archived, which is final; create a new key instead"
			}
			k.Status = *req.Status
		default:
			return "status: must be active, inactive or archived"
		}
	}
	if req.WorkspaceID != nil {
		if *req.WorkspaceID != "" && !a.knownWorkspace(*req.WorkspaceID) {
			return "workspace_id: no workspace " + strconv.Quote(*req.WorkspaceID) + "; create it first (POST " + workspacesPath + ")"
		}
		k.WorkspaceID = *req.WorkspaceID
	}
	if req.ExpiresAt != nil {
		if *req.ExpiresAt == "" {
			k.ExpiresAt = time.Time{}
		} else {
			t, err := time.Parse(time.RFC3339, *req.ExpiresAt)
			if err != nil {
				return "expires_at: must be an RFC 3339 time, e.g. 2026-12-31T00:00:00Z"
			}
			k.ExpiresAt = t.UTC()
		}
	}
	if raw := given(req.Models); raw != nil {
		if msg := modelsField(*raw, &k.Limits.Models); msg != "" {
			return msg
		}
	}
	return applyLimits(&k.Limits, &req.limitsRequest)
}

// badRequest is a refusal of an update, found on the stored copy.
type badRequest string

func (e badRequest) Error() string { return string(e) }

// updateFailed answers an update's error: the request's fault, a missing
// object, or the store's.
func updateFailed(w http.ResponseWriter, err error, what, id string) {
	var bad badRequest
	switch {
	case errors.As(err, &bad):
		fail(w, http.StatusBadRequest, string(bad))
	case errors.Is(err, ledger.ErrControlNotFound):
		fail(w, http.StatusNotFound, "no "+what+" "+strconv.Quote(id))
	default:
		fail(w, http.StatusServiceUnavailable, "the "+what+" could not be stored; retry")
	}
}

// findable reports whether id can name a stored object at all: one the
// database cannot hold (NUL, invalid UTF-8) is not found, not an outage.
func findable(id string) bool { return id != "" && ledger.StorableText(id) }

// updateKey changes the fields the request names, and only them, on the
// key as stored: another admin's concurrent change to other fields (a
// revoke) is never written back over.
func (a *Handler) updateKey(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	static, _, _ := a.Controls.Static(a.Site)
	for _, s := range static {
		if s.KeyID == id {
			fail(w, http.StatusBadRequest, "API key "+strconv.Quote(id)+" is defined in the Caddyfile; edit it there and reload")
			return
		}
	}
	if !findable(id) {
		fail(w, http.StatusNotFound, "no API key "+strconv.Quote(id))
		return
	}
	var req keyRequest
	if msg := readStrict(r, &req); msg != "" {
		fail(w, http.StatusBadRequest, msg)
		return
	}
	now := a.Controls.Now().UTC()
	var before map[string]string
	k, err := a.Controls.UpdateKey(r.Context(), id, func(k *ledger.ControlKey) error {
		before = keyFields(*k)
		if msg := a.fillKey(k, &req, false); msg != "" {
			return badRequest(msg)
		}
		k.UpdatedAt = now
		return nil
	})
	if err != nil {
		updateFailed(w, err, "API key", id)
		return
	}
	action := "key.update"
	if after := keyFields(k); after["status"] != before["status"] && after["status"] != "active" {
		action = "key.revoke" // inactive or archived: the key no longer works
	}
	a.record(r, action, k.ID, audit.Diff(before, keyFields(k)))
	writeJSON(w, runtimeKeyObject(k, a.Controls.Now()))
}

func (a *Handler) allWorkspaces(includeArchived bool) []adminapi.Workspace {
	var out []adminapi.Workspace
	_, static, limits := a.Controls.Static(a.Site)
	for _, name := range static {
		o := adminapi.Workspace{ID: name, Type: "workspace", Name: name, CreatedBy: adminapi.CreatedBy{ID: "caddyfile", Type: "config"}}
		o.Budget, o.SoftBudget, o.SessionBudget, o.RPM, o.TPM, o.MaxParallel = limitFields(limits[name])
		o.CountAgentReported, o.MCP, o.MCPOptions = limits[name].CountAgentReported, limits[name].MCP, mcpOptions(limits[name])
		out = append(out, o)
	}
	_, runtime := a.Controls.Runtime()
	for _, ws := range runtime {
		if !includeArchived && !ws.ArchivedAt.IsZero() {
			continue
		}
		o := adminapi.Workspace{ID: ws.ID, Type: "workspace", Name: ws.Name, CreatedAt: rfc3339(ws.CreatedAt), ArchivedAt: rfc3339(ws.ArchivedAt),
			CreatedBy: adminapi.CreatedBy{ID: "admin_api", Type: "admin_api"}}
		o.Budget, o.SoftBudget, o.SessionBudget, o.RPM, o.TPM, o.MaxParallel = limitFields(ws.Limits)
		o.MCP, o.CountAgentReported, o.MCPOptions = ws.Limits.MCP, ws.Limits.CountAgentReported, mcpOptions(ws.Limits)
		out = append(out, o)
	}
	return out
}

func (a *Handler) createWorkspace(w http.ResponseWriter, r *http.Request) {
	a.saveWorkspace(w, r, "", false)
}

func (a *Handler) updateWorkspace(w http.ResponseWriter, r *http.Request) {
	a.saveWorkspace(w, r, r.PathValue("id"), false)
}

func (a *Handler) archiveWorkspace(w http.ResponseWriter, r *http.Request) {
	a.saveWorkspace(w, r, r.PathValue("id"), true)
}

// saveWorkspace creates (id ""), updates or archives a runtime workspace.
// An update or archive changes the stored row under its lock, only in
// the fields the request names; archiving is final.
func (a *Handler) saveWorkspace(w http.ResponseWriter, r *http.Request, id string, archive bool) {
	c := a.Controls
	_, static, _ := c.Static(a.Site)
	for _, name := range static {
		if id != "" && name == id {
			fail(w, http.StatusBadRequest, "workspace "+strconv.Quote(id)+" is defined in the Caddyfile; edit it there and reload")
			return
		}
	}
	if id != "" && !findable(id) {
		fail(w, http.StatusNotFound, "no workspace "+strconv.Quote(id))
		return
	}
	var req workspaceRequest
	if !archive {
		if msg := readStrict(r, &req); msg != "" {
			fail(w, http.StatusBadRequest, msg)
			return
		}
	}
	now := c.Now().UTC()
	change := func(ws *ledger.ControlWorkspace) error {
		if archive {
			if ws.ArchivedAt.IsZero() {
				ws.ArchivedAt = now
			}
			ws.UpdatedAt = now
			return nil
		}
		if req.Name != nil {
			ws.Name = *req.Name
		}
		if strings.TrimSpace(ws.Name) == "" || len(ws.Name) > 255 {
			return badRequest("name: required, 1 to 255 characters")
		}
		if msg := storableField("name", ws.Name); msg != "" {
			return badRequest(msg)
		}
		if msg := applyLimits(&ws.Limits, &req.limitsRequest); msg != "" {
			return badRequest(msg)
		}
		if req.CountAgentReported != nil {
			ws.Limits.CountAgentReported = *req.CountAgentReported
		}
		ws.UpdatedAt = now
		return nil
	}
	var err error
	var before, after map[string]string
	action := "workspace.update"
	if id == "" {
		action = "workspace.create"
		ws := ledger.ControlWorkspace{ID: "wrkspc_" + strings.ToLower(rand.Text()), CreatedAt: now}
		if err = change(&ws); err == nil {
			err = c.PutWorkspace(r.Context(), ws)
		}
		id, after = ws.ID, workspaceFields(ws)
	} else {
		var ws ledger.ControlWorkspace
		ws, err = c.UpdateWorkspace(r.Context(), id, func(ws *ledger.ControlWorkspace) error {
			before = workspaceFields(*ws)
			return change(ws)
		})
		after = workspaceFields(ws)
		if archive {
			action = "workspace.archive"
		}
	}
	if err != nil {
		updateFailed(w, err, "workspace", id)
		return
	}
	a.record(r, action, id, audit.Diff(before, after))
	a.writeWorkspace(w, id)
}
