package telemetry

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/modelgate/modelgate/ledger"
)

func attrs(s sdktrace.ReadOnlySpan) map[string]string {
	m := map[string]string{}
	for _, kv := range s.Attributes() {
		m[string(kv.Key)] = kv.Value.String()
	}
	return m
}

// TestSpans: a request span under the span in the context, an attempt
// span under it whose context goes upstream as traceparent, and the
// record's values on the request span, without the prompt.
func TestSpans(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	ctx, server := tp.Tracer("test").Start(context.Background(), "server")
	tr := &Tracer{}
	ctx, req := tr.StartRequest(ctx, ledger.EndpointMessages)
	req.Model("claude", true, 50)
	tr.Content(req, []byte("the prompt"))
	req.Cooldown("d0", "cooling_down")
	_, a1 := req.StartAttempt(ctx, AttemptInfo{Alias: "claude", Deployment: "d1", Provider: "anthropic", Upstream: "claude-x"})
	a1.End(529, "overloaded", true)
	_, a2 := req.StartAttempt(ctx, AttemptInfo{Alias: "backup", Deployment: "d2", Provider: "gemini", Upstream: "gem"})
	req.Answer([]byte(`{"type":"message_start","message":{"stop_reason":null}}`))
	req.Answer([]byte(`{"type":"message_delta","delta":{"stop_reason": "max_tokens"}}`))
	h := http.Header{}
	a2.Inject(ctx, h, nil)
	a2.End(200, "", false)
	tr.Finish(req, &ledger.Record{Alias: "claude", KeyID: "alice", Workspace: "w", Endpoint: ledger.EndpointMessages, Provider: "gemini",
		UpstreamModel: "gem", InputTokens: 10, CacheReadTokens: 5, CacheCreation1h: 2, OutputTokens: 7, Status: 200, Outcome: ledger.OutcomeOK,
		CostPicoUSD: 1_500_000_000, SessionID: "s1", TTFT: 20 * time.Millisecond, Stream: true}, "d2")
	server.End()

	spans := rec.Ended()
	if len(spans) != 4 {
		t.Fatalf("%d spans", len(spans))
	}
	byName := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range spans {
		byName[s.Name()] = s
	}
	r, att1, att2 := byName["chat claude"], byName["chat claude-x"], byName["chat gem"]
	if r == nil || att1 == nil || att2 == nil {
		t.Fatalf("span names: %v", byName)
	}
	if r.Parent().SpanID() != server.SpanContext().SpanID() || att2.Parent().SpanID() != r.SpanContext().SpanID() {
		t.Error("parents wrong")
	}
	if want := "00-" + r.SpanContext().TraceID().String() + "-" + att2.SpanContext().SpanID().String() + "-01"; h.Get("Traceparent") != want {
		t.Errorf("traceparent %q, want %q", h.Get("Traceparent"), want)
	}
	got := attrs(r)
	for k, v := range map[string]string{
		"gen_ai.operation.name": "chat", "gen_ai.request.model": "claude", "gen_ai.request.stream": "true", "gen_ai.request.max_tokens": "50",
		"gen_ai.provider.name": "gcp.gemini", "gen_ai.response.model": "gem", "gen_ai.usage.input_tokens": "17",
		"gen_ai.usage.output_tokens": "7", "gen_ai.usage.cache_read.input_tokens": "5", "gen_ai.usage.cache_creation.input_tokens": "2",
		"modelgate.key_id": "alice", "modelgate.workspace": "w", "modelgate.session": "s1", "modelgate.cost_usd": "0.0015",
		"modelgate.retries": "1", "modelgate.attempts": "2", "modelgate.cooldown_skips": "1", "modelgate.deployment": "d2",
	} {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	for _, s := range spans {
		for _, kv := range s.Attributes() {
			if strings.Contains(kv.Value.String(), "the prompt") {
				t.Errorf("%s carries the prompt without CaptureContent", s.Name())
			}
		}
	}
	if a := attrs(att1); a["error.type"] != "overloaded" || a["modelgate.retrying"] != "true" || a["modelgate.fallback"] != "false" {
		t.Errorf("first attempt: %v", a)
	}
	if a := attrs(att2); a["modelgate.fallback"] != "true" || a["http.response.status_code"] != "200" || a["gen_ai.response.finish_reasons"] != `["max_tokens"]` {
		t.Errorf("second attempt: %v", a)
	}
	if a := attrs(att1); a["gen_ai.response.finish_reasons"] != "" {
		t.Errorf("the failed attempt has finish reasons %q", a["gen_ai.response.finish_reasons"])
	}
	if got["gen_ai.response.finish_reasons"] != `["max_tokens"]` {
		t.Errorf("request finish reasons %q", got["gen_ai.response.finish_reasons"])
	}
}

// TestFinishReasons: the reasons of every choice, in each client format's
// field, whole or streamed; null is none.
func TestFinishReasons(t *testing.T) {
	tp := sdktrace.NewTracerProvider()
	ctx, server := tp.Tracer("test").Start(context.Background(), "server")
	defer server.End()
	for _, c := range []struct {
		chunks []string
		want   []string
	}{
		{[]string{`{"choices":[{"index":0,"finish_reason":"stop"},{"index":1,"finish_reason": "length"}]}`}, []string{"stop", "length"}},
		{[]string{`data: {"choices":[{"delta":{"content":"x"},"finish_reason":null}]}`, `data: {"choices":[{"delta":{},"finish_reason":"tool_calls"}]}`}, []string{"tool_calls"}},
		{[]string{`{"type":"message","content":[{"type":"text","text":"say \"stop_reason\":\"x\""}],"stop_reason":"end_turn"}`}, []string{"end_turn"}},
		{[]string{`{"candidates":[{"content":{},"finishReason":"STOP"}]}`}, []string{"STOP"}},
	} {
		_, req := (&Tracer{}).StartRequest(ctx, ledger.EndpointChatCompletions)
		for _, ch := range c.chunks {
			req.Answer([]byte(ch))
		}
		if !slices.Equal(req.finish, c.want) {
			t.Errorf("%v: %q, want %q", c.chunks, req.finish, c.want)
		}
	}
}

// TestCaptureContent: the documented option puts the prompt on the span.
func TestCaptureContent(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	ctx, server := tp.Tracer("test").Start(context.Background(), "server")
	tr := &Tracer{CaptureContent: true}
	_, req := tr.StartRequest(ctx, ledger.EndpointChatCompletions)
	tr.Content(req, []byte(`{"messages":[{"content":"the prompt"}]}`))
	tr.Finish(req, &ledger.Record{Alias: "a"}, "")
	server.End()
	for _, s := range rec.Ended() {
		if s.Name() == "chat a" && attrs(s)["gen_ai.input.messages"] == `{"messages":[{"content":"the prompt"}]}` {
			return
		}
	}
	t.Fatal("no span with gen_ai.input.messages")
}

// TestTracingOffIsFree: with no recording span in the context (no
// tracing directive, or the trace not sampled) the calls the handlers make
// allocate nothing.
func TestTracingOffIsFree(t *testing.T) {
	tr := &Tracer{}
	rec := &ledger.Record{Alias: "a"}
	h := http.Header{}
	ctx := context.Background()
	allocs := testing.AllocsPerRun(100, func() { offPath(ctx, tr, rec, h) })
	if allocs != 0 {
		t.Fatalf("%v allocations per request with tracing off", allocs)
	}
}

func offPath(ctx context.Context, tr *Tracer, rec *ledger.Record, h http.Header) {
	ctx, req := tr.StartRequest(ctx, ledger.EndpointChatCompletions)
	req.Model("a", false, 0)
	tr.Content(req, nil)
	_, a := req.StartAttempt(ctx, AttemptInfo{})
	a.Inject(ctx, h, h)
	a.End(200, "", false)
	tr.Finish(req, rec, "d")
}

// BenchmarkTracingOff is the per-request cost of the telemetry calls when
// tracing is off.
func BenchmarkTracingOff(b *testing.B) {
	tr := &Tracer{}
	rec := &ledger.Record{Alias: "a"}
	h := http.Header{}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		offPath(ctx, tr, rec, h)
	}
}

