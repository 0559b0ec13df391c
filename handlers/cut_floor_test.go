package handlers

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/testclock"
	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/modellist"
	"github.com/modelgate/modelgate/policy"
	"github.com/modelgate/modelgate/providers"
)

// A non-streaming answer its upstream breaks off half way (the upstream
// accepted the request and bills its input) is charged that input, as a
// client's cut is: the cut floor is one rule applied where every record
// is settled, not a step of the ways a cut can happen. Before it, only a
// client's cut was charged; an upstream's left the record at nothing.
func TestNonStreamCutByTheUpstreamIsChargedItsInput(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", "4000")
		fmt.Fprint(w, `{"id":"c1","object":"chat.completion",`)
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler) // the connection drops mid-answer
	}))
	defer srv.Close()
	yaml := "model_list:\n" + kindEntry("m", "openai/m", srv.URL) + "    model_info:\n      input_cost_per_token: 0.00001\n      output_cost_per_token: 0.00001\n"
	g, obs := testGateway(t, yaml, nil)
	prompt := strings.Repeat("word ", 2000)
	body := `{"model":"m","messages":[{"role":"user","content":"` + prompt + `"}]}`
	req := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(body)).WithContext(policy.WithIdentity(context.Background(), alice))
	w := httptest.NewRecorder()
	g.ServeHTTP(w, req)
	recs := obs.Records()
	if w.Code != http.StatusBadGateway || len(recs) != 1 {
		t.Fatalf("status %d, %d records; want 502 and one record", w.Code, len(recs))
	}
	if r := recs[0]; r.Outcome != "error" || r.InputTokens < int64(len(prompt)/4) || r.CostPicoUSD <= 0 {
		t.Errorf("record %s: in %d cost %d; want the ~%d input tokens sent upstream charged", r.Outcome, r.InputTokens, r.CostPicoUSD, len(prompt)/4)
	}
}

// reasoningThenGone is an OpenAI reasoning model's stream: it thinks
// unseen for think (on clk), sends one word of its answer, and waits for
// its client to leave; the usage chunk, which would count the reasoning
// tokens, never comes.
func reasoningThenGone(clk *testclock.Clock, think time.Duration) http.HandlerFunc {
	return quietThenGone(clk, think, `{"id":"c","object":"chat.completion.chunk","model":"o3","choices":[{"index":0,"delta":{"content":"Sure"}}]}`)
}

// quietThenGone streams a role chunk, stays quiet for quiet (on clk),
// sends the chunk then and waits for its client to leave.
func quietThenGone(clk *testclock.Clock, quiet time.Duration, then string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"o3\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n")
		w.(http.Flusher).Flush()
		clk.Advance(quiet)
		fmt.Fprint(w, "data: "+then+"\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}
}

// A client that leaves a reasoning model's stream at its first visible
// word, after the model reasoned unseen for 30 seconds, is charged that
// reasoning (hostile pass 9, M1): the provider bills it, and without
// this a client could cut every answer early and have the reasoning for
// the price of one word. It is estimated from the time the upstream
// worked without sending text, within the request's output bound.
func TestCutReasoningStreamIsChargedItsHiddenReasoning(t *testing.T) {
	for _, tc := range []struct {
		name      string
		maxTokens int64
		atLeast   int64
		atMost    int64
	}{
		{"within the bound", 8000, 2500, 3100},
		{"at the bound", 1000, 1000, 1000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if r := cutAtTheFirstWord(t, "o3", "", tc.maxTokens); r.Outcome != "cancelled" || r.OutputTokens < tc.atLeast || r.OutputTokens > tc.atMost {
				t.Errorf("record %s: output %d tokens; want %d to %d (29 s of reasoning at %d/s, within max_completion_tokens %d)",
					r.Outcome, r.OutputTokens, tc.atLeast, tc.atMost, hiddenTokensPerSecond, tc.maxTokens)
			}
		})
	}
}

