package admin

import (
	"cmp"
	"context"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/money"
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

// claudeCodeActor is a user_actor (a person, by email) or an api_actor
// (a key, by name), each with only its own field.
type claudeCodeActor struct {
	Type         string `json:"type"`
	EmailAddress string `json:"email_address,omitempty"`
	APIKeyName   string `json:"api_key_name,omitempty"`
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
// (starting_at=YYYY-MM-DD): one record per person (the keys minted for
// them together) or, for a key no person holds, per key, in actor order.
// Tokens and cost come from the ledger's records of Claude Code's
// requests, served or reported by the agent; sessions, lines of code,
// commits, pull requests and edit decisions from the metrics Claude Code
// exports to the gateway (OTEL_METRICS_EXPORTER=otlp), zero for a seat
// that exports none.
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
	keys := ownRows(r, nil)
	rows, err := rep.ClaudeCodeDay(r.Context(), day, keys)
	var metrics []ledger.AgentMetricRow
	if ms, ok := a.Store.(agentMetricsReader); ok && err == nil {
		metrics, err = ms.AgentMetricsDay(r.Context(), day, keys)
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
	records := a.claudeCodeRecords(day, org, rows, metrics)
	offset = min(offset, len(records))
	end := min(offset+limit, len(records))
	page := struct {
		Data     []claudeCodeRecord `json:"data"`
		HasMore  bool               `json:"has_more"`
		NextPage *string            `json:"next_page"`
	}{Data: records[offset:end], HasMore: end < len(records)}
	if page.HasMore {
		next := strconv.Itoa(end)
		page.NextPage = &next
	}
	writeJSON(w, page)
}

type agentMetricsReader interface {
	AgentMetricsDay(ctx context.Context, day time.Time, keys []string) ([]ledger.AgentMetricRow, error)
}

// editTools maps Claude Code's edit tools to the report's tool_actions keys.
var editTools = map[string]string{"Edit": "edit_tool", "MultiEdit": "multi_edit_tool", "Write": "write_tool", "NotebookEdit": "notebook_edit_tool"}

// claudeCodeRecords merges the keys' rows and metrics into one record per
// actor, sorted by actor.
func (a *Handler) claudeCodeRecords(day time.Time, org string, rows []ledger.ClaudeCodeRow, metrics []ledger.AgentMetricRow) []claudeCodeRecord {
	personOf := a.personOf()
	byActor := map[claudeCodeActor]*claudeCodeRecord{}
	var actors []claudeCodeActor
	record := func(key string) *claudeCodeRecord {
		act := claudeCodeActor{Type: "api_actor", APIKeyName: key}
		if personOf != nil {
			if p := personOf(key); p != "" {
				act = claudeCodeActor{Type: "user_actor", EmailAddress: p}
			}
		}
		if act.Type == "api_actor" && a.Controls != nil {
			if name := a.Controls.RuntimeName(key); name != "" {
				act.APIKeyName = name
			}
		}
		rec := byActor[act]
		if rec == nil {
			rec = &claudeCodeRecord{Date: day.UTC().Format(time.RFC3339), Actor: act, OrganizationID: org, CustomerType: "api",
				TerminalType: "unknown", ToolActions: map[string]accepted{}, ModelBreakdown: []claudeCodeModel{}}
			for _, t := range editTools {
				rec.ToolActions[t] = accepted{}
			}
			byActor[act] = rec
			actors = append(actors, act)
		}
		return rec
	}
	for _, row := range rows {
		rec := record(row.KeyID)
		rec.CoreMetrics.NumSessions += row.Sessions
		for _, m := range row.Models {
			i := slices.IndexFunc(rec.ModelBreakdown, func(cm claudeCodeModel) bool { return cm.Model == m.Model })
			if i < 0 {
				cm := claudeCodeModel{Model: m.Model}
				cm.EstimatedCost.Currency = "USD"
				rec.ModelBreakdown = append(rec.ModelBreakdown, cm)
				i = len(rec.ModelBreakdown) - 1
			}
			cm := &rec.ModelBreakdown[i]
			cm.Tokens.Input += m.Uncached
			cm.Tokens.Output += m.Output
			cm.Tokens.CacheRead += m.CacheRead
			cm.Tokens.CacheCreation += m.CacheMade
			cm.EstimatedCost.Amount += float64(m.CostPico) / money.PicoPerCent
		}
	}
	metricSessions := map[claudeCodeActor]int64{}
	for _, m := range metrics {
		rec := record(m.KeyID)
		if m.Terminal != "" {
			rec.TerminalType = m.Terminal
		}
		core := &rec.CoreMetrics
		switch m.Metric {
		case ledger.MetricSessions:
			metricSessions[rec.Actor] += m.Value
		case "claude_code.lines_of_code.count":
			if m.Attr == "added" {
				core.LinesOfCode.Added += m.Value
			} else {
				core.LinesOfCode.Removed += m.Value
			}
		case "claude_code.commit.count":
			core.Commits += m.Value
		case "claude_code.pull_request.count":
			core.PullRequests += m.Value
		case "claude_code.code_edit_tool.decision":
			tool, decision, _ := strings.Cut(m.Attr, ":")
			if key, ok := editTools[tool]; ok {
				t := rec.ToolActions[key]
				if decision == "accept" {
					t.Accepted += m.Value
				} else {
					t.Rejected += m.Value
				}
				rec.ToolActions[key] = t
			}
		}
	}
	out := make([]claudeCodeRecord, 0, len(actors))
	for _, act := range actors {
		rec := byActor[act]
		// A session the gateway served and whose metrics it received is
		// one session: the larger count holds both.
		rec.CoreMetrics.NumSessions = max(rec.CoreMetrics.NumSessions, metricSessions[act])
		out = append(out, *rec)
	}
	slices.SortFunc(out, func(x, y claudeCodeRecord) int {
		return cmp.Or(cmp.Compare(x.Actor.Type, y.Actor.Type), cmp.Compare(x.Actor.EmailAddress, y.Actor.EmailAddress),
			cmp.Compare(x.Actor.APIKeyName, y.Actor.APIKeyName))
	})
	return out
}
