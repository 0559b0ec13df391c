package agentotel

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	collogs "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	colmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/modelgate/modelgate/ledger"
)

// claudeCodeLogsJSON is shaped like Claude Code's http/json logs export:
// resource service.name claude-code, scope com.anthropic.claude_code.events,
// body claude_code.<event>, numbers as doubles, int64s as strings, and a
// hex traceId as OTLP/JSON writes it.
const claudeCodeLogsJSON = `{"resourceLogs":[{"resource":{"attributes":[
 {"key":"service.name","value":{"stringValue":"claude-code"}},
 {"key":"service.version","value":{"stringValue":"2.1.0"}}],"droppedAttributesCount":0},
 "scopeLogs":[{"scope":{"name":"com.anthropic.claude_code.events","version":"2.1.0"},"logRecords":[
  {"timeUnixNano":"1764194400000000000","observedTimeUnixNano":"1764194400000000000","severityNumber":9,
   "body":{"stringValue":"claude_code.user_prompt"},"traceId":"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b174",
   "attributes":[{"key":"event.name","value":{"stringValue":"user_prompt"}},
   {"key":"session.id","value":{"stringValue":"3f0c2a1e-1111-4222-8333-444455556666"}},
   {"key":"prompt_length","value":{"intValue":"12"}}],"droppedAttributesCount":0},
  {"timeUnixNano":"1764194401000000000","observedTimeUnixNano":"1764194401000000000","severityNumber":9,
   "body":{"stringValue":"claude_code.api_request"},
   "attributes":[{"key":"user.id","value":{"stringValue":"abc"}},
   {"key":"session.id","value":{"stringValue":"3f0c2a1e-1111-4222-8333-444455556666"}},
   {"key":"terminal.type","value":{"stringValue":"non-interactive"}},
   {"key":"event.name","value":{"stringValue":"api_request"}},
   {"key":"event.timestamp","value":{"stringValue":"2025-11-26T22:00:01.000Z"}},
   {"key":"event.sequence","value":{"intValue":3}},
   {"key":"model","value":{"stringValue":"claude-sonnet-4-5"}},
   {"key":"input_tokens","value":{"intValue":"1200"}},
   {"key":"output_tokens","value":{"doubleValue":340}},
   {"key":"cache_read_tokens","value":{"intValue":"5000"}},
   {"key":"cache_creation_tokens","value":{"intValue":"800"}},
   {"key":"cost_usd","value":{"doubleValue":0.012345}},
   {"key":"cost_usd_micros","value":{"intValue":"12345"}},
   {"key":"duration_ms","value":{"intValue":"2100"}},
   {"key":"request_id","value":{"stringValue":"req_011CUx"}},
   {"key":"speed","value":{"stringValue":"normal"}}],"droppedAttributesCount":0}]}]}]}`

func TestDecodeClaudeCodeLogsJSON(t *testing.T) {
	req, err := DecodeLogs([]byte(claudeCodeLogsJSON), JSON)
	if err != nil {
		t.Fatal(err)
	}
	ex := APIRequests(req)
	if ex.Records != 2 || len(ex.Requests) != 1 || ex.Rejected != 0 {
		t.Fatalf("extracted %+v", ex)
	}
	got := ex.Requests[0]
	want := APIRequest{
		Time: time.Date(2025, 11, 26, 22, 0, 1, 0, time.UTC), Agent: "claude-code",
		SessionID: "3f0c2a1e-1111-4222-8333-444455556666", Model: "claude-sonnet-4-5", RequestID: "req_011CUx",
		InputTokens: 1200, OutputTokens: 340, CacheRead: 5000, CacheCreated: 800,
		CostPicoUSD: 12345 * 1_000_000, Duration: 2100 * time.Millisecond,
	}
	if got != want {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}
	now := want.Time.Add(time.Minute)
	rec := got.Record("key-1", "ws-1", now)
	if rec.Endpoint != ledger.EndpointAgentReported || rec.KeyID != "key-1" || rec.Workspace != "ws-1" ||
		rec.SessionID != got.SessionID || rec.Agent != "claude-code" || rec.CacheCreation5m != 800 ||
		rec.Outcome != ledger.OutcomeOK || rec.Provider != "anthropic" || !rec.Time.Equal(want.Time) {
		t.Fatalf("record %+v", rec)
	}
	// A clock a week off is replaced by the arrival time.
	if r := got.Record("k", "", now.Add(7*24*time.Hour)); !r.Time.Equal(now.Add(7 * 24 * time.Hour)) {
		t.Fatalf("skewed time kept: %v", r.Time)
	}
}

