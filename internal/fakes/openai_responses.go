package fakes

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// ResponsesID is the id the fake gives every Response it creates.
const ResponsesID = "resp_fake_upstream"

// openAIResponses answers as OpenAI's Responses API: a Response object,
// or its typed event stream (event name = type, sequence numbers from 0,
// no [DONE]). It calls the weather tool like the chat fake does.
func openAIResponses(o Options, w http.ResponseWriter, r *http.Request, body []byte) {
	if o.Status != 0 {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(o.Status)
		fmt.Fprintf(w, `{"error":{"message":"fake failure %d","type":"server_error","param":null,"code":null}}`, o.Status)
		return
	}
	var req struct {
		Model  string            `json:"model"`
		Stream bool              `json:"stream"`
		Input  json.RawMessage   `json:"input"`
		Tools  json.RawMessage   `json:"tools"`
		Items  []json.RawMessage `json:"-"`
	}
	if err := json.Unmarshal(body, &req); err != nil || req.Model == "" || len(req.Input) == 0 {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"error":{"message":"bad request","type":"invalid_request_error","param":null,"code":null}}`))
		return
	}
	if json.Unmarshal(req.Input, &req.Items) != nil {
		req.Items = []json.RawMessage{req.Input} // a plain string is one user message
	}
	tool := wantsTool(req.Tools, req.Items)
	item := fmt.Sprintf(`{"id":"msg_fake","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","annotations":[],"logprobs":[],"text":%q}]}`, o.reply())
	if tool {
		item = fmt.Sprintf(`{"id":"fc_fake","type":"function_call","status":"completed","call_id":"call_fake1","name":%q,"arguments":%q}`, WeatherToolName, WeatherToolArguments)
	}
	usage := fmt.Sprintf(`{"input_tokens":%d,"input_tokens_details":{"cached_tokens":%d},"output_tokens":%d,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":%d}`,
		OpenAIPromptTokens, OpenAICachedTokens, OpenAICompletionTokens, OpenAIPromptTokens+OpenAICompletionTokens)
	response := func(status, output, usage string) string {
		return fmt.Sprintf(`{"id":%q,"object":"response","created_at":1730000000,"status":%q,"error":null,"incomplete_details":null,"instructions":null,"model":%q,"output":%s,"parallel_tool_calls":true,"metadata":{},"tool_choice":"auto","tools":[],"temperature":1,"top_p":1,"service_tier":"default","usage":%s}`,
			ResponsesID, status, req.Model, output, usage)
	}
	w.Header().Set("X-Request-Id", "req_fake_responses")
	if !req.Stream {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(response("completed", "["+item+"]", usage)))
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	seq := 0
	event := func(typ, rest string) {
		fmt.Fprintf(w, "event: %s\ndata: {\"type\":%q,\"sequence_number\":%d,%s}\n\n", typ, typ, seq, rest)
		seq++
		flush(w)
	}
	event("response.created", `"response":`+response("in_progress", "[]", "null"))
	event("response.in_progress", `"response":`+response("in_progress", "[]", "null"))
	if tool {
		event("response.output_item.added", fmt.Sprintf(`"output_index":0,"item":{"id":"fc_fake","type":"function_call","status":"in_progress","call_id":"call_fake1","name":%q,"arguments":""}`, WeatherToolName))
		event("response.function_call_arguments.delta", fmt.Sprintf(`"item_id":"fc_fake","output_index":0,"delta":%q`, WeatherToolArguments))
		event("response.function_call_arguments.done", fmt.Sprintf(`"item_id":"fc_fake","output_index":0,"arguments":%q`, WeatherToolArguments))
	} else {
		event("response.output_item.added", `"output_index":0,"item":{"id":"msg_fake","type":"message","status":"in_progress","role":"assistant","content":[]}`)
		event("response.content_part.added", `"item_id":"msg_fake","output_index":0,"content_index":0,"part":{"type":"output_text","annotations":[],"logprobs":[],"text":""}`)
		for _, p := range o.pieces() {
			if !Pause(r, o.Gap) {
				return
			}
			event("response.output_text.delta", fmt.Sprintf(`"item_id":"msg_fake","output_index":0,"content_index":0,"logprobs":[],"delta":%q`, p))
		}
		event("response.output_text.done", fmt.Sprintf(`"item_id":"msg_fake","output_index":0,"content_index":0,"logprobs":[],"text":%q`, o.reply()))
		event("response.content_part.done", fmt.Sprintf(`"item_id":"msg_fake","output_index":0,"content_index":0,"part":{"type":"output_text","annotations":[],"logprobs":[],"text":%q}`, o.reply()))
	}
	event("response.output_item.done", `"output_index":0,"item":`+item)
	event("response.completed", `"response":`+response("completed", "["+item+"]", usage))
}
