package agentotel

import (
	"math"
	"strconv"
	"strings"
	"time"

	collogs "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	colmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"

	"github.com/modelgate/modelgate/ledger"
)

// APIRequest is one model request as an agent reported it: Claude Code's
// claude_code.api_request event.
type APIRequest struct {
	Time                                               time.Time
	Agent, SessionID, Model, RequestID                 string
	InputTokens, OutputTokens, CacheRead, CacheCreated int64
	CostPicoUSD                                        int64
	Duration                                           time.Duration
}

// apiRequestEvent is Claude Code's event name for a finished model request;
// its log records also carry event.name "api_request" and, in newer
// versions, the OTLP event_name field.
const apiRequestEvent = "claude_code.api_request"

// Extracted is what one logs export holds for the ledger.
type Extracted struct {
	Requests []APIRequest
	Records  int // every log record in the export
	// Rejected counts api_request events that cannot be recorded (no
	// session.id or no model), with the first reason.
	Rejected int
	Reason   string
}

// APIRequests finds the api_request events in a logs export.
func APIRequests(req *collogs.ExportLogsServiceRequest) Extracted {
	var out Extracted
	for _, rl := range req.GetResourceLogs() {
		agent := agentName(rl.GetResource().GetAttributes())
		for _, sl := range rl.GetScopeLogs() {
			for _, lr := range sl.GetLogRecords() {
				out.Records++
				if !isAPIRequest(lr) {
					continue
				}
				ev, reason := apiRequest(lr, agent)
				if reason != "" {
					out.Rejected++
					if out.Reason == "" {
						out.Reason = reason
					}
					continue
				}
				out.Requests = append(out.Requests, ev)
			}
		}
	}
	return out
}

// agentName is the resource's service.name as the ledger names agents:
// Claude Code's "claude-code" is already that name.
func agentName(attrs []*commonpb.KeyValue) string {
	if s := str(attrs, "service.name"); s != "" {
		return strings.ToLower(s)
	}
	return "unknown"
}

func isAPIRequest(lr *logspb.LogRecord) bool {
	if lr.GetEventName() == apiRequestEvent {
		return true
	}
	if lr.GetBody().GetStringValue() == apiRequestEvent {
		return true
	}
	n := str(lr.GetAttributes(), "event.name")
	return n == "api_request" || n == apiRequestEvent
}

func apiRequest(lr *logspb.LogRecord, agent string) (APIRequest, string) {
	a := lr.GetAttributes()
	ev := APIRequest{
		Agent:        agent,
		SessionID:    str(a, "session.id"),
		Model:        str(a, "model"),
		RequestID:    str(a, "request_id"),
		InputTokens:  num(a, "input_tokens"),
		OutputTokens: num(a, "output_tokens"),
		CacheRead:    num(a, "cache_read_tokens"),
		CacheCreated: num(a, "cache_creation_tokens"),
		Duration:     time.Duration(num(a, "duration_ms")) * time.Millisecond,
	}
	if ev.SessionID == "" {
		return ev, "api_request event without session.id"
	}
	if ev.Model == "" {
		return ev, "api_request event without model"
	}
	// cost_usd_micros is exact where present; cost_usd is the float.
	if _, ok := attr(a, "cost_usd_micros"); ok {
		ev.CostPicoUSD = satMul(num(a, "cost_usd_micros"), 1_000_000)
	} else if f := float(a, "cost_usd"); f > 0 {
		ev.CostPicoUSD = int64(math.Min(math.Round(f*1e12), float64(ledger.MaxCost)))
	}
	switch {
	case parseTime(str(a, "event.timestamp")) != (time.Time{}):
		ev.Time = parseTime(str(a, "event.timestamp"))
	case lr.GetTimeUnixNano() != 0:
		ev.Time = time.Unix(0, int64(lr.GetTimeUnixNano())).UTC()
	case lr.GetObservedTimeUnixNano() != 0:
		ev.Time = time.Unix(0, int64(lr.GetObservedTimeUnixNano())).UTC()
	}
	return ev, ""
}