// claudeCodeLogsProto is the same export as protobuf, with the event name
// in the OTLP event_name field as newer exporters set it.
func claudeCodeLogsProto(session string, costUSD float64) *collogs.ExportLogsServiceRequest {
	s := func(k, v string) *commonpb.KeyValue {
		return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
	}
	i := func(k string, v int64) *commonpb.KeyValue {
		return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: v}}}
	}
	d := func(k string, v float64) *commonpb.KeyValue {
		return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: v}}}
	}
	return &collogs.ExportLogsServiceRequest{ResourceLogs: []*logspb.ResourceLogs{{
		Resource: &resourcepb.Resource{Attributes: []*commonpb.KeyValue{s("service.name", "claude-code")}},
		ScopeLogs: []*logspb.ScopeLogs{{LogRecords: []*logspb.LogRecord{
			{EventName: "claude_code.api_request", TimeUnixNano: uint64(time.Date(2025, 11, 26, 22, 0, 0, 0, time.UTC).UnixNano()),
				Attributes: []*commonpb.KeyValue{s("session.id", session), s("model", "claude-haiku-4-5"),
					i("input_tokens", 10), i("output_tokens", 20), i("cache_read_tokens", 0), i("cache_creation_tokens", 0),
					d("cost_usd", costUSD), i("duration_ms", 50)}},
			// An api_request without a session cannot be filed: rejected.
			{Body: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: "claude_code.api_request"}},
				Attributes: []*commonpb.KeyValue{s("model", "claude-haiku-4-5")}},
		}}},
	}}}
}

func TestDecodeClaudeCodeLogsProtobuf(t *testing.T) {
	b, err := proto.Marshal(claudeCodeLogsProto("s-1", 0.5))
	if err != nil {
		t.Fatal(err)
	}
	req, err := DecodeLogs(b, Protobuf)
	if err != nil {
		t.Fatal(err)
	}
	ex := APIRequests(req)
	if len(ex.Requests) != 1 || ex.Rejected != 1 || !strings.Contains(ex.Reason, "session.id") {
		t.Fatalf("extracted %+v", ex)
	}
	if r := ex.Requests[0]; r.CostPicoUSD != 500_000_000_000 || r.OutputTokens != 20 || r.Time.IsZero() {
		t.Fatalf("request %+v", r)
	}
}

func TestDecodeErrors(t *testing.T) {
	if _, err := DecodeLogs([]byte(`{"resourceLogs":[{`), JSON); err == nil {
		t.Fatal("truncated JSON decoded")
	}
	if _, err := DecodeLogs([]byte{0xff, 0xff, 0xff}, Protobuf); err == nil {
		t.Fatal("garbage protobuf decoded")
	}
	if _, err := EncodingOf("text/plain"); err == nil {
		t.Fatal("text/plain accepted")
	}
	if e, err := EncodingOf("application/json; charset=utf-8"); err != nil || e != JSON {
		t.Fatalf("json with charset: %v %v", e, err)
	}
}

func TestStripIDsOnlyMembers(t *testing.T) {
	in := `{"traceId" : "abc", "x":"\"traceId\"", "spanId":"01"}`
	got := string(stripIDs([]byte(in)))
	want := `{"traceId" : "", "x":"\"traceId\"", "spanId":""}`
	if got != want {
		t.Fatalf("got %s", got)
	}
}

type fakeLedger struct {
	recs   []ledger.Record
	served map[string]bool
}

func (f *fakeLedger) receiver() *Receiver {
	return NewReceiver(Options{
		Caller: func(r *http.Request) (string, string, bool) {
			return "key-1", "", r.Header.Get("Authorization") == "Bearer sk-good"
		},
		Record: func(r ledger.Record) bool { f.recs = append(f.recs, r); return true },
		Served: func(_ context.Context, s string) (bool, error) { return f.served[s], nil },
		Now:    func() time.Time { return time.Date(2025, 11, 26, 22, 5, 0, 0, time.UTC) },
	})
}

