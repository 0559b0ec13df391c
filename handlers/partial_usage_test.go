package handlers

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/policy"
)

// A client that leaves a stream after reading the answer, before the
// upstream's last event (the only one with usage, as OpenAI-compatible
// servers send it), is still charged: the prompt and the output it read
// are estimated, not recorded as nothing.
func TestCancelledStreamIsChargedForWhatWasSent(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(chatDeltasUntilGone))
	defer srv.Close()
	yaml := "model_list:\n" + kindEntry("m", "openai/m", srv.URL) + "    model_info:\n      input_cost_per_token: 0.000001\n      output_cost_per_token: 0.000002\n"
	g, obs := testGateway(t, yaml, nil)
	body := `{"model":"m","stream":true,"messages":[{"role":"user","content":"` + strings.Repeat("word ", 40) + `"}]}`
	ctx, cancel := context.WithCancel(context.Background())
	req := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(body)).WithContext(policy.WithIdentity(ctx, alice))
	g.ServeHTTP(&leavesAfter{ResponseRecorder: httptest.NewRecorder(), marker: "tok5", leave: cancel}, req)
	recs := obs.Records()
	if len(recs) != 1 {
		t.Fatalf("%d records", len(recs))
	}
	r := recs[0]
	if r.Outcome != "cancelled" || r.InputTokens != int64(len(body)/4) || r.OutputTokens < 6 || r.CostPicoUSD <= 0 {
		t.Errorf("record %s: in %d out %d cost %d; want the prompt (%d) and at least the 6 chunks sent charged", r.Outcome, r.InputTokens, r.OutputTokens, r.CostPicoUSD, len(body)/4)
	}
}

// chatDeltasUntilGone streams six chat deltas, tok0 to tok5, and waits
// for its client to leave: the usage chunk never comes.
func chatDeltasUntilGone(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/event-stream")
	for i := range 6 {
		fmt.Fprintf(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"tok%d \"}}]}\n\n", i)
		w.(http.Flusher).Flush()
	}
	<-r.Context().Done()
}

// leavesAfter is a client that goes away once it has read marker.
type leavesAfter struct {
	*httptest.ResponseRecorder
	marker string
	leave  func()
}

func (l *leavesAfter) Write(p []byte) (int, error) {
	if strings.Contains(string(p), l.marker) {
		defer l.leave()
	}
	return l.ResponseRecorder.Write(p)
}

// anthropicUpstream streams an Anthropic answer whose message_start counts
// 1 output token (as Anthropic's does), ten ~800-byte text deltas and the
// block's end, then either hangs (the client is to leave) or, with cut,
// breaks off before message_delta, the event with the real count.
func anthropicUpstream(t *testing.T, chunk string, cut bool) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-up\",\"content\":[],\"stop_reason\":null,\"usage\":{\"input_tokens\":50,\"output_tokens\":1}}}\n\n")
		fmt.Fprint(w, "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n")
		for i := range 10 {
			fmt.Fprintf(w, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"%s%d \"}}\n\n", chunk, i)
			w.(http.Flusher).Flush()
		}
		fmt.Fprint(w, "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n")
		w.(http.Flusher).Flush()
		if !cut {
			<-r.Context().Done()
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// cutAnthropicStream serves one Anthropic request through a gateway
// whose upstream sends ten ~800-byte text deltas and then hangs (the
// client leaves at content_block_stop) or, with cut, breaks off; it
// returns the request's one record and the tokens of the text relayed.
func cutAnthropicStream(t *testing.T, cut bool) (ledger.Record, int64) {
	t.Helper()
	chunk := strings.Repeat("lorem ipsum dolor sit amet ", 30)
	srv := anthropicUpstream(t, chunk, cut)
	yaml := "model_list:\n" + kindEntry("m", "anthropic/claude-up", srv.URL) + "    model_info:\n      input_cost_per_token: 0.000003\n      output_cost_per_token: 0.000015\n"
	g, obs := testGateway(t, yaml, nil)
	body := `{"model":"m","max_tokens":4000,"stream":true,"messages":[{"role":"user","content":"write"}]}`
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req := httptest.NewRequest(http.MethodPost, "/v1/messages", strings.NewReader(body)).WithContext(policy.WithIdentity(ctx, alice))
	g.ServeHTTP(&leavesAfter{ResponseRecorder: httptest.NewRecorder(), marker: "content_block_stop", leave: func() {
		if !cut {
			cancel()
		}
	}}, req)
	recs := obs.Records()
	if len(recs) != 1 {
		t.Fatalf("%d records", len(recs))
	}
	return recs[0], int64(10 * len(chunk) / 4)
}

// A client that leaves an Anthropic stream with the whole text in hand,
// before message_delta, is charged for the text it read, not for the 1
// output token message_start counted (a hostile review found such a
// request settled at about nothing: a budget bypass).
func TestAnthropicStreamLeftBeforeUsageIsChargedForTheTextRead(t *testing.T) {
	r, read := cutAnthropicStream(t, false)
	if r.Outcome != "cancelled" || r.OutputTokens < read || r.OutputTokens > 2*read {
		t.Errorf("record %s: output %d tokens; want about the %d the client read", r.Outcome, r.OutputTokens, read)
	}
}

// An upstream that breaks off before its usage, with no other deployment
// to continue on, leaves the same floor: what its client was sent.
func TestStreamCutWithoutResumeIsChargedForTheTextRelayed(t *testing.T) {
	if r, read := cutAnthropicStream(t, true); r.Outcome != "error" || r.OutputTokens < read {
		t.Errorf("record %s: output %d tokens; want at least the %d relayed", r.Outcome, r.OutputTokens, read)
	}
}

// generatedBytes counts the generated text of each client format's
// events once: the Responses API's *.done events repeat it and count
// nothing; structure and object-valued fields count nothing either.
func TestGeneratedBytesCountsTextOnce(t *testing.T) {
	for _, tc := range []struct {
		ev   string
		want int
	}{
		{`data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hello"}}`, 5},
		{`data: {"choices":[{"index":0,"delta":{"content":"he\"y"}}]}`, 5},
		{`data: {"choices":[{"delta":{"tool_calls":[{"function":{"arguments":"{\"a\":1}"}}]}}]}`, 9},
		{`event: response.output_text.delta` + "\n" + `data: {"type":"response.output_text.delta","delta":"abc"}`, 3},
		{`event: response.output_text.done` + "\n" + `data: {"type":"response.output_text.done","text":"abc"}`, 0},
		{`data: {"candidates":[{"content":{"parts":[{"text":"four"}]}}]}`, 4},
		{`data: {"type":"message_start","message":{"content":[],"usage":{"output_tokens":1}}}`, 0},
		{`data: {"choices": [{"delta": {"content": "abc"}}]}`, 3},
		{`data: {"type":"response.completed","response":{"output":[{"content":[{"text":"the whole answer"}]}]}}`, 0},
		{`data: {"type":"content_block_delta","delta":{"type":"text_delta","text":"a \":\" b"}}`, 9},
	} {
		if got := generatedBytes([]byte(tc.ev)); got != tc.want {
			t.Errorf("generatedBytes(%s) = %d; want %d", tc.ev, got, tc.want)
		}
	}
}

// BenchmarkGeneratedBytes is what counting the relayed text costs per
// stream event (a Messages text delta).
func BenchmarkGeneratedBytes(b *testing.B) {
	ev := []byte("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hello, world \"}}\n\n")
	b.ReportAllocs()
	for b.Loop() {
		generatedBytes(ev)
	}
}
