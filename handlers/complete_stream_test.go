package handlers

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/policy"
)

// anthropicEvents is a whole Anthropic stream, message_stop included.
const anthropicEvents = "event: message_start\n" +
	`data: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[],"stop_reason":null,"usage":{"input_tokens":11,"output_tokens":1}}}` + "\n\n" +
	"event: content_block_start\n" +
	`data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}` + "\n\n" +
	"event: content_block_delta\n" +
	`data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hello"}}` + "\n\n" +
	"event: content_block_stop\n" +
	`data: {"type":"content_block_stop","index":0}` + "\n\n" +
	"event: message_delta\n" +
	`data: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":7}}` + "\n\n" +
	"event: message_stop\n" +
	`data: {"type":"message_stop"}` + "\n\n"

// A client that closes its stream as soon as it has the end marker (the
// OpenAI SDKs stop at [DONE]; others at message_stop) got the whole
// answer: its record is ok with the upstream's usage, not a 499 with an
// estimate, even when the upstream's connection has not ended yet. This
// was TestVertexIntegration's flake: "3 vertex records, want 4" whenever
// the client's leaving was noticed before the upstream's EOF.
func TestClientLeavingAfterEndMarkerIsOK(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, anthropicEvents)
		w.(http.Flusher).Flush()
		// The body ends only once the gateway gives up the request: the
		// client's leaving is always seen first.
		<-r.Context().Done()
	}))
	defer srv.Close()
	yaml := "model_list:\n" + kindEntry("m", "anthropic/m", srv.URL)
	for _, tc := range []struct{ name, path, body, marker string }{
		{"openai client", "/v1/chat/completions", `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`, "[DONE]"},
		{"anthropic client", "/v1/messages", `{"model":"m","max_tokens":9,"stream":true,"messages":[{"role":"user","content":"hi"}]}`, "message_stop"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, obs := testGateway(t, yaml, nil)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			req := httptest.NewRequest(http.MethodPost, tc.path, strings.NewReader(tc.body)).WithContext(policy.WithIdentity(ctx, alice))
			req.Header.Set("anthropic-version", "2023-06-01")
			rr := httptest.NewRecorder()
			g.ServeHTTP(&leavesAfter{ResponseRecorder: rr, marker: tc.marker, leave: cancel}, req)
			if !strings.Contains(rr.Body.String(), "hello") {
				t.Fatalf("answer: %q", rr.Body.String())
			}
			recs := obs.Records()
			if len(recs) != 1 {
				t.Fatalf("%d records", len(recs))
			}
			if r := recs[0]; r.Outcome != "ok" || r.Status != http.StatusOK || r.InputTokens != 11 || r.OutputTokens != 7 {
				t.Errorf("record %s %d, in %d out %d; want ok 200 with the upstream's usage (11, 7)", r.Outcome, r.Status, r.InputTokens, r.OutputTokens)
			}
		})
	}
}
