package handlers

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/modelgate/modelgate/ledger"
)

// The admin API for keys and workspaces, in the shapes of Anthropic's
// Admin API (spec/team-controls.md §1), with the gateway's extensions:
// creating keys (the secret answered once, in "value"), and each key's
// and workspace's models, budgets and rates.

const (
	keysPath       = "/v1/organizations/api_keys"
	workspacesPath = "/v1/organizations/workspaces"
	// RuntimeKeyPrefix starts every secret the gateway mints.
	RuntimeKeyPrefix = "sk-mg-"
)

// keyObject is an API key as the admin API shows it.
type keyObject struct {
	ID             string        `json:"id"`
	Type           string        `json:"type"`
	Name           string        `json:"name"`
	WorkspaceID    *string       `json:"workspace_id"`
	CreatedAt      *string       `json:"created_at"`
	CreatedBy      createdBy     `json:"created_by"`
	PartialKeyHint *string       `json:"partial_key_hint"`
	Status         string        `json:"status"`
	ExpiresAt      *string       `json:"expires_at"`
	Models         []string      `json:"models"`
	Budget         *budgetObject `json:"budget"`
	SoftBudget     *string       `json:"soft_budget"`
	SessionBudget  *string       `json:"session_budget"`
	RPM            *int64        `json:"rpm"`
	TPM            *int64        `json:"tpm"`
	MaxParallel    *int64        `json:"max_parallel"`
	// Value is the secret, in the answer to a create only.
	Value string `json:"value,omitempty"`
}

type createdBy struct {
	ID   string `json:"id"`
	Type string `json:"type"`
}

type budgetObject struct {
	Amount string `json:"amount"`
	Period string `json:"period"`
}

type workspaceObject struct {
	ID            string        `json:"id"`
	Type          string        `json:"type"`
	Name          string        `json:"name"`
	CreatedAt     *string       `json:"created_at"`
	ArchivedAt    *string       `json:"archived_at"`
	CreatedBy     createdBy     `json:"created_by"`
	Budget        *budgetObject `json:"budget"`
	SoftBudget    *string       `json:"soft_budget"`
	SessionBudget *string       `json:"session_budget"`
	RPM           *int64        `json:"rpm"`
	TPM           *int64        `json:"tpm"`
	MaxParallel   *int64        `json:"max_parallel"`
}

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
func limitFields(l ledger.Limits) (budget *budgetObject, soft, session *string, rpm, tpm, parallel *int64) {
	if l.BudgetCents != nil {
		period := l.BudgetPeriod
		if period == "" {
			period = "total"
		}
		budget = &budgetObject{Amount: strconv.FormatInt(*l.BudgetCents, 10), Period: period}
	}
	return budget, cents(l.SoftBudgetCents), centsOrNone(l.SessionBudgetCents), positive(l.RPM), positive(l.TPM), positive(l.MaxParallel)
}

