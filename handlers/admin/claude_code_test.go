package admin

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/policy"
)

// The claude_code report in Anthropic's shape: a person's two keys are
// one user_actor record; a key no person holds is an api_actor by its
// name; lines of code, commits, pull requests, edit decisions, sessions
// and the terminal come from the metrics Claude Code exported, tokens and
// cost from the records, merged per model.
func TestClaudeCodeReportPerPersonWithMetrics(t *testing.T) {
	a, _ := controlsAdmin(t)
	ctx := context.Background()
	st := a.Store
	carol := &ledger.KeyCreator{Type: "user", ID: "u1", Email: "carol@example.com"}
	k1, _, err := a.Controls.MintKey(ctx, policy.NewKey{Name: "carol-laptop", CreatedBy: carol})
	k2, _, err2 := a.Controls.MintKey(ctx, policy.NewKey{Name: "carol-desktop", CreatedBy: carol})
	ci, _, err3 := a.Controls.MintKey(ctx, policy.NewKey{Name: "ci-bot"})
	if err != nil || err2 != nil || err3 != nil {
		t.Fatal(err, err2, err3)
	}
	day := time.Date(2025, 9, 8, 0, 0, 0, 0, time.UTC)
	rec := func(key, session string, in int64) ledger.Record {
		return ledger.Record{Time: day.Add(time.Hour), KeyID: key, Alias: "claude", UpstreamModel: "claude-sonnet-4-5", Provider: "anthropic",
			ServiceTier: "standard", InputTokens: in, OutputTokens: 10, Status: 200, Outcome: "ok", SessionID: session, Agent: "claude-code",
			CostPicoUSD: in * 1e8}
	}
	if err := st.Insert(ctx, []ledger.Record{rec(k1.ID, "s1", 100), rec(k2.ID, "s2", 50), rec(ci.ID, "s3", 10)}); err != nil {
		t.Fatal(err)
	}
	m := func(session, metric, attr string, v int64) ledger.AgentMetric {
		return ledger.AgentMetric{SessionID: session, Terminal: "vscode", Metric: metric, Attr: attr, Series: day, Time: day.Add(2 * time.Hour), Value: v}
	}
	ms := st.(ledger.AgentMetricStore)
	if err := ms.PutAgentMetrics(ctx, k1.ID, []ledger.AgentMetric{
		m("s1", "claude_code.lines_of_code.count", "added", 40), m("s1", "claude_code.lines_of_code.count", "removed", 5),
		m("s1", "claude_code.commit.count", "", 2), m("s1", "claude_code.pull_request.count", "", 1),
		m("s1", "claude_code.code_edit_tool.decision", "Edit:accept", 3), m("s1", "claude_code.code_edit_tool.decision", "Write:reject", 1),
	}); err != nil {
		t.Fatal(err)
	}
	// A retried cumulative point is not counted twice; a later total
	// replaces it.
	if err := ms.PutAgentMetrics(ctx, k2.ID, []ledger.AgentMetric{m("s2", "claude_code.lines_of_code.count", "added", 7),
		m("s2", "claude_code.lines_of_code.count", "added", 7), m("s2", "claude_code.lines_of_code.count", "added", 9)}); err != nil {
		t.Fatal(err)
	}

	w := serve(a, adminID, "/v1/organizations/usage_report/claude_code?starting_at=2025-09-08", nil)
	if w.Code != http.StatusOK {
		t.Fatalf("%d %s", w.Code, w.Body)
	}
	var page struct {
		Data []claudeCodeRecord `json:"data"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &page); err != nil {
		t.Fatal(err)
	}
	if len(page.Data) != 2 {
		t.Fatalf("%d records: %s", len(page.Data), w.Body)
	}
	bot, person := page.Data[0], page.Data[1]
	if bot.Actor != (claudeCodeActor{Type: "api_actor", APIKeyName: "ci-bot"}) || bot.CoreMetrics.NumSessions != 1 || bot.TerminalType != "unknown" {
		t.Errorf("api actor: %+v", bot)
	}
	c := person.CoreMetrics
	if person.Actor != (claudeCodeActor{Type: "user_actor", EmailAddress: "carol@example.com"}) || c.NumSessions != 2 ||
		c.LinesOfCode != (lines{Added: 49, Removed: 5}) || c.Commits != 2 || c.PullRequests != 1 || person.TerminalType != "vscode" ||
		person.ToolActions["edit_tool"] != (accepted{Accepted: 3}) || person.ToolActions["write_tool"] != (accepted{Rejected: 1}) ||
		len(person.ToolActions) != 4 {
		t.Errorf("user actor: %+v", person)
	}
	if len(person.ModelBreakdown) != 1 || person.ModelBreakdown[0].Tokens.Input != 150 || person.ModelBreakdown[0].EstimatedCost.Amount != 1.5 {
		t.Errorf("model breakdown: %+v", person.ModelBreakdown)
	}
	var raw map[string]any
	_ = json.Unmarshal(w.Body.Bytes(), &raw)
	actor := raw["data"].([]any)[1].(map[string]any)["actor"].(map[string]any)
	if _, has := actor["api_key_name"]; has || len(actor) != 2 {
		t.Errorf("user_actor carries other fields: %v", actor)
	}
}
