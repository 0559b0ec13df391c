package admin

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/modelgate/modelgate/breaker"
	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/policy"
)

// SessionsPath lists coding-agent sessions by cost (an extension of the
// Admin API, like the claude_code report but across every agent).
const SessionsPath = "/v1/organizations/sessions"

type sessionObject struct {
	ID             string       `json:"id"`
	Agent          *string      `json:"agent"`
	APIKeyID       string       `json:"api_key_id"`
	WorkspaceID    *string      `json:"workspace_id"`
	FirstRequestAt string       `json:"first_request_at"`
	LastRequestAt  string       `json:"last_request_at"`
	Requests       int64        `json:"requests"`
	Tokens         sessionUsage `json:"tokens"`
	// CacheReadShare is cache reads over all input tokens (see
	// ledger.CacheReadShare).
	CacheReadShare float64     `json:"cache_read_share"`
	Cost           sessionCost `json:"cost"`
	// AgentReportedRequests of Requests are known only from the agent's
	// own telemetry: the seat reached its provider without the gateway.
	AgentReportedRequests int64 `json:"agent_reported_requests"`
	// SeatRequests of Requests were served on the caller's own
	// subscription (passthrough_auth): their part of Cost is notional.
	SeatRequests int64 `json:"seat_requests"`
	// Source is "gateway", "agent_reported", or "mixed" when both fed it.
	Source string `json:"source"`
	// Breaker is the loop breaker's state of the session, absent when it
	// does not watch it.
	Breaker *breaker.Status `json:"breaker,omitempty"`
}

type sessionUsage struct {
	UncachedInput int64 `json:"uncached_input"`
	CacheCreation int64 `json:"cache_creation"`
	CacheRead     int64 `json:"cache_read"`
	Output        int64 `json:"output"`
}

type sessionCost struct {
	Amount   string `json:"amount"`
	Currency string `json:"currency"`
}

// serveSessions answers GET /v1/organizations/sessions: starting_at and
// ending_at (RFC 3339; default the last 30 days), api_key_ids[],
// workspace_ids[], limit (1–1000, 20) and page. A regular key sees its
// own sessions only.
func (a *Handler) serveSessions(w http.ResponseWriter, r *http.Request) {
	id := policy.IdentityFrom(r.Context())
	if id == nil {
		fail(w, http.StatusUnauthorized, "missing or unknown API key")
		return
	}
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", "GET")
		fail(w, http.StatusMethodNotAllowed, "method "+r.Method+" not allowed; use GET")
		return
	}
	lister, ok := a.Store.(ledger.SessionLister)
	if a.Store == nil || !ok {
		fail(w, http.StatusNotFound, "sessions are listed from the gateway's own ledger, which this llm_admin does not read")
		return
	}
	v, err := ledger.ParseRawQuery(r.URL.RawQuery)
	bad := func(param, msg string) {
		fail(w, http.StatusBadRequest, param+": "+msg)
	}
	if err != nil {
		bad("query", err.Error())
		return
	}
	for name := range v {
		switch name {
		case "starting_at", "ending_at", "api_key_ids[]", "api_key_ids", "workspace_ids[]", "workspace_ids", "limit", "page":
		default:
			bad(name, "unknown parameter")
			return
		}
	}
	end := a.now().UTC()
	start := end.Add(-30 * 24 * time.Hour)
	for _, p := range []struct {
		name string
		dst  *time.Time
	}{{"starting_at", &start}, {"ending_at", &end}} {
		if s := v.Get(p.name); s != "" {
			t, err := time.Parse(time.RFC3339, s)
			if err != nil {
				bad(p.name, "must be an RFC 3339 time, e.g. 2026-11-01T00:00:00Z")
				return
			}
			*p.dst = t.UTC()
		}
	}
	if !end.After(start) {
		bad("ending_at", "must be after starting_at")
		return
	}
	limit, offset := 20, 0
	if s := v.Get("limit"); s != "" {
		if limit, err = strconv.Atoi(s); err != nil || limit < 1 || limit > 1000 {
			bad("limit", "must be an integer from 1 to 1000")
			return
		}
	}
	if s := v.Get("page"); s != "" {
		if offset, err = strconv.Atoi(s); err != nil || offset < 0 {
			bad("page", "must be the next_page of an earlier answer")
			return
		}
	}
	keys := append(v["api_key_ids[]"], v["api_key_ids"]...)
	f := ledger.Filter{From: start, To: end, APIKeyIDs: ownRows(r, keys), WorkspaceIDs: append(v["workspace_ids[]"], v["workspace_ids"]...)}
	rows, more, err := lister.Sessions(r.Context(), f, limit, offset)
	if err != nil {
		if r.Context().Err() == nil && !errors.Is(err, r.Context().Err()) {
			fail(w, http.StatusInternalServerError, "reading the usage ledger failed")
		}
		return
	}
	page := struct {
		Data     []sessionObject `json:"data"`
		HasMore  bool            `json:"has_more"`
		NextPage *string         `json:"next_page"`
	}{Data: make([]sessionObject, 0, len(rows)), HasMore: more}
	for _, s := range rows {
		o := sessionObject{ID: s.ID, APIKeyID: s.KeyID, FirstRequestAt: s.First.Format(time.RFC3339), LastRequestAt: s.Last.Format(time.RFC3339),
			Requests: s.Requests, Tokens: sessionUsage{s.UncachedInput, s.CacheCreation, s.CacheRead, s.Output},
			CacheReadShare: ledger.CacheReadShare(s.UncachedInput, s.CacheCreation, s.CacheRead),
			Cost:           sessionCost{Amount: ledger.ShortCents(s.CostPico), Currency: "USD"}, AgentReportedRequests: s.AgentReported, SeatRequests: s.Seat, Source: "gateway"}
		switch {
		case s.AgentReported >= s.Requests:
			o.Source = "agent_reported"
		case s.AgentReported > 0:
			o.Source = "mixed"
		}
		if s.Agent != "" {
			ag := s.Agent
			o.Agent = &ag
		}
		if s.Workspace != "" {
			ws := s.Workspace
			o.WorkspaceID = &ws
		}
		o.Breaker = a.breakerState(r, s.KeyID, s.ID)
		page.Data = append(page.Data, o)
	}
	if more {
		next := strconv.Itoa(offset + limit)
		page.NextPage = &next
	}
	writeJSON(w, page)
}

