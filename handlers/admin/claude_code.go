package admin

import (
	"net/http"
	"strconv"
	"time"

	"github.com/modelgate/modelgate/ledger"
)

// ClaudeCodeReportPath is Anthropic's Claude Code analytics report,
// computed from the ledger: what a gateway sees of Claude Code's traffic.
const ClaudeCodeReportPath = "/v1/organizations/usage_report/claude_code"

type claudeCodeRecord struct {
	Date             string              `json:"date"`
	Actor            claudeCodeActor     `json:"actor"`
	OrganizationID   string              `json:"organization_id"`
	CustomerType     string              `json:"customer_type"`
	SubscriptionType *string             `json:"subscription_type"`
	IsRemote         bool                `json:"is_remote"`
	TerminalType     string              `json:"terminal_type"`
	CoreMetrics      claudeCodeCore      `json:"core_metrics"`
	ToolActions      map[string]accepted `json:"tool_actions"`
	ModelBreakdown   []claudeCodeModel   `json:"model_breakdown"`
}

type claudeCodeActor struct {
	Type       string `json:"type"`
	APIKeyName string `json:"api_key_name"`
}

type claudeCodeCore struct {
	NumSessions  int64 `json:"num_sessions"`
	LinesOfCode  lines `json:"lines_of_code"`
	Commits      int64 `json:"commits_by_claude_code"`
	PullRequests int64 `json:"pull_requests_by_claude_code"`
}

type lines struct {
	Added   int64 `json:"added"`
	Removed int64 `json:"removed"`
}

type accepted struct {
	Accepted int64 `json:"accepted"`
	Rejected int64 `json:"rejected"`
}

type claudeCodeModel struct {
	Model  string `json:"model"`
	Tokens struct {
		Input         int64 `json:"input"`
		Output        int64 `json:"output"`
		CacheRead     int64 `json:"cache_read"`
		CacheCreation int64 `json:"cache_creation"`
	} `json:"tokens"`
	EstimatedCost struct {
		Amount   float64 `json:"amount"`
		Currency string  `json:"currency"`
	} `json:"estimated_cost"`
}

// serveClaudeCode answers the claude_code report for one UTC day
// (starting_at=YYYY-MM-DD), one record per key, in key order; what the
// gateway cannot see (lines of code, commits, tool decisions) is zero.
func (a *Handler) serveClaudeCode(w http.ResponseWriter, r *http.Request) {
	rep, ok := a.Store.(ledger.ClaudeCodeReporter)
	if !ok {
		fail(w, http.StatusNotFound, "this llm_admin reads no ledger")
		return
	}
	v, err := ledger.ParseRawQuery(r.URL.RawQuery)
	if err != nil {
		fail(w, http.StatusBadRequest, err.Error())
		return
	}
	for name := range v {
		switch name {
		case "starting_at", "limit", "page":
		default:
			fail(w, http.StatusBadRequest, name+": unknown parameter")
			return
		}
	}
	day, err := time.Parse("2006-01-02", v.Get("starting_at"))
	if err != nil {
		fail(w, http.StatusBadRequest, "starting_at: required, one UTC day as YYYY-MM-DD")
		return
	}
	limit, offset := 20, 0
	if s := v.Get("limit"); s != "" {
		if limit, err = strconv.Atoi(s); err != nil || limit < 1 || limit > 1000 {
			fail(w, http.StatusBadRequest, "limit: must be an integer from 1 to 1000")
			return
		}
	}
	if s := v.Get("page"); s != "" {
		if offset, err = strconv.Atoi(s); err != nil || offset < 0 {
			fail(w, http.StatusBadRequest, "page: must be the next_page of an earlier answer")
			return
		}
	}
	rows, err := rep.ClaudeCodeDay(r.Context(), day, ownRows(r, nil))
	if err == nil && offset > len(rows) {
		offset = len(rows)
	}
	var org string
	if err == nil {
		org, err = rep.OrganizationID(r.Context())
	}
	if err != nil {
		if r.Context().Err() == nil {
			fail(w, http.StatusInternalServerError, "reading the usage ledger failed")
		}
		return
	}
	end := min(offset+limit, len(rows))
	page := struct {
		Data     []claudeCodeRecord `json:"data"`
		HasMore  bool               `json:"has_more"`
		NextPage *string            `json:"next_page"`
	}{Data: make([]claudeCodeRecord, 0, end-offset), HasMore: end < len(rows)}
	for _, row := range rows[offset:end] {
		rec := claudeCodeRecord{Date: day.UTC().Format(time.RFC3339), Actor: claudeCodeActor{Type: "api_actor", APIKeyName: row.KeyID},
			OrganizationID: org, CustomerType: "api", TerminalType: "unknown",
			CoreMetrics: claudeCodeCore{NumSessions: row.Sessions},
			ToolActions: map[string]accepted{"edit_tool": {}, "multi_edit_tool": {}, "write_tool": {}, "notebook_edit_tool": {}}}
		for _, m := range row.Models {
			cm := claudeCodeModel{Model: m.Model}
			cm.Tokens.Input, cm.Tokens.Output, cm.Tokens.CacheRead, cm.Tokens.CacheCreation = m.Uncached, m.Output, m.CacheRead, m.CacheMade
			cm.EstimatedCost.Amount, cm.EstimatedCost.Currency = float64(m.CostPico)/1e10, "USD"
			rec.ModelBreakdown = append(rec.ModelBreakdown, cm)
		}
		page.Data = append(page.Data, rec)
	}
	if page.HasMore {
		next := strconv.Itoa(end)
		page.NextPage = &next
	}
	writeJSON(w, page)
}
