package fakes

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// OpenAIChatRequest is what the OpenAI fake reads of a chat-completions
// request.
type OpenAIChatRequest struct {
	Model         string `json:"model"`
	Stream        bool   `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	Messages []json.RawMessage `json:"messages"`
	Tools    json.RawMessage   `json:"tools"`
}

// OpenAI returns a chat-completions server (mount it at any base; it
// answers POST …/responses as OpenAI's Responses API, every other POST as
// chat completions).
func OpenAI(o Options, rec *Recorder) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := readBody(r)
		if rec != nil {
			rec.add(r, body)
		}
		if strings.HasSuffix(r.URL.Path, "/responses") {
			openAIResponses(o, w, r, body)
			return
		}
		if strings.HasSuffix(r.URL.Path, "/embeddings") && o.Status == 0 {
			openAIEmbeddings(w, body)
			return
		}
		if o.Status != 0 {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(o.Status)
			fmt.Fprintf(w, `{"error":{"message":"fake failure %d","type":"server_error","param":null,"code":null}}`, o.Status)
			return
		}
		var req OpenAIChatRequest
		if err := json.Unmarshal(body, &req); err != nil || req.Model == "" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"error":{"message":"bad request","type":"invalid_request_error","param":null,"code":null}}`))
			return
		}
		tool := wantsTool(req.Tools, req.Messages)
		usage := fmt.Sprintf(`{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d,"prompt_tokens_details":{"cached_tokens":%d}}`,
			OpenAIPromptTokens, OpenAICompletionTokens, OpenAIPromptTokens+OpenAICompletionTokens, OpenAICachedTokens)
		w.Header().Set("X-Request-Id", "req_fake_openai")
		if !req.Stream {
			w.Header().Set("Content-Type", "application/json")
			msg := fmt.Sprintf(`{"role":"assistant","content":%q}`, o.reply())
			finish := "stop"
			if tool {
				msg = fmt.Sprintf(`{"role":"assistant","content":null,"tool_calls":[{"id":"call_fake1","type":"function","function":{"name":%q,"arguments":%q}}]}`, WeatherToolName, WeatherToolArguments)
				finish = "tool_calls"
			}
			fmt.Fprintf(w, `{"id":"chatcmpl-fake","object":"chat.completion","created":1730000000,"model":%q,"choices":[{"index":0,"message":%s,"logprobs":null,"finish_reason":%q}],"usage":%s}`,
				req.Model, msg, finish, usage)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		chunk := func(delta, finish string) {
			f := "null"
			if finish != "" {
				f = `"` + finish + `"`
			}
			fmt.Fprintf(w, "data: {\"id\":\"chatcmpl-fake\",\"object\":\"chat.completion.chunk\",\"created\":1730000000,\"model\":%q,\"choices\":[{\"index\":0,\"delta\":%s,\"finish_reason\":%s}],\"usage\":null}\n\n", req.Model, delta, f)
			flush(w)
		}
		chunk(`{"role":"assistant","content":""}`, "")
		if tool {
			chunk(fmt.Sprintf(`{"tool_calls":[{"index":0,"id":"call_fake1","type":"function","function":{"name":%q,"arguments":""}}]}`, WeatherToolName), "")
			half := len(WeatherToolArguments) / 2
			for _, part := range []string{WeatherToolArguments[:half], WeatherToolArguments[half:]} {
				if !Pause(r, o.Gap) {
					return
				}
				chunk(fmt.Sprintf(`{"tool_calls":[{"index":0,"function":{"arguments":%q}}]}`, part), "")
			}
			chunk(`{}`, "tool_calls")
		} else {
			for _, p := range o.pieces() {
				if !Pause(r, o.Gap) {
					return
				}
				chunk(fmt.Sprintf(`{"content":%q}`, p), "")
			}
			chunk(`{}`, "stop")
		}
		if req.StreamOptions != nil && req.StreamOptions.IncludeUsage {
			fmt.Fprintf(w, "data: {\"id\":\"chatcmpl-fake\",\"object\":\"chat.completion.chunk\",\"created\":1730000000,\"model\":%q,\"choices\":[],\"usage\":%s}\n\n", req.Model, usage)
		}
		_, _ = w.Write([]byte("data: [DONE]\n\n"))
		flush(w)
	})
}