// TestToolCallSpan: an MCP tool call is an "execute_tool <tool>" client
// span under the request's with the GenAI tool attributes and the server's
// name; a failed call carries its class, never the tool's output; with no
// recording span nothing is made.
func TestToolCallSpan(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	ctx, server := tp.Tracer("test").Start(context.Background(), "server")
	_, ok := StartToolCall(ctx, "everything", "echo")
	ok.End("")
	_, bad := StartToolCall(ctx, "everything", "fail")
	bad.End("tool_error")
	server.End()
	if _, off := StartToolCall(context.Background(), "s", "t"); off != nil {
		t.Error("a tool span without a recording parent")
	}
	spans := rec.Ended()
	if len(spans) != 3 {
		t.Fatalf("%d spans", len(spans))
	}
	for i, want := range []map[string]string{
		{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "echo", "mcp.method.name": "tools/call", "modelgate.mcp.server": "everything"},
		{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "fail", "modelgate.mcp.server": "everything", "error.type": "tool_error"},
	} {
		s := spans[i]
		if s.Name() != "execute_tool "+want["gen_ai.tool.name"] || s.SpanKind().String() != "client" || s.Parent().SpanID() != server.SpanContext().SpanID() {
			t.Errorf("span %q kind %v parent %v", s.Name(), s.SpanKind(), s.Parent().SpanID())
		}
		got := attrs(s)
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s: %s = %q, want %q", s.Name(), k, got[k], v)
			}
		}
	}
	if spans[1].Status().Code.String() != "Error" {
		t.Errorf("failed call status %v", spans[1].Status())
	}
}