// agentReportedDeleted answers a delete of agent-reported records.
type agentReportedDeleted struct {
	Type           string      `json:"type"`
	SessionID      string      `json:"session_id"`
	APIKeyID       string      `json:"api_key_id"`
	DeletedRecords int         `json:"deleted_records"`
	Cost           sessionCost `json:"cost"`
	// BudgetCost is the part of Cost budgets counted, now taken back.
	BudgetCost sessionCost `json:"budget_cost"`
}

// deleteAgentReported answers DELETE
// /v1/organizations/sessions/{id}/agent_reported?api_key_id=…[&request_id=…]:
// an admin takes back what a coding agent reported of a session (every
// record of it, or the one request_id names), with its roll-up sums and
// the budget spend it added. The gateway's own records are never touched.
func (a *Handler) deleteAgentReported(w http.ResponseWriter, r *http.Request) {
	if id := policy.IdentityFrom(r.Context()); id.Role != policy.RoleAdmin {
		fail(w, http.StatusForbidden, "deleting agent-reported usage needs the gateway's admin key")
		return
	}
	sel, msg := agentReportedSelector(r)
	if msg != "" {
		fail(w, http.StatusBadRequest, msg)
		return
	}
	del, ok := a.Store.(ledger.AgentReportedDeleter) // false for a nil Store too
	if !ok {
		fail(w, http.StatusNotFound, "agent-reported usage is kept in the gateway's own ledger, which this llm_admin does not read")
		return
	}
	sel.Person, sel.Groups = a.keyPerson(sel.KeyID)
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	got, err := del.DeleteAgentReported(ctx, sel)
	if err != nil {
		if !errors.Is(err, r.Context().Err()) {
			fail(w, http.StatusServiceUnavailable, "the usage ledger could not be changed; retry")
		}
		return
	}
	if got.Records == 0 {
		fail(w, http.StatusNotFound, "no agent-reported usage of session "+strconv.Quote(sel.SessionID)+" under API key "+strconv.Quote(sel.KeyID)+requestNamed(sel.RequestID))
		return
	}
	a.record(r, "agent_reported.delete", sel.KeyID+" "+sel.SessionID, map[string]string{"request_id": sel.RequestID,
		"records": strconv.Itoa(got.Records), "cost_pico": strconv.FormatInt(got.CostPico, 10), "budget_cost_pico": strconv.FormatInt(got.CountedPico, 10)})
	writeJSON(w, agentReportedDeleted{Type: "agent_reported_deleted", SessionID: sel.SessionID, APIKeyID: sel.KeyID, DeletedRecords: got.Records,
		Cost: sessionCost{Amount: ledger.ShortCents(got.CostPico), Currency: "USD"}, BudgetCost: sessionCost{Amount: ledger.ShortCents(got.CountedPico), Currency: "USD"}})
}

// agentReportedSelector reads the delete's session, key and request id,
// or says what is wrong with them.
func agentReportedSelector(r *http.Request) (ledger.AgentReportedSelector, string) {
	v, err := ledger.ParseRawQuery(r.URL.RawQuery)
	if err != nil {
		return ledger.AgentReportedSelector{}, "query: " + err.Error()
	}
	for name := range v {
		if name != "api_key_id" && name != "request_id" {
			return ledger.AgentReportedSelector{}, name + ": unknown parameter (known: api_key_id, request_id)"
		}
	}
	sel := ledger.AgentReportedSelector{KeyID: v.Get("api_key_id"), SessionID: r.PathValue("id"), RequestID: v.Get("request_id")}
	if sel.KeyID == "" {
		return sel, "api_key_id: required, the key whose agent reported the session (a session id is the client's choice, so it names a session of one key only)"
	}
	return sel, ""
}

func requestNamed(id string) string {
	if id == "" {
		return ""
	}
	return " with request_id " + strconv.Quote(id)
}
