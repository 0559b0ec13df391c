package agentotel

import (
	"context"
	"testing"
	"time"

	"github.com/modelgate/modelgate/ledger"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
)

// An agent's reported cost is a report: no budget counts it unless the
// workspace's admin asked; then it counts at most its tokens at list
// price (hostile review N5).
func TestReportedCostCountsOnlyWhereTurnedOnAndBounded(t *testing.T) {
	haiku := ledger.Prices{Input: 1_000_000, Output: 5_000_000} // $1 and $5 per million tokens
	for _, c := range []struct {
		name        string
		workspace   string
		cost        float64
		wantCost    int64
		wantReports bool
	}{
		// $50 invented for 10 input and 20 output tokens.
		{"off: reported as sent, report only", "plain", 50, 50_000_000_000_000, true},
		{"on: an invented cost is clamped to list price", "counted", 50, 10*1_000_000 + 20*5_000_000, false},
		{"on: a lower reported cost stands", "counted", 0.00000005, 50_000, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got []ledger.Record
			rc := NewReceiver(Options{
				Record:     func(r ledger.Record) bool { got = append(got, r); return true },
				Counted:    func(ws string) bool { return ws == "counted" },
				ListPrices: func(model string) ledger.Prices { return map[string]ledger.Prices{"claude-haiku-4-5": haiku}[model] },
				Now:        func() time.Time { return time.Date(2025, 11, 26, 22, 0, 0, 0, time.UTC) },
			})
			res, _, status := rc.Logs(context.Background(), claudeCodeLogsProto("s-1", c.cost), "key-1", c.workspace)
			if status != 200 || res.Recorded != 1 || len(got) != 1 {
				t.Fatalf("status %d, result %+v, records %d", status, res, len(got))
			}
			if got[0].CostPicoUSD != c.wantCost || got[0].ReportOnly != c.wantReports {
				t.Fatalf("cost %d report-only %v; want %d, %v", got[0].CostPicoUSD, got[0].ReportOnly, c.wantCost, c.wantReports)
			}
		})
	}
}

// A counted cost is the person's and their groups' as much as the key's
// (their spend limits count it: one sum whatever key reports it); a
// report only carries them too, and no budget counts it.
func TestReportedCostIsChargedToThePerson(t *testing.T) {
	for _, ws := range []string{"counted", "plain"} {
		var got []ledger.Record
		rc := NewReceiver(Options{
			Record:     func(r ledger.Record) bool { got = append(got, r); return true },
			Counted:    func(ws string) bool { return ws == "counted" },
			ListPrices: func(string) ledger.Prices { return ledger.Prices{Input: 1_000_000, Output: 5_000_000} },
			Person: func(ctx context.Context) (string, string) {
				return "bob@example.com", "eng\nplatform"
			},
		})
		if res, _, status := rc.Logs(context.Background(), claudeCodeLogsProto("s-1", 0.0001), "key-1", ws); status != 200 || res.Recorded != 1 {
			t.Fatalf("%s: %d %+v", ws, status, res)
		}
		if r := got[0]; r.Person != "bob@example.com" || r.Groups != "eng\nplatform" || r.ReportOnly != (ws == "plain") {
			t.Errorf("%s: person %q groups %q report-only %v", ws, r.Person, r.Groups, r.ReportOnly)
		}
	}
}

// One counted report cannot use up a limit shared by everyone: an export
// claiming 2e9 output tokens of an opus-priced model (about $150,000 at
// list price) counts MaxCountedReport (hostile8 A1).
func TestOneReportCountsAtMostMaxCountedReport(t *testing.T) {
	var got []ledger.Record
	rc := NewReceiver(Options{
		Record:     func(r ledger.Record) bool { got = append(got, r); return true },
		Counted:    func(string) bool { return true },
		ListPrices: func(string) ledger.Prices { return ledger.Prices{Input: 15_000_000, Output: 75_000_000} },
	})
	logs := claudeCodeLogsProto("s-1", 150_000)
	for _, a := range logs.ResourceLogs[0].ScopeLogs[0].LogRecords[0].Attributes {
		if a.Key == "output_tokens" {
			a.GetValue().Value = &commonpb.AnyValue_IntValue{IntValue: 2_000_000_000}
		}
	}
	if res, _, status := rc.Logs(context.Background(), logs, "key-1", "ws"); status != 200 || res.Recorded != 1 {
		t.Fatalf("%d %+v", status, res)
	}
	if got[0].OutputTokens != 2_000_000_000 || got[0].CostPicoUSD != MaxCountedReport {
		t.Errorf("output %d, counted cost %d; want the tokens kept, the cost at %d", got[0].OutputTokens, got[0].CostPicoUSD, int64(MaxCountedReport))
	}
}
