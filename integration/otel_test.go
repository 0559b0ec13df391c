package integration

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	colmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/protobuf/proto"

	"github.com/modelgate/modelgate/internal/fakes"
	"github.com/modelgate/modelgate/internal/testlane"
)

// jaeger is a Jaeger all-in-one (v2) on loopback with in-memory storage.
type jaeger struct {
	otlp, query string // base URLs of its OTLP/HTTP receiver and query API
}

// startJaeger runs the binary MODELGATE_TEST_JAEGER names (scripts/jaeger.sh
// installs it) on free loopback ports.
func startJaeger(t *testing.T) *jaeger {
	t.Helper()
	testlane.FullOnly(t, "Jaeger (scripts/jaeger.sh builds it)")
	bin := os.Getenv("MODELGATE_TEST_JAEGER")
	if bin == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("MODELGATE_TEST_JAEGER is unset under CI: scripts/test.sh installs Jaeger with scripts/jaeger.sh")
		}
		t.Skip("MODELGATE_TEST_JAEGER is unset: install Jaeger v1.76.0 with scripts/jaeger.sh and export its path")
	}
	ports := freePorts(t, 4)
	otlpPort, queryPort, grpcPort, healthPort := ports[0], ports[1], ports[2], ports[3]
	cfg := fmt.Sprintf(`service:
  extensions: [jaeger_storage, jaeger_query, healthcheckv2]
  pipelines:
    traces:
      receivers: [otlp]
      processors: [batch]
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
extensions:
  jaeger_query:
    storage:
      traces: mem
    http:
      endpoint: 127.0.0.1:%d
    grpc:
      endpoint: 127.0.0.1:%d
  jaeger_storage:
    backends:
      mem:
        memory:
          max_traces: 1000
  healthcheckv2:
    use_v2: true
    http:
      endpoint: 127.0.0.1:%d
receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:%d
processors:
  batch:
    timeout: 100ms
exporters:
  jaeger_storage_exporter:
    trace_storage: mem
`, queryPort, grpcPort, healthPort, otlpPort)
	path := filepath.Join(t.TempDir(), "jaeger.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	log := &syncBuffer{}
	cmd := exec.Command(bin, "--config", path)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
	})
	j := &jaeger{otlp: fmt.Sprintf("http://127.0.0.1:%d", otlpPort), query: fmt.Sprintf("http://127.0.0.1:%d", queryPort)}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(j.query + "/api/services")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return j
			}
		}
		select {
		case <-done:
			t.Fatalf("jaeger exited:\n%s", log.String())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("jaeger did not start:\n%s", log.String())
		}
	}
}

// jaegerSpan is a span as Jaeger's HTTP query API returns it.
type jaegerSpan struct {
	TraceID       string `json:"traceID"`
	SpanID        string `json:"spanID"`
	OperationName string `json:"operationName"`
	References    []struct {
		RefType string `json:"refType"`
		SpanID  string `json:"spanID"`
	} `json:"references"`
	Tags []struct {
		Key   string `json:"key"`
		Value any    `json:"value"`
	} `json:"tags"`
}

func (s jaegerSpan) tag(k string) (string, bool) {
	for _, t := range s.Tags {
		if t.Key == k {
			return fmt.Sprint(t.Value), true
		}
	}
	return "", false
}

func (s jaegerSpan) parent() string {
	for _, r := range s.References {
		if r.RefType == "CHILD_OF" {
			return r.SpanID
		}
	}
	return ""
}

// traces asks Jaeger for the service's traces, by trace id.
func (j *jaeger) traces(t *testing.T, service string) map[string][]jaegerSpan {
	t.Helper()
	resp, err := http.Get(j.query + "/api/traces?limit=50&lookback=1h&service=" + service)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Data []struct {
			TraceID string       `json:"traceID"`
			Spans   []jaegerSpan `json:"spans"`
		} `json:"data"`
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		return nil
	}
	if err := json.Unmarshal(body, &out); err != nil {
		t.Fatalf("jaeger answer: %v: %.300s", err, body)
	}
	m := map[string][]jaegerSpan{}
	for _, d := range out.Data {
		m[d.TraceID] = d.Spans
	}
	return m
}

