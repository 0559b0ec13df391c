package handlers

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/policy"
)

// TestWebSearchesCharged (H11-F2): the web searches Anthropic reports
// (usage.server_tool_use.web_search_requests) are charged at $10 a
// thousand on top of the tokens, whole and streamed, one reading of the
// provider's usage for the interactive path and batches alike.
func TestWebSearchesCharged(t *testing.T) {
	usage := `{"input_tokens":1000,"output_tokens":100,"server_tool_use":{"web_search_requests":3}}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.Contains(readAll(r), `"stream":true`) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"id":"msg_1","type":"message","role":"assistant","model":"claude-up","content":[{"type":"text","text":"news"}],"stop_reason":"end_turn","usage":`+usage+`}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-up\",\"content\":[],\"stop_reason\":null,\"usage\":{\"input_tokens\":1000,\"output_tokens\":1}}}\n\n")
		fmt.Fprint(w, "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n")
		fmt.Fprint(w, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"news\"}}\n\n")
		fmt.Fprint(w, "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n")
		fmt.Fprint(w, "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":"+usage+"}\n\n")
		w.(http.Flusher).Flush()
		if strings.Contains(r.Header.Get("X-Test"), "hang") {
			<-r.Context().Done()
			return
		}
		fmt.Fprint(w, "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	}))
	defer srv.Close()
	yaml := "model_list:\n" + kindEntry("m", "anthropic/claude-up", srv.URL) + "    model_info:\n      input_cost_per_token: 0.000003\n      output_cost_per_token: 0.000015\n"
	g, obs := testGateway(t, yaml, nil)
	want := int64(1000*3_000_000 + 100*15_000_000 + 3*10_000_000_000)
	for _, stream := range []string{"false", "true"} {
		body := `{"model":"m","max_tokens":400,"stream":` + stream + `,"tools":[{"type":"web_search_20250305","name":"web_search","max_uses":3}],"messages":[{"role":"user","content":"news?"}]}`
		req := httptest.NewRequest(http.MethodPost, "/v1/messages", strings.NewReader(body)).WithContext(policy.WithIdentity(t.Context(), alice))
		rr := httptest.NewRecorder()
		g.ServeHTTP(rr, req)
		if rr.Code != 200 {
			t.Fatalf("stream %s: %d %s", stream, rr.Code, rr.Body)
		}
	}
	// A client that leaves after the usage, before the stream's end, has
	// its record priced again by the cut floor: the searches stay
	// charged.
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	body := `{"model":"m","max_tokens":400,"stream":true,"tools":[{"type":"web_search_20250305","name":"web_search","max_uses":3}],"messages":[{"role":"user","content":"news?"}]}`
	req := httptest.NewRequest(http.MethodPost, "/v1/messages", strings.NewReader(body)).WithContext(policy.WithIdentity(ctx, alice))
	req.Header.Set("X-Test", "hang")
	g.ServeHTTP(&leavesAfter{ResponseRecorder: httptest.NewRecorder(), marker: "message_delta", leave: cancel}, req)
	recs := obs.Records()
	if len(recs) != 3 {
		t.Fatalf("%d records", len(recs))
	}
	for i, r := range recs {
		if r.CostPicoUSD != want {
			t.Errorf("record %d (%s): cost %d; want %d, three searches' fees included", i, r.Outcome, r.CostPicoUSD, want)
		}
	}
}