// Record is the ledger record of an agent-reported request: endpoint
// agent_reported, provider from the model name, no prices (the agent
// reports its own cost), report-only (no budget counts it; see
// Options.Counted).
func (ev APIRequest) Record(keyID, workspace string, now time.Time) ledger.Record {
	t := ev.Time
	// A timestamp the agent got wrong by more than a day is replaced by the
	// arrival time, so a bad clock cannot file usage in another month.
	if t.IsZero() || t.After(now.Add(24*time.Hour)) || t.Before(now.Add(-24*time.Hour)) {
		t = now
	}
	in := ledger.ClampTokens(ev.InputTokens)
	cc := ledger.ClampTokens(ev.CacheCreated)
	cr := ledger.ClampTokens(ev.CacheRead)
	return ledger.Record{
		Time:            t.UTC(),
		RequestID:       ev.RequestID,
		KeyID:           keyID,
		Workspace:       workspace,
		Alias:           ev.Model,
		UpstreamModel:   ev.Model,
		Provider:        providerOf(ev.Model),
		ServiceTier:     "standard",
		Endpoint:        ledger.EndpointAgentReported,
		InputTokens:     in,
		CacheCreation5m: cc,
		CacheReadTokens: cr,
		OutputTokens:    ledger.ClampTokens(ev.OutputTokens),
		Status:          200,
		Outcome:         ledger.OutcomeOK,
		Latency:         max(ev.Duration, 0),
		CostPicoUSD:     ev.CostPicoUSD,
		ReportOnly:      true,
		SessionID:       ev.SessionID,
		Agent:           ev.Agent,
		ContextWindow:   ledger.ContextWindowFor(in + cc + cr),
	}
}

func providerOf(model string) string {
	if strings.HasPrefix(model, "claude") {
		return "anthropic"
	}
	return "agent"
}

// MetricPoints counts the data points of a metrics export and those of
// Claude Code's usage metrics (claude_code.token.usage, claude_code.cost.usage).
func MetricPoints(req *colmetrics.ExportMetricsServiceRequest) (points, usage int) {
	for _, rm := range req.GetResourceMetrics() {
		for _, sm := range rm.GetScopeMetrics() {
			for _, m := range sm.GetMetrics() {
				n := len(m.GetSum().GetDataPoints()) + len(m.GetGauge().GetDataPoints()) +
					len(m.GetHistogram().GetDataPoints()) + len(m.GetExponentialHistogram().GetDataPoints()) +
					len(m.GetSummary().GetDataPoints())
				points += n
				if m.GetName() == "claude_code.token.usage" || m.GetName() == "claude_code.cost.usage" {
					usage += n
				}
			}
		}
	}
	return points, usage
}

func attr(attrs []*commonpb.KeyValue, key string) (*commonpb.AnyValue, bool) {
	for _, kv := range attrs {
		if kv.GetKey() == key {
			return kv.GetValue(), true
		}
	}
	return nil, false
}

func str(attrs []*commonpb.KeyValue, key string) string {
	v, ok := attr(attrs, key)
	if !ok {
		return ""
	}
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return clean(x.StringValue)
	case *commonpb.AnyValue_IntValue:
		return strconv.FormatInt(x.IntValue, 10)
	}
	return ""
}

// clean bounds an agent-sent string to 200 bytes of printable text: it is
// stored and shown in reports.
func clean(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, s)
	if len(s) > 200 {
		s = strings.ToValidUTF8(s[:200], "")
	}
	return s
}

// num reads an integer attribute; Claude Code sends token counts as
// numbers, which its JSON exporter writes as doubles or strings.
func num(attrs []*commonpb.KeyValue, key string) int64 {
	v, ok := attr(attrs, key)
	if !ok {
		return 0
	}
	var n int64
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_IntValue:
		n = x.IntValue
	case *commonpb.AnyValue_DoubleValue:
		if math.IsNaN(x.DoubleValue) {
			return 0
		}
		n = int64(math.Max(math.Min(x.DoubleValue, 1<<62), -1<<62))
	case *commonpb.AnyValue_StringValue:
		n, _ = strconv.ParseInt(strings.TrimSpace(x.StringValue), 10, 64)
	}
	return max(n, 0)
}

func float(attrs []*commonpb.KeyValue, key string) float64 {
	v, ok := attr(attrs, key)
	if !ok {
		return 0
	}
	var f float64
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_DoubleValue:
		f = x.DoubleValue
	case *commonpb.AnyValue_IntValue:
		f = float64(x.IntValue)
	case *commonpb.AnyValue_StringValue:
		f, _ = strconv.ParseFloat(strings.TrimSpace(x.StringValue), 64)
	}
	if math.IsNaN(f) || math.IsInf(f, 0) || f < 0 {
		return 0
	}
	return f
}

func satMul(a, b int64) int64 {
	if a <= 0 {
		return 0
	}
	if a > ledger.MaxCost/b {
		return ledger.MaxCost
	}
	return a * b
}

func parseTime(s string) time.Time {
	if s == "" {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}
	}
	return t.UTC()
}
