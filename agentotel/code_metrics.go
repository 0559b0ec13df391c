package agentotel

import (
	"math"
	"time"

	colmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"

	"github.com/modelgate/modelgate/ledger"
)

// Claude Code's metrics of the work a session did, which no request the
// gateway sees can tell: the Claude Code analytics report's lines of
// code, commits, pull requests and edit tool decisions.
const (
	metricLines     = "claude_code.lines_of_code.count"     // attribute type: added, removed
	metricCommits   = "claude_code.commit.count"            //
	metricPulls     = "claude_code.pull_request.count"      //
	metricDecisions = "claude_code.code_edit_tool.decision" // attributes tool_name, decision: accept, reject
)

// CodeMetrics finds those metrics' points in an export, each with its
// session, terminal and series (see ledger.AgentMetric). Points
// without a session are left out: they belong to no seat's day.
func CodeMetrics(req *colmetrics.ExportMetricsServiceRequest, now time.Time) []ledger.AgentMetric {
	var out []ledger.AgentMetric
	for _, rm := range req.GetResourceMetrics() {
		res := rm.GetResource().GetAttributes()
		for _, sm := range rm.GetScopeMetrics() {
			for _, m := range sm.GetMetrics() {
				name := m.GetName()
				switch name {
				case metricLines, metricCommits, metricPulls, metricDecisions:
				default:
					continue
				}
				cumulative := m.GetSum().GetAggregationTemporality() == metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE
				for _, dp := range m.GetSum().GetDataPoints() {
					a := dp.GetAttributes()
					pick := func(k string) string { return or(str(a, k), str(res, k)) }
					am := ledger.AgentMetric{SessionID: pick("session.id"), Terminal: pick("terminal.type"), Metric: name}
					switch name {
					case metricLines:
						am.Attr = pick("type")
						if am.Attr != "added" && am.Attr != "removed" {
							continue
						}
					case metricDecisions:
						tool, decision := pick("tool_name"), pick("decision")
						if tool == "" || (decision != "accept" && decision != "reject") {
							continue
						}
						am.Attr = tool + ":" + decision
					}
					if am.SessionID == "" {
						continue
					}
					am.Value = pointValue(dp.GetAsInt(), dp.GetAsDouble())
					am.Time = unixNano(dp.GetTimeUnixNano())
					// A cumulative series is one row, its latest total; each
					// delta point is its own row, so an exporter's retry of
					// it counts once.
					am.Series = unixNano(dp.GetStartTimeUnixNano())
					if !cumulative {
						am.Series = am.Time
					}
					// A clock a day off files nothing in another day.
					if am.Time.IsZero() || am.Time.After(now.Add(24*time.Hour)) || am.Time.Before(now.Add(-24*time.Hour)) {
						am.Time = now
					}
					out = append(out, am)
				}
			}
		}
	}
	return out
}

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func pointValue(i int64, f float64) int64 {
	if i > 0 {
		return min(i, 1<<40)
	}
	if math.IsNaN(f) || f <= 0 {
		return 0
	}
	return int64(math.Min(math.Round(f), 1<<40))
}

func unixNano(ns uint64) time.Time {
	if ns == 0 || ns > math.MaxInt64 {
		return time.Time{}
	}
	return time.Unix(0, int64(ns)).UTC()
}
