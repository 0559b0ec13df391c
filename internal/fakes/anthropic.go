package fakes

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// Anthropic returns a Messages server: POST /v1/messages (JSON or SSE
// with event names) and POST /v1/messages/count_tokens. It insists on
// x-api-key and anthropic-version as the real API does.
func Anthropic(o Options, rec *Recorder) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := readBody(r)
		if rec != nil {
			rec.add(r, body)
		}
		fail := func(status int, typ, msg string) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			fmt.Fprintf(w, `{"type":"error","error":{"type":%q,"message":%q},"request_id":"req_fake"}`, typ, msg)
		}
		if r.Header.Get("X-Api-Key") == "" {
			fail(http.StatusUnauthorized, "authentication_error", "invalid x-api-key")
			return
		}
		if r.Header.Get("Anthropic-Version") == "" {
			fail(http.StatusBadRequest, "invalid_request_error", "anthropic-version: header is required")
			return
		}
		if o.Status != 0 {
			fail(o.Status, "api_error", fmt.Sprintf("fake failure %d", o.Status))
			return
		}
		var req struct {
			Model     string            `json:"model"`
			MaxTokens *int              `json:"max_tokens"`
			Stream    bool              `json:"stream"`
			Messages  []json.RawMessage `json:"messages"`
			Tools     json.RawMessage   `json:"tools"`
		}
		if err := json.Unmarshal(body, &req); err != nil {
			fail(http.StatusBadRequest, "invalid_request_error", "invalid JSON")
			return
		}
		if strings.HasSuffix(r.URL.Path, "/count_tokens") {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"input_tokens":%d}`, 40+len(body)/100)
			return
		}
		if req.MaxTokens == nil {
			fail(http.StatusBadRequest, "invalid_request_error", "max_tokens: Field required")
			return
		}
		tool := wantsTool(req.Tools, req.Messages)
		w.Header().Set("Request-Id", "req_fake_anthropic")
		if !req.Stream {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, anthropicMessage(o, req.Model, tool))
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		anthropicStream(o, r, req.Model, tool, func(name, data string) {
			fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, data)
			flush(w)
		})
	})
}

// anthropicMessage is a whole Messages answer: text, or a tool call.
func anthropicMessage(o Options, model string, tool bool) string {
	content := fmt.Sprintf(`[{"type":"text","text":%q}]`, o.reply())
	stop := "end_turn"
	if tool {
		content = fmt.Sprintf(`[{"type":"text","text":"Checking."},{"type":"tool_use","id":"toolu_fake1","name":%q,"input":%s}]`, WeatherToolName, WeatherToolArguments)
		stop = "tool_use"
	}
	return fmt.Sprintf(`{"id":"msg_fake","type":"message","role":"assistant","model":%q,"content":%s,"stop_reason":%q,"stop_sequence":null,"usage":{"input_tokens":%d,"cache_creation_input_tokens":%d,"cache_read_input_tokens":%d,"output_tokens":%d,"service_tier":"standard"}}`,
		model, content, stop, AnthropicInputTokens, AnthropicCacheCreation, AnthropicCacheRead, AnthropicOutputTokens)
}

// anthropicStream emits a Messages stream's events, pausing o.Gap before
// each delta; it stops early when the request is cancelled.
func anthropicStream(o Options, r *http.Request, model string, tool bool, event func(name, data string)) {
	usageStart := fmt.Sprintf(`{"input_tokens":%d,"cache_creation_input_tokens":%d,"cache_read_input_tokens":%d,"output_tokens":1}`,
		AnthropicInputTokens, AnthropicCacheCreation, AnthropicCacheRead)
	event("message_start", fmt.Sprintf(`{"type":"message_start","message":{"id":"msg_fake","type":"message","role":"assistant","content":[],"model":%q,"stop_reason":null,"stop_sequence":null,"usage":%s}}`, model, usageStart))
	event("ping", `{"type": "ping"}`)
	stop := "end_turn"
	if tool {
		stop = "tool_use"
		event("content_block_start", fmt.Sprintf(`{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_fake1","name":%q,"input":{}}}`, WeatherToolName))
		half := len(WeatherToolArguments) / 2
		for _, part := range []string{WeatherToolArguments[:half], WeatherToolArguments[half:]} {
			if !Pause(r, o.Gap) {
				return
			}
			event("content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":%q}}`, part))
		}
		event("content_block_stop", `{"type":"content_block_stop","index":0}`)
	} else {
		event("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)
		for i, p := range o.pieces() {
			if o.CutAfter > 0 && i == o.CutAfter {
				panic(http.ErrAbortHandler)
			}
			if !Pause(r, o.Gap) {
				return
			}
			event("content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":%q}}`, p))
		}
		event("content_block_stop", `{"type":"content_block_stop","index":0}`)
	}
	event("message_delta", fmt.Sprintf(`{"type":"message_delta","delta":{"stop_reason":%q,"stop_sequence":null},"usage":{"output_tokens":%d}}`, stop, AnthropicOutputTokens))
	event("message_stop", `{"type":"message_stop"}`)
}