// cutAtTheFirstWord streams from model (the upstream openai/<model>,
// priced, with info added to its model_info) an answer that reasons
// unseen for 30 s before its first word, has its client leave at that
// word, and returns the request's record.
func cutAtTheFirstWord(t *testing.T, model, info string, maxTokens int64) ledger.Record {
	t.Helper()
	clk := testclock.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	srv := httptest.NewServer(reasoningThenGone(clk, 30*time.Second))
	defer srv.Close()
	yaml := "model_list:\n" + kindEntry(model, "openai/"+model, srv.URL) +
		"    model_info:\n      input_cost_per_token: 0.000002\n      output_cost_per_token: 0.000008\n" + info
	g, obs := testGateway(t, yaml, func(o *GatewayOptions) { o.Now = clk.Now })
	body := fmt.Sprintf(`{"model":%q,"stream":true,"max_completion_tokens":%d,"messages":[{"role":"user","content":"prove it"}]}`, model, maxTokens)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(body)).WithContext(policy.WithIdentity(ctx, alice))
	g.ServeHTTP(&leavesAfter{ResponseRecorder: httptest.NewRecorder(), marker: "Sure", leave: cancel}, req)
	recs := obs.Records()
	if len(recs) != 1 {
		t.Fatalf("%d records", len(recs))
	}
	return recs[0]
}

// A deployment whose name says nothing of reasoning (an Azure deployment
// "prod-chat" that runs o3) is charged its cut stream's unseen reasoning
// when its model_info says supports_reasoning, and only its visible
// words when it does not say so.
func TestCutStreamOfAModelSaidToReason(t *testing.T) {
	for _, tc := range []struct {
		name          string
		info          string
		atLeast, most int64
	}{
		{"supports_reasoning: true", "      supports_reasoning: true\n", 2500, 3100},
		{"unset, judged by the name", "", 0, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if r := cutAtTheFirstWord(t, "prod-chat", tc.info, 8000); r.Outcome != "cancelled" || r.OutputTokens < tc.atLeast || r.OutputTokens > tc.most {
				t.Errorf("record %s: output %d tokens; want %d to %d", r.Outcome, r.OutputTokens, tc.atLeast, tc.most)
			}
		})
	}
}

// A stream cut by its upstream, not its client, is charged what its
// client was sent but not the upstream's unseen time: a stalled or broken
// provider is not the client's doing.
func TestStreamCutByTheUpstreamIsNotChargedItsSilence(t *testing.T) {
	clk := testclock.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"o3\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Sure\"}}]}\n\n")
		w.(http.Flusher).Flush()
		clk.Advance(30 * time.Second)
		panic(http.ErrAbortHandler)
	}))
	defer srv.Close()
	yaml := "model_list:\n" + kindEntry("o3", "openai/o3", srv.URL) + "    model_info:\n      input_cost_per_token: 0.000002\n      output_cost_per_token: 0.000008\n"
	g, obs := testGateway(t, yaml, func(o *GatewayOptions) { o.Now = clk.Now })
	body := `{"model":"o3","stream":true,"max_completion_tokens":8000,"messages":[{"role":"user","content":"prove it"}]}`
	post(g, alice, "/v1/chat/completions", body)
	recs := obs.Records()
	if len(recs) != 1 {
		t.Fatalf("%d records", len(recs))
	}
	if r := recs[0]; r.Outcome != "error" || r.OutputTokens != 1 || r.InputTokens == 0 {
		t.Errorf("record %s: in %d out %d; want the input and the one word relayed", r.Outcome, r.InputTokens, r.OutputTokens)
	}
}