func post(t *testing.T, h http.HandlerFunc, path, ctype, enc string, body []byte, auth string) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
	r.Header.Set("Content-Type", ctype)
	if enc != "" {
		r.Header.Set("Content-Encoding", enc)
	}
	if auth != "" {
		r.Header.Set("Authorization", auth)
	}
	w := httptest.NewRecorder()
	h(w, r)
	return w
}

func TestReceiverLogsJSONAndDuplicates(t *testing.T) {
	f := &fakeLedger{served: map[string]bool{}}
	rc := f.receiver()
	w := post(t, rc.ServeLogs, "/v1/logs", "application/json", "", []byte(claudeCodeLogsJSON), "Bearer sk-good")
	if w.Code != 200 || w.Header().Get("Content-Type") != "application/json" || strings.TrimSpace(w.Body.String()) != "{}" {
		t.Fatalf("%d %q %s", w.Code, w.Header().Get("Content-Type"), w.Body)
	}
	if len(f.recs) != 1 || f.recs[0].Endpoint != ledger.EndpointAgentReported {
		t.Fatalf("records %+v", f.recs)
	}
	// The gateway served this session: the agent's report of it is dropped.
	f.served["3f0c2a1e-1111-4222-8333-444455556666"] = true
	w = post(t, rc.ServeLogs, "/v1/logs", "application/json", "", []byte(claudeCodeLogsJSON), "Bearer sk-good")
	if w.Code != 200 || len(f.recs) != 1 {
		t.Fatalf("duplicate recorded: %d %d", w.Code, len(f.recs))
	}
}

func TestReceiverLogsProtobufGzipPartial(t *testing.T) {
	f := &fakeLedger{}
	rc := f.receiver()
	b, _ := proto.Marshal(claudeCodeLogsProto("s-2", 0.25))
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write(b)
	zw.Close()
	w := post(t, rc.ServeLogs, "/v1/logs", "application/x-protobuf", "gzip", z.Bytes(), "Bearer sk-good")
	if w.Code != 200 || w.Header().Get("Content-Type") != "application/x-protobuf" {
		t.Fatalf("%d %s", w.Code, w.Body)
	}
	var resp collogs.ExportLogsServiceResponse
	if err := proto.Unmarshal(w.Body.Bytes(), &resp); err != nil {
		t.Fatal(err)
	}
	if resp.GetPartialSuccess().GetRejectedLogRecords() != 1 || !strings.Contains(resp.GetPartialSuccess().GetErrorMessage(), "session.id") {
		t.Fatalf("partial success %v", &resp)
	}
	if len(f.recs) != 1 || f.recs[0].SessionID != "s-2" || f.recs[0].CostPicoUSD != 250_000_000_000 {
		t.Fatalf("records %+v", f.recs)
	}
}

func TestReceiverErrors(t *testing.T) {
	f := &fakeLedger{}
	rc := f.receiver()
	cases := []struct {
		name, ctype, enc, auth string
		body                   []byte
		status                 int
		code                   int32
	}{
		{"no key", "application/json", "", "", []byte(`{}`), 401, 16},
		{"bad json", "application/json", "", "Bearer sk-good", []byte(`{"resourceLogs":`), 400, 3},
		{"bad gzip", "application/json", "gzip", "Bearer sk-good", []byte(`{}`), 400, 3},
		{"media type", "text/plain", "", "Bearer sk-good", []byte(`{}`), 415, 12},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := post(t, rc.ServeLogs, "/v1/logs", c.ctype, c.enc, c.body, c.auth)
			var st struct {
				Code    int32  `json:"code"`
				Message string `json:"message"`
			}
			if w.Code != c.status {
				t.Fatalf("status %d %s", w.Code, w.Body)
			}
			if err := json.Unmarshal(w.Body.Bytes(), &st); err != nil || st.Code != c.code || st.Message == "" {
				t.Fatalf("status body %s (%v)", w.Body, err)
			}
			if strings.Contains(w.Body.String(), "sk-good") {
				t.Fatal("key echoed")
			}
		})
	}
	get := httptest.NewRecorder()
	rc.ServeLogs(get, httptest.NewRequest(http.MethodGet, "/v1/logs", nil))
	if get.Code != http.StatusMethodNotAllowed || get.Header().Get("Allow") != "POST" {
		t.Fatalf("GET: %d %v", get.Code, get.Header())
	}
	// A protobuf caller gets its error as a protobuf google.rpc.Status.
	w := post(t, rc.ServeLogs, "/v1/logs", "application/x-protobuf", "", []byte{0xff, 0xff}, "Bearer sk-good")
	var st spb.Status
	if w.Code != 400 || proto.Unmarshal(w.Body.Bytes(), &st) != nil || st.Code != 3 {
		t.Fatalf("%d %v", w.Code, &st)
	}
	if len(f.recs) != 0 {
		t.Fatalf("recorded %d", len(f.recs))
	}
}

