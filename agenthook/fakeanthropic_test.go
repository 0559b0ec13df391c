package agenthook_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// anthropicBackend is what the end-to-end test points Claude Code at through
// ANTHROPIC_BASE_URL. Today it is fakeAnthropic; once the gateway serves
// /v1/messages, a function starting the gateway with its echo/ backend can
// take its place without touching the test.
type anthropicBackend func(t *testing.T) (baseURL string, requests func() []string)

// fakeAnthropic serves the slice of the Anthropic Messages API that Claude
// Code uses in a print-mode turn: streaming and non-streaming
// POST /v1/messages (Claude Code adds ?beta=true), count_tokens, and fast
// answers to anything else (its HEAD reachability probe gets 200, unknown
// paths an Anthropic-shaped 404). Every reply says reply.
func fakeAnthropic(t *testing.T) (string, func() []string) {
	const reply = "hi"
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		seen = append(seen, r.Method+" "+r.URL.RequestURI())
		mu.Unlock()
		switch {
		case r.Method == http.MethodHead || r.Method == http.MethodGet && r.URL.Path == "/":
			w.WriteHeader(http.StatusOK)
		case r.Method == http.MethodPost && r.URL.Path == "/v1/messages/count_tokens":
			writeJSON(w, http.StatusOK, map[string]any{"input_tokens": len(body) / 4})
		case r.Method == http.MethodPost && r.URL.Path == "/v1/messages":
			var req struct {
				Model  string `json:"model"`
				Stream bool   `json:"stream"`
			}
			if err := json.Unmarshal(body, &req); err != nil {
				writeJSON(w, http.StatusBadRequest, map[string]any{"type": "error", "error": map[string]string{"type": "invalid_request_error", "message": "body is not JSON"}})
				return
			}
			id := "msg_fake_0001"
			usage := map[string]int{"input_tokens": len(body) / 4, "output_tokens": 1}
			if !req.Stream {
				writeJSON(w, http.StatusOK, map[string]any{
					"id": id, "type": "message", "role": "assistant", "model": req.Model,
					"content":     []map[string]string{{"type": "text", "text": reply}},
					"stop_reason": "end_turn", "stop_sequence": nil, "usage": usage,
				})
				return
			}
			w.Header().Set("Content-Type", "text/event-stream")
			w.Header().Set("Cache-Control", "no-cache")
			events := []struct {
				name string
				data any
			}{
				{"message_start", map[string]any{"type": "message_start", "message": map[string]any{
					"id": id, "type": "message", "role": "assistant", "model": req.Model, "content": []any{},
					"stop_reason": nil, "stop_sequence": nil,
					"usage": map[string]int{"input_tokens": usage["input_tokens"], "output_tokens": 0},
				}}},
				{"content_block_start", map[string]any{"type": "content_block_start", "index": 0,
					"content_block": map[string]string{"type": "text", "text": ""}}},
				{"ping", map[string]string{"type": "ping"}},
				{"content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
					"delta": map[string]string{"type": "text_delta", "text": reply}}},
				{"content_block_stop", map[string]any{"type": "content_block_stop", "index": 0}},
				{"message_delta", map[string]any{"type": "message_delta",
					"delta": map[string]any{"stop_reason": "end_turn", "stop_sequence": nil},
					"usage": map[string]int{"output_tokens": 1}}},
				{"message_stop", map[string]string{"type": "message_stop"}},
			}
			flusher, _ := w.(http.Flusher)
			for _, ev := range events {
				data, _ := json.Marshal(ev.data)
				fmt.Fprintf(w, "event: %s\ndata: %s\n\n", ev.name, data)
				if flusher != nil {
					flusher.Flush()
				}
			}
		default:
			writeJSON(w, http.StatusNotFound, map[string]any{"type": "error", "error": map[string]string{
				"type": "not_found_error", "message": "no route for " + strings.ReplaceAll(r.URL.Path, "\n", "")}})
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), seen...)
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