// otlpMetrics is an OTLP/HTTP metrics receiver keeping, for each metric
// name, the attribute sets of its data points.
type otlpMetrics struct {
	mu     sync.Mutex
	points map[string][]map[string]string
}

func (o *otlpMetrics) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req colmetrics.ExportMetricsServiceRequest
	if r.URL.Path != "/v1/metrics" || proto.Unmarshal(body, &req) != nil {
		http.Error(w, "bad request", 400)
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, rm := range req.ResourceMetrics {
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				var attrs []map[string]string
				for _, dp := range m.GetHistogram().GetDataPoints() {
					attrs = append(attrs, kv(dp.Attributes))
				}
				for _, dp := range m.GetSum().GetDataPoints() {
					attrs = append(attrs, kv(dp.Attributes))
				}
				o.points[m.Name] = append(o.points[m.Name], attrs...)
			}
		}
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	out, _ := proto.Marshal(&colmetrics.ExportMetricsServiceResponse{})
	_, _ = w.Write(out)
}

func kv(attrs []*commonpb.KeyValue) map[string]string {
	m := map[string]string{}
	for _, a := range attrs {
		m[a.Key] = a.Value.GetStringValue()
	}
	return m
}

// has reports whether a point of the metric carries every attribute want.
func (o *otlpMetrics) has(name string, want map[string]string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, p := range o.points[name] {
		ok := true
		for k, v := range want {
			if p[k] != v {
				ok = false
			}
		}
		if ok {
			return true
		}
	}
	return false
}

