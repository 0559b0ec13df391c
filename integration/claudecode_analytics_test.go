package integration

import (
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/testbin"
	"github.com/modelgate/modelgate/internal/testwait"
)

// TestClaudeCodeAnalyticsReport runs the real Claude Code through the
// gateway with its OpenTelemetry export pointed there too, and its model
// (the scripted backend) writing a three-line file with the Write tool.
// The claude_code report, in Anthropic's shape, must show the day's
// session, the lines Claude Code counted, the Write tool's accepted
// decision and the model's tokens and cost, under the key's actor.
func TestClaudeCodeAnalyticsReport(t *testing.T) {
	claude := testbin.ClaudeCode(t)
	dir := t.TempDir()
	target := filepath.Join(dir, "notes.txt")
	script := &scriptedBackend{pick: func([]string) (string, string) {
		args, _ := json.Marshal(map[string]string{"file_path": target, "content": "one\ntwo\nthree\n"})
		return "Write", string(args)
	}}
	up := httptest.NewServer(script)
	t.Cleanup(up.Close)
	g := startGateway(t, gatewayConfig{models: pricedCoder(up.URL)})

	res := runClaude(t, claude, claudeRun{prompt: "Write notes.txt with the Write tool, then say you are done.", dir: dir,
		env: []string{"ANTHROPIC_BASE_URL=" + g.base, "ANTHROPIC_AUTH_TOKEN=" + aliceKey,
			"CLAUDE_CODE_ENABLE_TELEMETRY=1", "OTEL_METRICS_EXPORTER=otlp", "OTEL_EXPORTER_OTLP_PROTOCOL=http/json",
			"OTEL_EXPORTER_OTLP_ENDPOINT=" + g.base, "OTEL_EXPORTER_OTLP_HEADERS=Authorization=Bearer " + aliceKey,
			"OTEL_METRIC_EXPORT_INTERVAL=500", "TMPDIR=" + t.TempDir()},
		args: []string{"--allowedTools", "Write"}})
	if b, err := os.ReadFile(target); err != nil || string(b) != "one\ntwo\nthree\n" {
		t.Fatalf("the Write tool did not run: %q %v", b, err)
	}
	t.Logf("session %s", res.SessionID)

	type record struct {
		Date  string `json:"date"`
		Actor struct {
			Type       string `json:"type"`
			APIKeyName string `json:"api_key_name"`
		} `json:"actor"`
		TerminalType string `json:"terminal_type"`
		CoreMetrics  struct {
			NumSessions int64 `json:"num_sessions"`
			LinesOfCode struct {
				Added, Removed int64
			} `json:"lines_of_code"`
		} `json:"core_metrics"`
		ToolActions    map[string]struct{ Accepted, Rejected int64 } `json:"tool_actions"`
		ModelBreakdown []struct {
			Model         string `json:"model"`
			EstimatedCost struct {
				Amount   float64 `json:"amount"`
				Currency string  `json:"currency"`
			} `json:"estimated_cost"`
		} `json:"model_breakdown"`
	}
	var rec record
	var body []byte
	day := time.Now().UTC().Format("2006-01-02")
	// Claude Code exports on an interval and on exit; the ledger writes
	// its records in batches.
	ok := testwait.Until(func() bool {
		var st int
		st, _, body = g.do(t, "GET", "/v1/organizations/usage_report/claude_code?starting_at="+day, adminKey, "")
		var page struct{ Data []record }
		if st != 200 || json.Unmarshal(body, &page) != nil || len(page.Data) != 1 {
			return false
		}
		rec = page.Data[0]
		return rec.CoreMetrics.LinesOfCode.Added >= 3 && rec.ToolActions["write_tool"].Accepted >= 1 && len(rec.ModelBreakdown) > 0
	})
	t.Logf("claude_code report: %s", body)
	if !ok {
		t.Fatalf("the report never showed the lines and the Write decision")
	}
	if rec.Actor.Type != "api_actor" || rec.Actor.APIKeyName != "alice" || rec.CoreMetrics.NumSessions != 1 || rec.Date != day+"T00:00:00Z" ||
		rec.ModelBreakdown[0].EstimatedCost.Amount <= 0 || rec.ModelBreakdown[0].EstimatedCost.Currency != "USD" || rec.TerminalType == "" {
		t.Errorf("record %+v", rec)
	}
}