// The same floor through other ways in, by construction: a Vertex
// streamRawPredict envelope and a Responses API stream, each cut by its
// client at the reasoning model's first word, are charged its 29 seconds
// of unseen reasoning (within their 8000-token bounds), as the chat
// request is.
func TestCutReasoningFloorOnEveryWayIn(t *testing.T) {
	for _, tc := range []struct{ name, path, body string }{
		{"vertex", "/v1/projects/p1/locations/us-east5/publishers/anthropic/models/o3:streamRawPredict",
			`{"anthropic_version":"vertex-2023-10-16","max_tokens":8000,"stream":true,"messages":[{"role":"user","content":"prove it"}]}`},
		{"responses", "/v1/responses", `{"model":"o3","stream":true,"max_output_tokens":8000,"input":"prove it"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := testclock.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			srv := httptest.NewServer(reasoningThenGone(clk, 30*time.Second))
			defer srv.Close()
			yaml := "model_list:\n" + kindEntry("o3", "openai/o3", srv.URL, "responses_api: translate") +
				"    model_info:\n      input_cost_per_token: 0.000002\n      output_cost_per_token: 0.000008\n"
			g, obs := testGateway(t, yaml, func(o *GatewayOptions) { o.Now = clk.Now })
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			req := httptest.NewRequest(http.MethodPost, tc.path, strings.NewReader(tc.body)).WithContext(policy.WithIdentity(ctx, alice))
			g.ServeHTTP(&leavesAfter{ResponseRecorder: httptest.NewRecorder(), marker: "Sure", leave: cancel}, req)
			recs := obs.Records()
			if len(recs) != 1 {
				t.Fatalf("%d records", len(recs))
			}
			if r := recs[0]; r.Outcome != "cancelled" || r.OutputTokens < 2500 || r.OutputTokens > 3100 {
				t.Errorf("record %s (%s): output %d tokens; want 29 s of reasoning at %d/s", r.Outcome, r.Endpoint, r.OutputTokens, hiddenTokensPerSecond)
			}
		})
	}
}

// silentThenGone sends a stream's role chunk, stays silent for quiet (on
// clk), sends an empty chunk (id "c2", no text) and waits for its client
// to leave: an upstream that stalled before its first output.
func silentThenGone(clk *testclock.Clock, quiet time.Duration) http.HandlerFunc {
	return quietThenGone(clk, quiet, `{"id":"c2","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"content":""}}]}`)
}

// cutSilentStream serves one stream of upstream model through a gateway
// whose upstream stalls for quiet before any output; the client leaves
// then. It returns the request's output tokens.
func cutSilentStream(t *testing.T, model, info, body string, quiet time.Duration) int64 {
	t.Helper()
	clk := testclock.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	srv := httptest.NewServer(silentThenGone(clk, quiet))
	defer srv.Close()
	yaml := "model_list:\n" + kindEntry("m", "openai/"+model, srv.URL) + "    model_info:\n      input_cost_per_token: 0.000002\n      output_cost_per_token: 0.000008\n" + info
	g, obs := testGateway(t, yaml, func(o *GatewayOptions) { o.Now = clk.Now })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(body)).WithContext(policy.WithIdentity(ctx, alice))
	g.ServeHTTP(&leavesAfter{ResponseRecorder: httptest.NewRecorder(), marker: `"c2"`, leave: cancel}, req)
	recs := obs.Records()
	if len(recs) != 1 || recs[0].Outcome != "cancelled" {
		t.Fatalf("records %+v; want one, cancelled", recs)
	}
	return recs[0].OutputTokens
}

// H11-F4: a client's cut of a stream whose upstream sent nothing yet is
// charged the silence as hidden reasoning only for a model that may
// reason (a reasoning family, or a request asking for reasoning): a
// stalled upstream of another model did no hidden work. Where it is
// charged, it stops at the request's output bound, or the one the
// gateway would send (model_info.max_output_tokens, else
// default_max_tokens) when the request sets none.
func TestCutSilenceBeforeTheFirstOutput(t *testing.T) {
	plain := `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`
	if out := cutSilentStream(t, "gpt-4.1", "", plain, 40*time.Second); out > 2 {
		t.Errorf("a non-reasoning model's 40 s stall: %d output tokens charged; want only the events relayed", out)
	}
	if out := cutSilentStream(t, "gpt-4.1", "", `{"model":"m","stream":true,"reasoning_effort":"high","messages":[{"role":"user","content":"hi"}]}`, 40*time.Second); out < 3500 {
		t.Errorf("a request asking for reasoning: %d output tokens; want its 39 s of silence charged", out)
	}
	if out := cutSilentStream(t, "o3", "", plain, 10*time.Minute); out != 4096 {
		t.Errorf("a reasoning model's 10 min without an output bound: %d output tokens; want default_max_tokens (4096)", out)
	}
	if out := cutSilentStream(t, "o3", "      max_output_tokens: 2000\n", plain, 10*time.Minute); out != 2000 {
		t.Errorf("with model_info.max_output_tokens 2000: %d output tokens; want 2000", out)
	}
}

// mayReason: reasoning families by name whatever the provider path, and
// requests asking for reasoning; other models not.
func TestMayReason(t *testing.T) {
	for _, tc := range []struct {
		model, body string
		want        bool
	}{
		{"o3", `{}`, true},
		{"o4-mini", `{}`, true},
		{"gpt-5.1", `{}`, true},
		{"openai/gpt-5-mini", `{}`, true},
		{"gemini-2.5-pro", `{}`, true},
		{"qwen3-235b-a22b-thinking-2507", `{}`, true},
		{"gpt-4.1", `{}`, false},
		{"gpt-4o", `{}`, false},
		{"claude-sonnet-4-5", `{}`, false},
		{"claude-sonnet-4-5", `{"thinking":{"type":"enabled","budget_tokens":2000}}`, true},
		{"gpt-4.1", `{"reasoning_effort":"low"}`, true},
		{"o3pro-lookalike", `{}`, false},
	} {
		if got := mayReason(modellist.ReasonsUnseen(tc.model, nil), []byte(tc.body)); got != tc.want {
			t.Errorf("mayReason(%q, %s) = %v; want %v", tc.model, tc.body, got, tc.want)
		}
	}
	// model_info.supports_reasoning decides over the name, and a request
	// that asks to reason still may.
	yes, no := true, false
	for _, tc := range []struct {
		says        *bool
		model, body string
		want        bool
	}{
		{&yes, "my-finetune", `{}`, true},
		{&no, "o3", `{}`, false},
		{&no, "o3", `{"reasoning_effort":"high"}`, true},
		{nil, "my-finetune", `{}`, false},
	} {
		if got := mayReason(modellist.ReasonsUnseen(tc.model, tc.says), []byte(tc.body)); got != tc.want {
			t.Errorf("supports_reasoning %v, mayReason(%q, %s) = %v; want %v", tc.says != nil && *tc.says, tc.model, tc.body, got, tc.want)
		}
	}
}

// A client's huge max_tokens times its n does not wrap the cut floor's
// bound negative, which would drop the hidden work its cut is charged.
func TestCutFloorBoundOfHugeMaxTokensTimesChoices(t *testing.T) {
	const huge = int64(1) << 62
	if got := everyChoice(huge, 4); got <= 0 {
		t.Fatalf("everyChoice(2^62, 4) = %d; want it held positive", got)
	}
	start := time.Unix(0, 0)
	var m cutMeter
	m.accept(nil, 400, everyChoice(huge, 4), start)
	u := m.floor(providers.Usage{}, start.Add(11*time.Second), true, true)
	if want := int64(10 * hiddenTokensPerSecond); u.OutputTokens < want {
		t.Errorf("cut after 10s of silence: output %d, want at least %d hidden tokens", u.OutputTokens, want)
	}
}

// A client's cut of a non-streaming request before its answer is whole is
// charged the wait as unseen work whatever the model: its upstream was
// generating all along, so leaving just before the answer would
// otherwise leave every output token it bills unpaid.
func TestNonStreamCutChargesTheWaitOfAnyModel(t *testing.T) {
	clk := testclock.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"c1",`)
		// More than the connection buffers: once written, the gateway
		// has the answer's headers (its upstream accepted) and reads.
		pad := bytes.Repeat([]byte(" "), 1<<20)
		for range 16 {
			w.Write(pad)
		}
		w.(http.Flusher).Flush()
		clk.Advance(40 * time.Second)
		cancel() // the client leaves before the answer
		<-r.Context().Done()
	}))
	defer srv.Close()
	yaml := "model_list:\n" + kindEntry("m", "openai/gpt-4.1", srv.URL) + "    model_info:\n      input_cost_per_token: 0.000002\n      output_cost_per_token: 0.000008\n"
	g, obs := testGateway(t, yaml, func(o *GatewayOptions) { o.Now = clk.Now })
	body := `{"model":"m","messages":[{"role":"user","content":"hi"}]}`
	req := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(body)).WithContext(policy.WithIdentity(ctx, alice))
	g.ServeHTTP(httptest.NewRecorder(), req)
	recs := obs.Records()
	if len(recs) != 1 || recs[0].Outcome != "cancelled" {
		t.Fatalf("records %+v; want one, cancelled", recs)
	}
	if out := recs[0].OutputTokens; out < 3500 {
		t.Errorf("a non-streaming cut after 40 s of a non-reasoning model: %d output tokens; want its 39 s charged", out)
	}
}
