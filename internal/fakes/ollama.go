package fakes

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// Ollama returns a native Ollama server: POST /api/chat, streaming NDJSON
// unless the request says "stream": false (Ollama's default is to stream).
func Ollama(o Options, rec *Recorder) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := readBody(r)
		if rec != nil {
			rec.add(r, body)
		}
		if o.Status != 0 {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(o.Status)
			fmt.Fprintf(w, `{"error":"fake failure %d"}`, o.Status)
			return
		}
		if r.URL.Path == "/api/embed" {
			ollamaEmbed(w, body)
			return
		}
		var req struct {
			Model    string            `json:"model"`
			Stream   *bool             `json:"stream"`
			Messages []json.RawMessage `json:"messages"`
			Tools    json.RawMessage   `json:"tools"`
		}
		if err := json.Unmarshal(body, &req); err != nil || req.Model == "" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"error":"model is required"}`))
			return
		}
		tool := wantsTool(req.Tools, req.Messages)
		stream := req.Stream == nil || *req.Stream
		toolCalls := fmt.Sprintf(`[{"function":{"index":0,"name":%q,"arguments":%s}}]`, WeatherToolName, WeatherToolArguments)
		final := fmt.Sprintf(`"done":true,"done_reason":"stop","total_duration":4883583458,"load_duration":1334875,"prompt_eval_count":%d,"prompt_eval_duration":342546000,"eval_count":%d,"eval_duration":4535599000`,
			OllamaPromptEvalCount, OllamaEvalCount)
		if !stream {
			w.Header().Set("Content-Type", "application/json")
			msg := fmt.Sprintf(`{"role":"assistant","content":%q}`, o.reply())
			if tool {
				msg = fmt.Sprintf(`{"role":"assistant","content":"","tool_calls":%s}`, toolCalls)
			}
			fmt.Fprintf(w, `{"model":%q,"created_at":"2025-07-07T20:22:19.18Z","message":%s,%s}`, req.Model, msg, final)
			return
		}
		w.Header().Set("Content-Type", "application/x-ndjson")
		w.WriteHeader(http.StatusOK)
		line := func(msg, rest string) {
			fmt.Fprintf(w, "{\"model\":%q,\"created_at\":\"2025-07-07T20:22:19.18Z\",\"message\":%s,%s}\n", req.Model, msg, rest)
			flush(w)
		}
		if tool {
			line(fmt.Sprintf(`{"role":"assistant","content":"","tool_calls":%s}`, toolCalls), `"done":false`)
		} else {
			for _, p := range o.pieces() {
				if !Pause(r, o.Gap) {
					return
				}
				line(fmt.Sprintf(`{"role":"assistant","content":%q}`, p), `"done":false`)
			}
		}
		line(`{"role":"assistant","content":""}`, final)
	})
}