// TestOpenTelemetryJaeger: with Caddy's tracing directive and the OTEL_*
// variables pointing at a real Jaeger, a chat request, a translated
// stream that needed a retry, and a failover each become a trace with
// GenAI spans; the client's traceparent is continued and sent upstream;
// the GenAI metrics reach an OTLP receiver; no prompt text is exported.
func TestOpenTelemetryJaeger(t *testing.T) {
	j := startJaeger(t)
	u := startUpstreams(t, fakes.Options{})
	// flaky fails the first request it gets, then serves like the OpenAI
	// fake: whichever deployment the shuffle tries first, the stream needs
	// exactly one retry. down always fails: its alias falls back.
	var flakyCalls atomic.Int32
	var flakyTP, downTP sync.Map
	flaky := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := flakyCalls.Add(1)
		flakyTP.Store(n, r.Header.Get("Traceparent"))
		if n == 1 {
			http.Error(w, `{"error":{"message":"overloaded","type":"server_error"}}`, http.StatusServiceUnavailable)
			return
		}
		fakes.OpenAI(fakes.Options{}, &fakes.Recorder{}).ServeHTTP(w, r)
	}))
	defer flaky.Close()
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		downTP.Store(r.Header.Get("Traceparent"), true)
		http.Error(w, `{"error":{"message":"down","type":"server_error"}}`, http.StatusServiceUnavailable)
	}))
	defer down.Close()
	metricsRx := &otlpMetrics{points: map[string][]map[string]string{}}
	mrx := httptest.NewServer(metricsRx)
	defer mrx.Close()

	models := strings.Replace(u.modelsYAML(), "      api_key: upstream-openai-secret\n", `      api_key: upstream-openai-secret
    model_info:
      input_cost_per_token: 0.000001
      output_cost_per_token: 2e-6
`, 1)
	models = strings.Replace(models, "model_aliases:", fmt.Sprintf(`  - model_name: flaky
    proxy_params:
      model: openai/flaky-a
      api_base: %[1]s/v1
      api_key: k
  - model_name: flaky
    proxy_params:
      model: openai/flaky-b
      api_base: %[1]s/v1
      api_key: k
  - model_name: primary
    proxy_params:
      model: openai/down-gpt
      api_base: %[2]s/v1
      api_key: k
router_settings:
  fallbacks:
    - primary: [oa]
model_aliases:`, flaky.URL, down.URL), 1)
	service := fmt.Sprintf("modelgate-test-%d", time.Now().UnixNano())
	g := startGateway(t, gatewayConfig{models: models, siteExtra: "tracing {\n\t\tspan gateway\n\t}", env: []string{
		"OTEL_SERVICE_NAME=" + service,
		"OTEL_TRACES_EXPORTER=otlp",
		"OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf",
		"OTEL_EXPORTER_OTLP_ENDPOINT=" + j.otlp,
		"OTEL_BSP_SCHEDULE_DELAY=100",
		"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT=" + mrx.URL + "/v1/metrics",
		"OTEL_METRIC_EXPORT_INTERVAL=200",
	}})

	const prompt = "secret prompt text for otel"
	chatTrace, streamTrace, failTrace := "4bf92f3577b34da6a3ce929d0e0e4736", "5bf92f3577b34da6a3ce929d0e0e4736", "6bf92f3577b34da6a3ce929d0e0e4736"
	tp := func(id string) string { return "00-" + id + "-00f067aa0ba902b7-01" }
	if st, _, body := g.do(t, "POST", "/v1/chat/completions", aliceKey, `{"model":"oa","max_tokens":40,"messages":[{"role":"user","content":"`+prompt+`"}]}`, "traceparent", tp(chatTrace)); st != 200 {
		t.Fatalf("chat: %d %s", st, body)
	}
	if st, _, body := g.do(t, "POST", "/v1/messages", aliceKey, `{"model":"flaky","max_tokens":50,"stream":true,"messages":[{"role":"user","content":"`+prompt+`"}]}`,
		"traceparent", tp(streamTrace), "anthropic-version", "2023-06-01"); st != 200 || !strings.Contains(string(body), "message_stop") {
		t.Fatalf("stream: %d %s", st, body)
	}
	if st, _, body := g.do(t, "POST", "/v1/chat/completions", aliceKey, `{"model":"primary","messages":[{"role":"user","content":"`+prompt+`"}]}`, "traceparent", tp(failTrace)); st != 200 {
		t.Fatalf("failover: %d %s", st, body)
	}

	// The upstream saw the trace continued: same trace id, a new parent.
	upTP := u.openaiRec.Last().Header.Get("Traceparent")
	if !strings.HasPrefix(upTP, "00-"+failTrace+"-") || strings.Contains(upTP, "00f067aa0ba902b7") {
		t.Fatalf("upstream traceparent %q does not continue trace %s", upTP, failTrace)
	}
	sawDown := false
	downTP.Range(func(k, _ any) bool {
		sawDown = sawDown || strings.HasPrefix(k.(string), "00-"+failTrace+"-")
		return true
	})
	if !sawDown {
		t.Errorf("the failing deployment got no traceparent of trace %s", failTrace)
	}

	var traces map[string][]jaegerSpan
	deadline := time.Now().Add(20 * time.Second)
	for {
		traces = j.traces(t, service)
		if len(traces[chatTrace]) >= 3 && len(traces[streamTrace]) >= 4 && len(traces[failTrace]) >= 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Jaeger has not got the traces: %d %d %d spans; gateway log:\n%.3000s", len(traces[chatTrace]), len(traces[streamTrace]), len(traces[failTrace]), g.stderr.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
	for _, spans := range traces {
		for _, s := range spans {
			for _, tag := range s.Tags {
				if strings.Contains(fmt.Sprint(tag.Value), prompt) {
					t.Errorf("span %s carries the prompt in %s", s.OperationName, tag.Key)
				}
			}
		}
	}

	byName := func(spans []jaegerSpan, name string) []jaegerSpan {
		var out []jaegerSpan
		for _, s := range spans {
			if s.OperationName == name {
				out = append(out, s)
			}
		}
		return out
	}
	want := func(s jaegerSpan, tags map[string]string) {
		t.Helper()
		for k, v := range tags {
			got, ok := s.tag(k)
			if !ok || (v != "*" && got != v) {
				t.Errorf("span %q: %s = %q (present %v), want %q", s.OperationName, k, got, ok, v)
			}
		}
	}

	// A chat request: the request span under Caddy's server span, one
	// attempt span under it, and the attempt's id is what the upstream saw
	// as parent.
	chat := traces[chatTrace]
	req := byName(chat, "chat oa")
	att := byName(chat, "chat fake-gpt")
	if len(req) != 1 || len(att) != 1 {
		t.Fatalf("chat trace spans: %+v", chat)
	}
	want(req[0], map[string]string{
		"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.request.model": "oa",
		"gen_ai.response.model": "fake-gpt", "gen_ai.request.max_tokens": "40", "gen_ai.request.stream": "false",
		"gen_ai.usage.input_tokens": "*", "gen_ai.usage.output_tokens": "*", "gen_ai.usage.cache_read.input_tokens": "*",
		"modelgate.key_id": "alice", "modelgate.workspace": "frontend", "modelgate.cost_usd": "*",
		"modelgate.retries": "0", "modelgate.outcome": "ok", "modelgate.deployment": "*",
	})
	if gw := byName(chat, "gateway"); len(gw) != 1 || req[0].parent() != gw[0].SpanID || gw[0].parent() != "00f067aa0ba902b7" {
		t.Errorf("request span's parent %s is not Caddy's server span continuing the client's", req[0].parent())
	}
	if att[0].parent() != req[0].SpanID {
		t.Errorf("attempt span's parent %s, want the request span %s", att[0].parent(), req[0].SpanID)
	}
	want(att[0], map[string]string{"gen_ai.provider.name": "openai", "gen_ai.request.model": "fake-gpt", "http.response.status_code": "200", "modelgate.attempt": "1"})
	// The finish reasons, as the client got them: Chat Completions' on
	// the whole answer, Messages' on the translated stream below.
	finish := func(s jaegerSpan, reason string) {
		t.Helper()
		if got, _ := s.tag("gen_ai.response.finish_reasons"); !strings.Contains(got, `"`+reason+`"`) {
			t.Errorf("span %q: gen_ai.response.finish_reasons = %q, want [%q]", s.OperationName, got, reason)
		}
	}
	finish(req[0], "stop")
	finish(att[0], "stop")

	// The translated stream: two attempts, the first failed and retried.
	stream := traces[streamTrace]
	req = byName(stream, "chat flaky")
	if len(req) != 1 {
		t.Fatalf("stream trace spans: %+v", stream)
	}
	want(req[0], map[string]string{"gen_ai.request.stream": "true", "gen_ai.request.max_tokens": "50", "modelgate.retries": "1",
		"modelgate.attempts": "2", "modelgate.endpoint": "messages", "gen_ai.usage.output_tokens": "*", "modelgate.outcome": "ok"})
	var attempts []jaegerSpan
	for _, s := range stream {
		if s.parent() == req[0].SpanID {
			attempts = append(attempts, s)
		}
	}
	if len(attempts) != 2 {
		t.Fatalf("stream attempts: %+v", attempts)
	}
	failed, retried := 0, 0
	for _, a := range attempts {
		if st, _ := a.tag("http.response.status_code"); st == "503" {
			failed++
			if r, _ := a.tag("modelgate.retrying"); r == "true" {
				retried++
			}
		}
	}
	if failed != 1 || retried != 1 {
		t.Errorf("stream attempts: %d failed with 503, %d marked retrying; want 1 and 1", failed, retried)
	}
	finish(req[0], "end_turn")
	for _, a := range attempts {
		if st, _ := a.tag("http.response.status_code"); st == "200" {
			finish(a, "end_turn")
		}
	}
	tp1, _ := flakyTP.Load(int32(1))
	tp2, _ := flakyTP.Load(int32(2))
	if !strings.HasPrefix(fmt.Sprint(tp1), "00-"+streamTrace) || !strings.HasPrefix(fmt.Sprint(tp2), "00-"+streamTrace) || tp1 == tp2 {
		t.Errorf("each attempt sends its own span as parent: %v, %v", tp1, tp2)
	}

	// The failover: the primary's attempt failed, the fallback's served.
	fo := traces[failTrace]
	req = byName(fo, "chat primary")
	if len(req) != 1 {
		t.Fatalf("failover trace spans: %+v", fo)
	}
	want(req[0], map[string]string{"modelgate.attempts": "2", "gen_ai.response.model": "fake-gpt", "modelgate.outcome": "ok"})
	fb := byName(fo, "chat fake-gpt")
	if len(fb) != 1 {
		t.Fatalf("failover fallback span: %+v", fo)
	}
	want(fb[0], map[string]string{"modelgate.fallback": "true", "modelgate.alias": "oa"})
	if d := byName(fo, "chat down-gpt"); len(d) != 1 {
		t.Errorf("failover: no span of the failed primary attempt")
	} else {
		want(d[0], map[string]string{"error.type": "*", "modelgate.fallback": "false", "http.response.status_code": "503"})
	}

	// Metrics: the same requests over OTLP, by alias, key and outcome.
	deadline = time.Now().Add(10 * time.Second)
	for _, m := range []struct {
		name  string
		attrs map[string]string
	}{
		{"gen_ai.client.token.usage", map[string]string{"gen_ai.token.type": "input", "gen_ai.request.model": "oa", "modelgate.key_id": "alice", "modelgate.outcome": "ok"}},
		{"gen_ai.client.token.usage", map[string]string{"gen_ai.token.type": "output", "gen_ai.request.model": "flaky"}},
		{"gen_ai.client.operation.duration", map[string]string{"gen_ai.request.model": "primary", "gen_ai.provider.name": "openai"}},
		{"gen_ai.server.time_to_first_token", map[string]string{"gen_ai.request.model": "flaky"}},
		{"modelgate.cost", map[string]string{"gen_ai.request.model": "oa"}},
	} {
		for !metricsRx.has(m.name, m.attrs) {
			if time.Now().After(deadline) {
				t.Fatalf("no %s point with %v; got %v", m.name, m.attrs, metricsRx.points[m.name])
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// TestTraceContextWithoutTracing: with no tracing directive the gateway
// starts no span, yet a client's W3C trace context (traceparent and
// tracestate) reaches the upstream unchanged, for a pass-through and a
// translated request alike: the gateway builds its upstream requests
// afresh, and a caller's trace must not stop there.
func TestTraceContextWithoutTracing(t *testing.T) {
	u := startUpstreams(t, fakes.Options{})
	g := startGateway(t, gatewayConfig{models: u.modelsYAML()})
	const tp = "00-7bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	const ts = "vendor=opaque,other=1"
	if st, _, body := g.do(t, "POST", "/v1/chat/completions", aliceKey, `{"model":"oa","messages":[{"role":"user","content":"hi"}]}`,
		"traceparent", tp, "tracestate", ts); st != 200 {
		t.Fatalf("chat: %d %s", st, body)
	}
	if h := u.openaiRec.Last().Header; h.Get("Traceparent") != tp || h.Get("Tracestate") != ts {
		t.Errorf("pass-through: upstream got traceparent %q tracestate %q, want the client's", h.Get("Traceparent"), h.Get("Tracestate"))
	}
	if st, _, body := g.do(t, "POST", "/v1/chat/completions", aliceKey, `{"model":"claude","messages":[{"role":"user","content":"hi"}]}`,
		"traceparent", tp, "tracestate", ts); st != 200 {
		t.Fatalf("translated chat: %d %s", st, body)
	}
	if h := u.anthropicRec.Last().Header; h.Get("Traceparent") != tp || h.Get("Tracestate") != ts {
		t.Errorf("translated: upstream got traceparent %q tracestate %q, want the client's", h.Get("Traceparent"), h.Get("Tracestate"))
	}
	// Without a client trace context nothing is made up.
	if st, _, body := g.do(t, "POST", "/v1/chat/completions", aliceKey, `{"model":"oa","messages":[{"role":"user","content":"hi"}]}`); st != 200 {
		t.Fatalf("chat: %d %s", st, body)
	}
	if h := u.openaiRec.Last().Header; h.Get("Traceparent") != "" {
		t.Errorf("upstream got traceparent %q though the client sent none", h.Get("Traceparent"))
	}
}
