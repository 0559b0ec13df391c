package agentotel

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/modelgate/modelgate/ledger"
)

// Claude Code's work metrics as its OTLP/JSON exporter sends them (delta
// temporality, its default): each point with its session, terminal and
// attributes; usage metrics and points without a session are left out.
func TestCodeMetrics(t *testing.T) {
	js := `{"resourceMetrics":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"claude-code"}}]},
"scopeMetrics":[{"metrics":[
{"name":"claude_code.lines_of_code.count","sum":{"aggregationTemporality":1,"dataPoints":[
 {"asDouble":12,"timeUnixNano":"1764194400000000000","attributes":[{"key":"session.id","value":{"stringValue":"s1"}},{"key":"terminal.type","value":{"stringValue":"vscode"}},{"key":"type","value":{"stringValue":"added"}}]},
 {"asDouble":3,"timeUnixNano":"1764194400000000000","attributes":[{"key":"session.id","value":{"stringValue":"s1"}},{"key":"type","value":{"stringValue":"removed"}}]},
 {"asDouble":3,"attributes":[{"key":"type","value":{"stringValue":"removed"}}]}]}},
{"name":"claude_code.code_edit_tool.decision","sum":{"aggregationTemporality":2,"dataPoints":[
 {"asInt":"2","startTimeUnixNano":"1764190000000000000","timeUnixNano":"1764194400000000000","attributes":[{"key":"session.id","value":{"stringValue":"s1"}},{"key":"tool_name","value":{"stringValue":"Edit"}},{"key":"decision","value":{"stringValue":"accept"}}]}]}},
{"name":"claude_code.commit.count","sum":{"dataPoints":[{"asDouble":1,"attributes":[{"key":"session.id","value":{"stringValue":"s1"}}]}]}},
{"name":"claude_code.cost.usage","sum":{"dataPoints":[{"asDouble":0.5,"attributes":[{"key":"session.id","value":{"stringValue":"s1"}}]}]}}
]}]}]}`
	req, err := DecodeMetrics([]byte(js), JSON)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(0, 1764194400000000000).UTC()
	pts := CodeMetrics(req, now)
	if len(pts) != 4 {
		t.Fatalf("%d points: %+v", len(pts), pts)
	}
	if p := pts[0]; p.Metric != metricLines || p.Attr != "added" || p.Value != 12 || p.Terminal != "vscode" || !p.Series.Equal(now) {
		t.Errorf("lines added: %+v", p)
	}
	if p := pts[2]; p.Attr != "Edit:accept" || p.Value != 2 || !p.Series.Equal(time.Unix(0, 1764190000000000000)) {
		t.Errorf("cumulative decision keeps its start as its series: %+v", p)
	}
	if p := pts[3]; p.Metric != metricCommits || !p.Time.Equal(now) {
		t.Errorf("a point without a time takes now: %+v", p)
	}
}

func FuzzCodeMetrics(f *testing.F) {
	f.Add([]byte(`{"resourceMetrics":[{"scopeMetrics":[{"metrics":[{"name":"claude_code.commit.count","sum":{"dataPoints":[{"asInt":"1","attributes":[{"key":"session.id","value":{"stringValue":"s"}}]}]}}]}]}]}`))
	now := time.Unix(1764194400, 0).UTC()
	f.Fuzz(func(t *testing.T, b []byte) {
		req, err := DecodeMetrics(b, JSON)
		if err != nil {
			return
		}
		for _, p := range CodeMetrics(req, now) {
			if p.SessionID == "" || p.Value < 0 || p.Value > 1<<40 || p.Time.Before(now.Add(-24*time.Hour)) || p.Time.After(now.Add(24*time.Hour)) {
				t.Fatalf("point %+v", p)
			}
		}
	})
}

// The receiver hands an export's work metrics to Options.Metrics under the
// caller's key, and asks for a retry when they cannot be kept.
func TestReceiverKeepsCodeMetrics(t *testing.T) {
	var got []ledger.AgentMetric
	var fail error
	rc := NewReceiver(Options{
		Caller: func(*http.Request) (string, string, bool) { return "key-1", "", true },
		Metrics: func(_ context.Context, key string, pts []ledger.AgentMetric) error {
			got = append(got, pts...)
			return fail
		},
	})
	js := []byte(`{"resourceMetrics":[{"scopeMetrics":[{"metrics":[{"name":"claude_code.pull_request.count","sum":{"dataPoints":[{"asInt":"1","attributes":[{"key":"session.id","value":{"stringValue":"s"}}]}]}}]}]}]}`)
	if w := post(t, rc.ServeMetrics, "/v1/metrics", "application/json", "", js, "Bearer x"); w.Code != 200 || len(got) != 1 || got[0].Metric != metricPulls {
		t.Fatalf("%d %+v", w.Code, got)
	}
	fail = errors.New("down")
	if w := post(t, rc.ServeMetrics, "/v1/metrics", "application/json", "", js, "Bearer x"); w.Code != http.StatusServiceUnavailable {
		t.Fatalf("ledger down: %d", w.Code)
	}
}