func TestReceiverMetrics(t *testing.T) {
	f := &fakeLedger{}
	rc := f.receiver()
	m := &colmetrics.ExportMetricsServiceRequest{ResourceMetrics: []*metricspb.ResourceMetrics{{
		ScopeMetrics: []*metricspb.ScopeMetrics{{Metrics: []*metricspb.Metric{
			{Name: "claude_code.token.usage", Unit: "tokens", Data: &metricspb.Metric_Sum{Sum: &metricspb.Sum{
				DataPoints: []*metricspb.NumberDataPoint{{Value: &metricspb.NumberDataPoint_AsDouble{AsDouble: 100}}, {Value: &metricspb.NumberDataPoint_AsDouble{AsDouble: 7}}}}}},
			{Name: "claude_code.session.count", Data: &metricspb.Metric_Sum{Sum: &metricspb.Sum{
				DataPoints: []*metricspb.NumberDataPoint{{Value: &metricspb.NumberDataPoint_AsDouble{AsDouble: 1}}}}}},
		}}},
	}}}
	if p, u := MetricPoints(m); p != 3 || u != 2 {
		t.Fatalf("points %d usage %d", p, u)
	}
	b, _ := proto.Marshal(m)
	w := post(t, rc.ServeMetrics, "/v1/metrics", "application/x-protobuf", "", b, "Bearer sk-good")
	var resp colmetrics.ExportMetricsServiceResponse
	if w.Code != 200 || proto.Unmarshal(w.Body.Bytes(), &resp) != nil {
		t.Fatalf("%d %s", w.Code, w.Body)
	}
	js := `{"resourceMetrics":[{"scopeMetrics":[{"metrics":[{"name":"claude_code.cost.usage","unit":"USD","sum":{"dataPoints":[{"asDouble":0.01,"timeUnixNano":"1764194400000000000"}],"aggregationTemporality":1,"isMonotonic":true}}]}]}]}`
	w = post(t, rc.ServeMetrics, "/v1/metrics", "application/json", "", []byte(js), "Bearer sk-good")
	if w.Code != 200 || strings.TrimSpace(w.Body.String()) != "{}" {
		t.Fatalf("%d %s", w.Code, w.Body)
	}
	if len(f.recs) != 0 {
		t.Fatal("metrics recorded as requests")
	}
}

// A session this instance served is a duplicate before its record is
// written: Claude Code exports its event as soon as the answer ends.
func TestReceiverSawSession(t *testing.T) {
	f := &fakeLedger{served: map[string]bool{}}
	rc := f.receiver()
	rc.Saw("3f0c2a1e-1111-4222-8333-444455556666")
	res, _, status := rc.Logs(context.Background(), mustLogs(t), "key-1", "")
	if status != 200 || res.Duplicates != 1 || res.Recorded != 0 || len(f.recs) != 0 {
		t.Fatalf("status %d result %+v records %d", status, res, len(f.recs))
	}
}

func mustLogs(t *testing.T) *collogs.ExportLogsServiceRequest {
	t.Helper()
	req, err := DecodeLogs([]byte(claudeCodeLogsJSON), JSON)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// BenchmarkSaw is the request path's cost of noting its session: every
// request with a session calls it, most of them for a session already
// noted.
func BenchmarkSaw(b *testing.B) {
	rc := NewReceiver(Options{})
	sessions := make([]string, 64)
	for i := range sessions {
		sessions[i] = fmt.Sprintf("session-%d", i)
	}
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			rc.Saw(sessions[i%len(sessions)])
			i++
		}
	})
}