func runtimeKeyObject(k ledger.ControlKey, now time.Time) keyObject {
	o := keyObject{ID: k.ID, Type: "api_key", Name: k.Name, CreatedAt: rfc3339(k.CreatedAt),
		CreatedBy: createdBy{ID: "admin_api", Type: "admin_api"}, Status: k.Status, ExpiresAt: rfc3339(k.ExpiresAt),
		Models: k.Limits.Models}
	if o.Models == nil {
		o.Models = []string{}
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

func staticKeyObject(id *Identity) keyObject {
	o := keyObject{ID: id.KeyID, Type: "api_key", Name: id.KeyID, CreatedBy: createdBy{ID: "caddyfile", Type: "config"},
		Status: "active", Models: []string{}}
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

// serveControls answers the keys and workspaces paths; it reports false
// for any other path.
func (a *Admin) serveControls(w http.ResponseWriter, r *http.Request) bool {
	p := r.URL.Path
	var rest string
	var keys bool
	switch {
	case p == keysPath || strings.HasPrefix(p, keysPath+"/"):
		keys, rest = true, strings.TrimPrefix(strings.TrimPrefix(p, keysPath), "/")
	case p == workspacesPath || strings.HasPrefix(p, workspacesPath+"/"):
		rest = strings.TrimPrefix(strings.TrimPrefix(p, workspacesPath), "/")
	default:
		return false
	}
	id := IdentityFrom(r.Context())
	switch {
	case id == nil:
		writeAnthropicError(w, http.StatusUnauthorized, "missing or unknown API key")
		return true
	case id.Role != RoleAdmin:
		writeAnthropicError(w, http.StatusForbidden, "managing keys and workspaces needs the gateway's admin key")
		return true
	case a.Controls == nil:
		writeAnthropicError(w, http.StatusNotFound, "this gateway has no key store")
		return true
	}
	// Right after a start the ledger may still be opening: a call waits
	// for it (a script creating keys as soon as the gateway is up) rather
	// than failing, up to the bound; the call's own time starts after.
	wctx, wcancel := context.WithTimeout(r.Context(), a.Controls.openWait)
	store := a.Controls.waitStore(wctx)
	wcancel()
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	if store == nil {
		w.Header().Set("Retry-After", "5")
		writeAnthropicError(w, http.StatusServiceUnavailable, "the key store is still opening (the ledger database is not reachable yet); retry")
		return true
	}
	// Lists and objects are answered from what this instance knows, made
	// current first.
	if err := a.Controls.Refresh(ctx); err != nil {
		writeAnthropicError(w, http.StatusServiceUnavailable, "the key store cannot be read right now; retry")
		return true
	}
	idPart, action, _ := strings.Cut(rest, "/")
	switch {
	case keys && idPart == "" && r.Method == http.MethodGet:
		a.listKeys(w, r)
	case keys && idPart == "" && r.Method == http.MethodPost:
		a.createKey(ctx, w, r)
	case keys && action == "" && r.Method == http.MethodGet:
		a.getKey(w, idPart)
	case keys && action == "" && r.Method == http.MethodPost:
		a.updateKey(ctx, w, r, idPart)
	case !keys && idPart == "" && r.Method == http.MethodGet:
		a.listWorkspaces(w, r)
	case !keys && idPart == "" && r.Method == http.MethodPost:
		a.saveWorkspace(ctx, w, r, "", false)
	case !keys && action == "" && r.Method == http.MethodGet:
		a.getWorkspace(w, idPart)
	case !keys && action == "" && r.Method == http.MethodPost:
		a.saveWorkspace(ctx, w, r, idPart, false)
	case !keys && action == "archive" && r.Method == http.MethodPost:
		a.saveWorkspace(ctx, w, r, idPart, true)
	case action != "" && (keys || action != "archive"):
		writeAnthropicError(w, http.StatusNotFound, "no endpoint for "+r.Method+" "+p+" on this gateway")
	default:
		w.Header().Set("Allow", "GET, POST")
		writeAnthropicError(w, http.StatusMethodNotAllowed, "method "+r.Method+" not allowed on "+p+"; use GET or POST")
	}
	return true
}

// allKeys is every key, the Caddyfile's first, as API objects.
func (a *Admin) allKeys() []keyObject {
	c := a.Controls
	var out []keyObject
	for _, id := range c.static.Load().keys {
		out = append(out, staticKeyObject(id))
	}
	now := c.now()
	for _, k := range c.snap.Load().keys {
		out = append(out, runtimeKeyObject(k, now))
	}
	return out
}

func (a *Admin) listKeys(w http.ResponseWriter, r *http.Request) {
	q, err := ledger.ParseRawQuery(r.URL.RawQuery)
	if err != nil {
		writeAnthropicError(w, http.StatusBadRequest, err.Error())
		return
	}
	var sel []keyObject
	for _, k := range a.allKeys() {
		if ws := q.Get("workspace_id"); ws != "" && (k.WorkspaceID == nil || *k.WorkspaceID != ws) {
			continue
		}
		if st := q.Get("status"); st != "" && k.Status != st {
			continue
		}
		sel = append(sel, k)
	}
	ids := make([]string, len(sel))
	for i, k := range sel {
		ids[i] = k.ID
	}
	lo, hi, errMsg := pageBounds(q, ids)
	if errMsg != "" {
		writeAnthropicError(w, http.StatusBadRequest, errMsg)
		return
	}
	writeList(w, sel[lo:hi], ids[lo:hi], hi < len(sel) || (q.Get("before_id") != "" && lo > 0))
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
	page := struct {
		Data    []T     `json:"data"`
		FirstID *string `json:"first_id"`
		LastID  *string `json:"last_id"`
		HasMore bool    `json:"has_more"`
	}{Data: data, HasMore: more}
	if page.Data == nil {
		page.Data = []T{}
	}
	if len(ids) > 0 {
		page.FirstID, page.LastID = &ids[0], &ids[len(ids)-1]
	}
	b, _ := json.Marshal(page)
	writeJSON(w, http.StatusOK, b)
}

func (a *Admin) getKey(w http.ResponseWriter, id string) {
	for _, k := range a.allKeys() {
		if k.ID == id {
			b, _ := json.Marshal(k)
			writeJSON(w, http.StatusOK, b)
			return
		}
	}
	writeAnthropicError(w, http.StatusNotFound, "no API key "+strconv.Quote(id))
}

// keyRequest is the body of a key create or update; every field is
// optional on update. The limits are raw, not pointers: a pointer would
// decode null as absent, and null is how a limit is removed.
type keyRequest struct {
	Name          *string         `json:"name"`
	Status        *string         `json:"status"`
	WorkspaceID   *string         `json:"workspace_id"`
	ExpiresAt     *string         `json:"expires_at"`
	Models        *[]string       `json:"models"`
	Budget        json.RawMessage `json:"budget"`
	SoftBudget    json.RawMessage `json:"soft_budget"`
	SessionBudget json.RawMessage `json:"session_budget"`
	RPM           json.RawMessage `json:"rpm"`
	TPM           json.RawMessage `json:"tpm"`
	MaxParallel   json.RawMessage `json:"max_parallel"`
}

// readStrict decodes a JSON body refusing unknown fields, naming the field
// at fault.
func readStrict(r *http.Request, dst any) string {
	body, err := readAdminBody(r)
	if err != nil {
		return err.Error()
	}
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
func applyLimits(l *ledger.Limits, budget, soft, session, rpm, tpm, parallel *json.RawMessage) string {
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
		n, err := ledger.ParseCents(s)
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
	if budget != nil {
		if string(*budget) == "null" {
			l.BudgetCents, l.BudgetPeriod = nil, ""
		} else {
			var b budgetObject
			dec := json.NewDecoder(bytes.NewReader(*budget))
			dec.DisallowUnknownFields()
			if dec.Decode(&b) != nil {
				return `budget: must be {"amount": "<cents>", "period": "daily|weekly|monthly|total"} or null`
			}
			n, err := ledger.ParseCents(b.Amount)
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
	softCents := centsOrNil(l.SoftBudgetCents)
	for _, msg := range []string{
		centsField("soft_budget", soft, &softCents, 1),
		centsField("session_budget", session, &l.SessionBudgetCents, 0),
		intField("rpm", rpm, &l.RPM),
		intField("tpm", tpm, &l.TPM),
		intField("max_parallel", parallel, &l.MaxParallel),
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
func (a *Admin) knownWorkspace(id string) bool {
	for _, ws := range a.Controls.static.Load().workspaces {
		if ws == id {
			return true
		}
	}
	for _, ws := range a.Controls.snap.Load().workspaces {
		if ws.ID == id && ws.ArchivedAt.IsZero() {
			return true
		}
	}
	return false
}

func newSecret() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return RuntimeKeyPrefix + base64.RawURLEncoding.EncodeToString(b[:])
}

func (a *Admin) createKey(ctx context.Context, w http.ResponseWriter, r *http.Request) {
	var req keyRequest
	if msg := readStrict(r, &req); msg != "" {
		writeAnthropicError(w, http.StatusBadRequest, msg)
		return
	}
	if req.Name == nil || strings.TrimSpace(*req.Name) == "" || len(*req.Name) > 255 {
		writeAnthropicError(w, http.StatusBadRequest, "name: required, 1 to 255 characters")
		return
	}
	if msg := storableField("name", *req.Name); msg != "" {
		writeAnthropicError(w, http.StatusBadRequest, msg)
		return
	}
	now := a.Controls.now().UTC()
	secret := newSecret()
	sum := sha256.Sum256([]byte(secret))
	k := ledger.ControlKey{ID: "apikey_" + strings.ToLower(rand.Text()), Name: *req.Name, SecretHash: hex.EncodeToString(sum[:]),
		Hint: secret[:len(RuntimeKeyPrefix)+4] + "..." + secret[len(secret)-4:], Status: "active", CreatedAt: now, UpdatedAt: now}
	if msg := a.fillKey(&k, &req, true); msg != "" {
		writeAnthropicError(w, http.StatusBadRequest, msg)
		return
	}
	if !a.putKey(ctx, w, k) {
		return
	}
	o := runtimeKeyObject(k, now)
	o.Value = secret
	b, _ := json.Marshal(o)
	writeJSON(w, http.StatusOK, b)
}

// fillKey applies a create or update request to k.
func (a *Admin) fillKey(k *ledger.ControlKey, req *keyRequest, create bool) string {
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
	if req.Models != nil {
		k.Limits.Models = append([]string(nil), (*req.Models)...)
	}
	return applyLimits(&k.Limits, given(req.Budget), given(req.SoftBudget), given(req.SessionBudget), given(req.RPM), given(req.TPM), given(req.MaxParallel))
}

// putKey stores a new key k and makes this instance see it at once.
func (a *Admin) putKey(ctx context.Context, w http.ResponseWriter, k ledger.ControlKey) bool {
	c := a.Controls
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.store.PutKey(ctx, k); err != nil {
		writeAnthropicError(w, http.StatusServiceUnavailable, "the key could not be stored; retry")
		return false
	}
	_ = c.refreshLocked(ctx, true)
	return true
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
		writeAnthropicError(w, http.StatusBadRequest, string(bad))
	case errors.Is(err, ledger.ErrControlNotFound):
		writeAnthropicError(w, http.StatusNotFound, "no "+what+" "+strconv.Quote(id))
	default:
		writeAnthropicError(w, http.StatusServiceUnavailable, "the "+what+" could not be stored; retry")
	}
}

// findable reports whether id can name a stored object at all: one the
// database cannot hold (NUL, invalid UTF-8) is not found, not an outage.
func findable(id string) bool { return id != "" && ledger.StorableText(id) }

// updateKey changes the fields the request names, and only them, on the
// key as stored: another admin's concurrent change to other fields (a
// revoke) is never written back over.
func (a *Admin) updateKey(ctx context.Context, w http.ResponseWriter, r *http.Request, id string) {
	for _, s := range a.Controls.static.Load().keys {
		if s.KeyID == id {
			writeAnthropicError(w, http.StatusBadRequest, "API key "+strconv.Quote(id)+" is defined in the Caddyfile; edit it there and reload")
			return
		}
	}
	if !findable(id) {
		writeAnthropicError(w, http.StatusNotFound, "no API key "+strconv.Quote(id))
		return
	}
	var req keyRequest
	if msg := readStrict(r, &req); msg != "" {
		writeAnthropicError(w, http.StatusBadRequest, msg)
		return
	}
	c := a.Controls
	now := c.now().UTC()
	c.mu.Lock()
	k, err := c.store.UpdateKey(ctx, id, func(k *ledger.ControlKey) error {
		if msg := a.fillKey(k, &req, false); msg != "" {
			return badRequest(msg)
		}
		k.UpdatedAt = now
		return nil
	})
	if err == nil {
		_ = c.refreshLocked(ctx, true)
	}
	c.mu.Unlock()
	if err != nil {
		updateFailed(w, err, "API key", id)
		return
	}
	b, _ := json.Marshal(runtimeKeyObject(k, c.now()))
	writeJSON(w, http.StatusOK, b)
}

func (a *Admin) allWorkspaces(includeArchived bool) []workspaceObject {
	var out []workspaceObject
	static := a.Controls.static.Load()
	for _, name := range static.workspaces {
		o := workspaceObject{ID: name, Type: "workspace", Name: name, CreatedBy: createdBy{ID: "caddyfile", Type: "config"}}
		o.Budget, o.SoftBudget, o.SessionBudget, o.RPM, o.TPM, o.MaxParallel = limitFields(static.limits[name])
		out = append(out, o)
	}
	for _, ws := range a.Controls.snap.Load().workspaces {
		if !includeArchived && !ws.ArchivedAt.IsZero() {
			continue
		}
		o := workspaceObject{ID: ws.ID, Type: "workspace", Name: ws.Name, CreatedAt: rfc3339(ws.CreatedAt), ArchivedAt: rfc3339(ws.ArchivedAt),
			CreatedBy: createdBy{ID: "admin_api", Type: "admin_api"}}
		o.Budget, o.SoftBudget, o.SessionBudget, o.RPM, o.TPM, o.MaxParallel = limitFields(ws.Limits)
		out = append(out, o)
	}
	return out
}

func (a *Admin) listWorkspaces(w http.ResponseWriter, r *http.Request) {
	q, err := ledger.ParseRawQuery(r.URL.RawQuery)
	if err != nil {
		writeAnthropicError(w, http.StatusBadRequest, err.Error())
		return
	}
	all := a.allWorkspaces(q.Get("include_archived") == "true")
	ids := make([]string, len(all))
	for i, ws := range all {
		ids[i] = ws.ID
	}
	lo, hi, msg := pageBounds(q, ids)
	if msg != "" {
		writeAnthropicError(w, http.StatusBadRequest, msg)
		return
	}
	writeList(w, all[lo:hi], ids[lo:hi], hi < len(all))
}

func (a *Admin) getWorkspace(w http.ResponseWriter, id string) {
	for _, ws := range a.allWorkspaces(true) {
		if ws.ID == id {
			b, _ := json.Marshal(ws)
			writeJSON(w, http.StatusOK, b)
			return
		}
	}
	writeAnthropicError(w, http.StatusNotFound, "no workspace "+strconv.Quote(id))
}

// workspaceRequest is the body of a workspace create or update.
type workspaceRequest struct {
	Name          *string         `json:"name"`
	Budget        json.RawMessage `json:"budget"`
	SoftBudget    json.RawMessage `json:"soft_budget"`
	SessionBudget json.RawMessage `json:"session_budget"`
	RPM           json.RawMessage `json:"rpm"`
	TPM           json.RawMessage `json:"tpm"`
	MaxParallel   json.RawMessage `json:"max_parallel"`
}

// saveWorkspace creates (id ""), updates or archives a runtime workspace.
// An update or archive changes the stored row under its lock, only in
// the fields the request names; archiving is final.
func (a *Admin) saveWorkspace(ctx context.Context, w http.ResponseWriter, r *http.Request, id string, archive bool) {
	c := a.Controls
	for _, name := range c.static.Load().workspaces {
		if id != "" && name == id {
			writeAnthropicError(w, http.StatusBadRequest, "workspace "+strconv.Quote(id)+" is defined in the Caddyfile; edit it there and reload")
			return
		}
	}
	if id != "" && !findable(id) {
		writeAnthropicError(w, http.StatusNotFound, "no workspace "+strconv.Quote(id))
		return
	}
	var req workspaceRequest
	if !archive {
		if msg := readStrict(r, &req); msg != "" {
			writeAnthropicError(w, http.StatusBadRequest, msg)
			return
		}
	}
	now := c.now().UTC()
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
		if msg := applyLimits(&ws.Limits, given(req.Budget), given(req.SoftBudget), given(req.SessionBudget), given(req.RPM), given(req.TPM), given(req.MaxParallel)); msg != "" {
			return badRequest(msg)
		}
		ws.UpdatedAt = now
		return nil
	}
	c.mu.Lock()
	var err error
	if id == "" {
		ws := ledger.ControlWorkspace{ID: "wrkspc_" + strings.ToLower(rand.Text()), CreatedAt: now}
		if err = change(&ws); err == nil {
			err = c.store.PutWorkspace(ctx, ws)
		}
		id = ws.ID
	} else {
		_, err = c.store.UpdateWorkspace(ctx, id, change)
	}
	if err == nil {
		_ = c.refreshLocked(ctx, true)
	}
	c.mu.Unlock()
	if err != nil {
		updateFailed(w, err, "workspace", id)
		return
	}
	a.getWorkspace(w, id)
}
