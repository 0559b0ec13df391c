package integration

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/testbin"
	"github.com/modelgate/modelgate/ledger"
)

// TestClaudeCodeTelemetryToGateway runs the real Claude Code with its
// OpenTelemetry export pointed at the gateway, once per OTLP/HTTP
// encoding. A "subscription seat" talks to its provider directly (here a
// second gateway standing in for Anthropic) and only its telemetry reaches
// the team's gateway: the sessions report must show that session, marked
// agent-reported. A seat using the gateway for its model requests exports
// telemetry too: its session must count only the gateway's own records.
func TestClaudeCodeTelemetryToGateway(t *testing.T) {
	claude := testbin.ClaudeCode(t)
	models := "model_list:\n  - model_name: echo\n    proxy_params:\n      model: echo/echo\nmodel_aliases:\n  \"claude-*\": echo\n"
	team := startGateway(t, gatewayConfig{models: models, siteExtra: "log"})
	provider := startGateway(t, gatewayConfig{models: models})
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("team gateway's log:\n%s", team.stderr.String())
		}
	})

	var servedSessions, seatSessions []string
	for _, protocol := range []string{"http/json", "http/protobuf"} {
		t.Run(protocol, func(t *testing.T) {
			telemetry := []string{
				"CLAUDE_CODE_ENABLE_TELEMETRY=1",
				"OTEL_METRICS_EXPORTER=otlp",
				"OTEL_LOGS_EXPORTER=otlp",
				"OTEL_EXPORTER_OTLP_PROTOCOL=" + protocol,
				"OTEL_EXPORTER_OTLP_ENDPOINT=" + team.base,
				"OTEL_EXPORTER_OTLP_HEADERS=Authorization=Bearer " + aliceKey,
				"OTEL_METRIC_EXPORT_INTERVAL=1000",
				"OTEL_LOGS_EXPORT_INTERVAL=500",
				// A private temporary directory: Claude Code keeps lock and
				// state files there, shared with any other run on the machine.
				"TMPDIR=" + t.TempDir(),
			}
			// The subscription seat: model requests elsewhere, telemetry here.
			seat := runClaude(t, claude, claudeRun{prompt: "modelgate telemetry seat " + protocol, dir: t.TempDir(),
				env: append([]string{"ANTHROPIC_BASE_URL=" + provider.base, "ANTHROPIC_AUTH_TOKEN=" + bobKey}, telemetry...)})
			// The gateway seat: model requests and telemetry both here.
			served := runClaude(t, claude, claudeRun{prompt: "modelgate telemetry served " + protocol, dir: t.TempDir(),
				env: append([]string{"ANTHROPIC_BASE_URL=" + team.base, "ANTHROPIC_AUTH_TOKEN=" + aliceKey}, telemetry...)})

			type row struct {
				ID                    string  `json:"id"`
				Agent                 *string `json:"agent"`
				APIKeyID              string  `json:"api_key_id"`
				Requests              int64   `json:"requests"`
				AgentReportedRequests int64   `json:"agent_reported_requests"`
				Source                string  `json:"source"`
				Tokens                struct {
					UncachedInput int64 `json:"uncached_input"`
					Output        int64 `json:"output"`
				} `json:"tokens"`
			}
			var seatRow, servedRow row
			// Claude Code flushes its export on exit; the ledger writes in
			// batches, so the rows may take a moment to be readable.
			deadline := time.Now().Add(15 * time.Second)
			for {
				status, _, body := team.do(t, "GET", "/v1/organizations/sessions?limit=100", adminKey, "")
				if status != 200 {
					t.Fatalf("sessions: %d %s", status, body)
				}
				var page struct{ Data []row }
				if err := json.Unmarshal(body, &page); err != nil {
					t.Fatal(err)
				}
				seatRow, servedRow = row{}, row{}
				for _, r := range page.Data {
					switch r.ID {
					case seat.SessionID:
						seatRow = r
					case served.SessionID:
						servedRow = r
					}
				}
				if (seatRow.ID != "" && servedRow.ID != "") || time.Now().After(deadline) {
					t.Logf("sessions report: %s", body)
					break
				}
				time.Sleep(250 * time.Millisecond)
			}
			if seatRow.ID == "" {
				t.Fatalf("the subscription seat's session %s is not in the sessions report", seat.SessionID)
			}
			if seatRow.Source != "agent_reported" || seatRow.AgentReportedRequests < 1 || seatRow.Requests != seatRow.AgentReportedRequests ||
				seatRow.APIKeyID != "alice" || seatRow.Agent == nil || *seatRow.Agent != "claude-code" || seatRow.Tokens.Output < 1 {
				t.Errorf("subscription seat row %+v: want source agent_reported under alice, agent claude-code, with tokens", seatRow)
			}
			if servedRow.ID == "" {
				t.Fatalf("the gateway seat's session %s is not in the sessions report", served.SessionID)
			}
			servedSessions = append(servedSessions, served.SessionID)
			seatSessions = append(seatSessions, seat.SessionID)
			if servedRow.Source != "gateway" || servedRow.AgentReportedRequests != 0 {
				t.Errorf("gateway seat row %+v: want source gateway", servedRow)
			}
		})
	}
	if t.Failed() {
		return
	}
	// Give a late export time to arrive, then read the ledger itself (this
	// stops the gateway, flushing its writer).
	time.Sleep(2 * time.Second)
	bySession := map[string][]ledger.Record{}
	for _, r := range team.ledgerRecords(t) {
		bySession[r.SessionID] = append(bySession[r.SessionID], r)
	}
	for _, id := range servedSessions {
		var served int
		for _, r := range bySession[id] {
			if r.Endpoint == ledger.EndpointAgentReported {
				t.Errorf("session %s: the gateway served it, yet the agent's report of it was recorded: %+v", id, r)
			} else {
				served++
			}
		}
		if served < 1 {
			t.Errorf("session %s: no record of the gateway's own", id)
		}
	}
	for _, id := range seatSessions {
		recs := bySession[id]
		if len(recs) < 1 {
			t.Errorf("session %s: no agent-reported record", id)
		}
		for _, r := range recs {
			if r.Endpoint != ledger.EndpointAgentReported || r.KeyID != "alice" || r.OutputTokens < 1 || r.CostPicoUSD <= 0 {
				t.Errorf("session %s: record %+v, want agent_reported under alice with tokens and cost", id, r)
			}
		}
	}
	if strings.Contains(team.stderr.String(), aliceKey) {
		t.Error("the gateway logged the key")
	}
}
