package admin

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/modelgate/modelgate/audit"
	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/policy"
)

// AuditLogPath is the audit log's list and export.
const AuditLogPath = "/v1/organizations/audit_log"

// recorder is where admin actions go: the configured audit log, else
// nowhere.
func (a *Handler) recorder() audit.Recorder {
	if a.Audit == nil {
		return audit.Discard
	}
	return a.Audit
}

// record appends one admin action by the request's caller.
func (a *Handler) record(r *http.Request, action, target string, fields map[string]string) {
	actor := ""
	if id := policy.IdentityFrom(r.Context()); id != nil {
		actor = id.KeyID
	}
	a.recorder().Record(r.Context(), audit.Event{Time: a.now(), Actor: actor, Action: action, Target: target, Source: audit.SourceOf(r), Fields: fields})
}

// limitsFields are a key's or workspace's limits by field name, each as
// its JSON value.
func limitsFields(l ledger.Limits, into map[string]string) {
	b, _ := json.Marshal(l)
	var m map[string]json.RawMessage
	_ = json.Unmarshal(b, &m)
	for k, v := range m {
		into[k] = strings.Trim(string(v), `"`)
	}
}

// keyFields are the audited fields of a key: never its secret or hash.
func keyFields(k ledger.ControlKey) map[string]string {
	m := map[string]string{"name": k.Name, "status": k.Status, "workspace_id": k.WorkspaceID}
	if !k.ExpiresAt.IsZero() {
		m["expires_at"] = k.ExpiresAt.Format(time.RFC3339)
	}
	limitsFields(k.Limits, m)
	return m
}

func workspaceFields(ws ledger.ControlWorkspace) map[string]string {
	m := map[string]string{"name": ws.Name}
	if !ws.ArchivedAt.IsZero() {
		m["archived_at"] = ws.ArchivedAt.Format(time.RFC3339)
	}
	limitsFields(ws.Limits, m)
	return m
}

// auditEventObject is an audit entry as the API answers it.
type auditEventObject struct {
	ID         string            `json:"id"`
	Type       string            `json:"type"`
	OccurredAt string            `json:"occurred_at"`
	Actor      string            `json:"actor"`
	Action     string            `json:"action"`
	Target     string            `json:"target"`
	Source     string            `json:"source"`
	Fields     map[string]string `json:"fields"`
}

func auditObject(e ledger.AuditEntry) auditEventObject {
	return auditEventObject{ID: e.ID, Type: "audit_event", OccurredAt: e.Time.Format(time.RFC3339Nano), Actor: e.Actor, Action: e.Action,
		Target: e.Target, Source: e.Source, Fields: e.Fields}
}

// auditLog answers GET /v1/organizations/audit_log: newest first, filtered
// by actor, action, target and starting_at/ending_at (RFC 3339), paged
// with limit (1 to 1000, default 100) and after_id (the last id of the
// previous page; has_more says whether one follows). With format=jsonl
// it exports every matching entry, one JSON object a line.
func (a *Handler) auditLog(w http.ResponseWriter, r *http.Request) {
	id := policy.IdentityFrom(r.Context())
	if id == nil || !id.ReadsAll() {
		fail(w, http.StatusForbidden, "the audit log needs the gateway's admin key or an admin or auditor sign-in")
		return
	}
	q := r.URL.Query()
	f := ledger.AuditFilter{Actor: q.Get("actor"), Action: q.Get("action"), Target: q.Get("target"), Before: q.Get("after_id"), Limit: 100}
	for _, p := range []struct {
		name string
		t    *time.Time
	}{{"starting_at", &f.From}, {"ending_at", &f.To}} {
		if v := q.Get(p.name); v != "" {
			t, err := time.Parse(time.RFC3339, v)
			if err != nil {
				fail(w, http.StatusBadRequest, p.name+": must be an RFC 3339 time, e.g. 2026-11-01T00:00:00Z")
				return
			}
			*p.t = t
		}
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			fail(w, http.StatusBadRequest, "limit: must be an integer from 1 to 1000")
			return
		}
		f.Limit = n
	}
	format := q.Get("format")
	if format != "" && format != "json" && format != "jsonl" {
		fail(w, http.StatusBadRequest, "format: must be json or jsonl")
		return
	}
	if a.Controls == nil {
		fail(w, http.StatusNotFound, "this gateway has no ledger database, so no audit log")
		return
	}
	store, ok := a.Controls.WaitStore(r.Context()).(ledger.AuditStore)
	if !ok {
		w.Header().Set("Retry-After", "5")
		fail(w, http.StatusServiceUnavailable, "the audit log is still opening (the ledger database is not reachable yet); retry")
		return
	}
	if format == "jsonl" {
		a.exportAudit(w, r, store, f)
		return
	}
	entries, more, err := store.QueryAudit(r.Context(), f)
	if err != nil {
		fail(w, http.StatusServiceUnavailable, "the audit log cannot be read right now; retry")
		return
	}
	data := make([]auditEventObject, 0, len(entries))
	for _, e := range entries {
		data = append(data, auditObject(e))
	}
	page := struct {
		Data    []auditEventObject `json:"data"`
		HasMore bool               `json:"has_more"`
		FirstID *string            `json:"first_id"`
		LastID  *string            `json:"last_id"`
	}{Data: data, HasMore: more}
	if len(data) > 0 {
		page.FirstID, page.LastID = &data[0].ID, &data[len(data)-1].ID
	}
	writeJSON(w, page)
}

// exportAudit streams every entry f selects as JSON lines, a page of
// 1000 at a time, newest first.
func (a *Handler) exportAudit(w http.ResponseWriter, r *http.Request, store ledger.AuditStore, f ledger.AuditFilter) {
	f.Limit = 1000
	w.Header().Set("Content-Type", "application/jsonl")
	w.Header().Set("Content-Disposition", `attachment; filename="audit_log.jsonl"`)
	enc := json.NewEncoder(w)
	for started := false; ; started = true {
		entries, more, err := store.QueryAudit(r.Context(), f)
		if err != nil {
			if !started {
				fail(w, http.StatusServiceUnavailable, "the audit log cannot be read right now; retry")
			}
			return
		}
		for _, e := range entries {
			if enc.Encode(auditObject(e)) != nil {
				return
			}
		}
		if !more || len(entries) == 0 {
			return
		}
		f.Before = entries[len(entries)-1].ID
	}
}
