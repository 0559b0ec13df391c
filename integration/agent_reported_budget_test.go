package integration

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/fakes"
)

// apiRequestEvent is one Claude Code api_request event as OTLP/JSON, the
// shape of POST /v1/logs.
func apiRequestEvent(session, requestID, model string, costUSD float64, input, output int) string {
	return fmt.Sprintf(`{"resourceLogs":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"claude-code"}}]},
"scopeLogs":[{"logRecords":[{"body":{"stringValue":"claude_code.api_request"},"attributes":[
{"key":"event.name","value":{"stringValue":"api_request"}},{"key":"session.id","value":{"stringValue":%q}},
{"key":"request_id","value":{"stringValue":%q}},{"key":"model","value":{"stringValue":%q}},
{"key":"input_tokens","value":{"intValue":"%d"}},{"key":"output_tokens","value":{"intValue":"%d"}},
{"key":"cost_usd","value":{"doubleValue":%g}}]}]}]}]}`, session, requestID, model, input, output, costUSD)
}

// workspaceSpent is the workspace's monthly spend in cents as key's
// /v1/me shows it.
func workspaceSpent(t *testing.T, g *gateway, key string) float64 {
	t.Helper()
	status, _, body := g.do(t, "GET", "/v1/me", key, "")
	var me struct {
		Budgets []struct{ Scope, Spent string } `json:"budgets"`
	}
	if status != 200 || json.Unmarshal(body, &me) != nil {
		t.Fatalf("/v1/me: %d %s", status, body)
	}
	for _, b := range me.Budgets {
		if b.Scope == "workspace" {
			f, err := strconv.ParseFloat(b.Spent, 64)
			if err != nil {
				t.Fatalf("/v1/me spent %q", b.Spent)
			}
			return f
		}
	}
	t.Fatalf("/v1/me has no workspace budget: %s", body)
	return 0
}

// sessionCost is the sessions report's cost of session, "" when absent.
func sessionCost(t *testing.T, g *gateway, session string) string {
	t.Helper()
	status, _, body := g.do(t, "GET", "/v1/organizations/sessions?limit=1000", adminKey, "")
	var page struct {
		Data []struct {
			ID   string                  `json:"id"`
			Cost struct{ Amount string } `json:"cost"`
		} `json:"data"`
	}
	if status != 200 || json.Unmarshal(body, &page) != nil {
		t.Fatalf("sessions: %d %s", status, body)
	}
	for _, s := range page.Data {
		if s.ID == session {
			return s.Cost.Amount
		}
	}
	return ""
}

// TestAgentReportedCostIsAReport (hostile review N5): one teammate's
// agent reporting an invented $50 does not lock the workspace's $5
// budget; with the workspace's count_agent_reported on, a reported cost
// counts at most its tokens at the alias's list price; an admin deletes
// a reported session's records and the spend goes with them.
func TestAgentReportedCostIsAReport(t *testing.T) {
	var ws struct {
		ID                 string `json:"id"`
		CountAgentReported bool   `json:"count_agent_reported"`
	}
	u := startUpstreams(t, fakes.Options{})
	g := startGateway(t, gatewayConfig{models: dearModels(u)})
	status, _, body := g.do(t, "POST", "/v1/organizations/workspaces", adminKey, `{"name":"team","budget":{"amount":"500","period":"monthly"}}`)
	if status != 200 || json.Unmarshal(body, &ws) != nil || ws.CountAgentReported {
		t.Fatalf("workspace: %d %s", status, body)
	}
	one := createKey(t, g, `{"name":"teammate-1","workspace_id":"`+ws.ID+`"}`)
	two := createKey(t, g, `{"name":"teammate-2","workspace_id":"`+ws.ID+`"}`)

	// An invented $50 for a request of 1,000 + 1,000 tokens.
	if status, _, body := g.do(t, "POST", "/v1/logs", one.Value, apiRequestEvent("sess-invented", "req-1", "claude-sonnet-4-5", 50, 1000, 1000)); status != 200 {
		t.Fatalf("logs export: %d %s", status, body)
	}
	deadline := time.Now().Add(10 * time.Second)
	for sessionCost(t, g, "sess-invented") == "" {
		if time.Now().After(deadline) {
			t.Fatal("the agent-reported session never reached the sessions report")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if got := sessionCost(t, g, "sess-invented"); got != "5000" {
		t.Errorf("the sessions report shows the reported cost as reported: %q cents, want 5000", got)
	}
	// Budgets read spend from the database every second: three seconds
	// see several reads.
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if spent := workspaceSpent(t, g, two.Value); spent >= 500 {
			t.Fatalf("one teammate's agent report locked the workspace: spent %v cents of 500", spent)
		}
	}
	if status, _, body := chatAs(t, g, two.Value, ""); status != 200 {
		t.Fatalf("a teammate's request after the report: %d %s", status, body)
	}

	// The admin turns counting on: the next report counts, clamped to
	// 1,000 × $0.0005 + 1,000 × $0.001 = 150 cents.
	status, _, body = g.do(t, "POST", "/v1/organizations/workspaces/"+ws.ID, adminKey, `{"count_agent_reported":true}`)
	if status != 200 || json.Unmarshal(body, &ws) != nil || !ws.CountAgentReported {
		t.Fatalf("turning count_agent_reported on: %d %s", status, body)
	}
	before := workspaceSpent(t, g, two.Value)
	if status, _, body := g.do(t, "POST", "/v1/logs", one.Value, apiRequestEvent("sess-counted", "req-2", "claude-sonnet-4-5", 50, 1000, 1000)); status != 200 {
		t.Fatalf("logs export: %d %s", status, body)
	}
	deadline = time.Now().Add(10 * time.Second)
	for workspaceSpent(t, g, two.Value) < before+150 {
		if time.Now().After(deadline) {
			t.Fatalf("the counted report never reached the workspace's spend (%v cents before)", before)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if spent := workspaceSpent(t, g, two.Value); spent != before+150 {
		t.Errorf("workspace spend %v cents, want %v: the $50 report clamped to 150 cents", spent, before+150)
	}
	if got := sessionCost(t, g, "sess-counted"); got != "150" {
		t.Errorf("counted session cost %q cents, want 150", got)
	}

	// Only an admin deletes, naming the key; then record and spend go.
	path := "/v1/organizations/sessions/sess-counted/agent_reported?api_key_id=" + one.ID
	if status, _, _ := g.do(t, "DELETE", path, two.Value, ""); status != 403 {
		t.Errorf("a member's delete: %d, want 403", status)
	}
	status, _, body = g.do(t, "DELETE", path, adminKey, "")
	if status != 200 || !strings.Contains(string(body), `"deleted_records":1`) || !strings.Contains(string(body), `"budget_cost":{"amount":"150"`) {
		t.Fatalf("delete: %d %s", status, body)
	}
	deadline = time.Now().Add(10 * time.Second)
	for workspaceSpent(t, g, two.Value) != before {
		if time.Now().After(deadline) {
			t.Fatalf("the deleted report's spend stayed: %v cents, want %v", workspaceSpent(t, g, two.Value), before)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if got := sessionCost(t, g, "sess-counted"); got != "" {
		t.Errorf("the deleted session is still reported at %q cents", got)
	}
	if status, _, body := g.do(t, "DELETE", path, adminKey, ""); status != 404 {
		t.Errorf("deleting again: %d %s, want 404", status, body)
	}
}
