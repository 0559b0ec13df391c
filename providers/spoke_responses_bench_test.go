package providers

import (
	"encoding/json"
	"strings"
	"testing"
)

// benchResponsesBody is the bench harness's conversation as a Responses
// request: instructions, three turns of history, a new question.
func benchResponsesBody() []byte {
	system := "You are the platform team's assistant. Answer briefly and precisely; prefer code over prose; " +
		"cite the file and line when you refer to code; never invent APIs. " + strings.Repeat("Keep answers under two hundred words unless asked for more. ", 12)
	b, _ := json.Marshal(map[string]any{
		"model": "oa", "instructions": system, "temperature": 0.2, "max_output_tokens": 512, "store": false,
		"input": []map[string]any{
			{"type": "message", "role": "user", "content": []map[string]string{{"type": "input_text", "text": "How do I rotate the gateway's keys without downtime?"}}},
			{"type": "message", "role": "assistant", "content": []map[string]string{{"type": "output_text", "text": "Add the new key next to the old one, reload Caddy, move clients over, then remove the old key and reload again."}}},
			{"type": "message", "role": "user", "content": []map[string]string{{"type": "input_text", "text": "And how do I see which clients still use the old key? Show the report request."}}},
		}})
	return b
}

const benchChatAnswer = `{"id":"chatcmpl-fake","object":"chat.completion","created":1730000000,"model":"fake-gpt","choices":[{"index":0,"message":{"role":"assistant","content":"Hello from the fake upstream."},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":11,"completion_tokens":7,"total_tokens":18,"prompt_tokens_details":{"cached_tokens":3}}}`

// BenchmarkResponsesTranslatedRequest is a whole non-streaming Responses
// request's translation work toward a chat backend: parse, hub request,
// route request, answer to Response.
func BenchmarkResponsesTranslatedRequest(b *testing.B) {
	body := benchResponsesBody()
	rt, _ := NewRoute(FormatResponses, FormatOpenAI)
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		turn, err := ParseResponsesRequest(body)
		if err != nil {
			b.Fatal(err)
		}
		turn.Alias = "oa"
		info := RequestInfo{Model: "oa", Turn: turn}
		if _, _, err := rt.Request(body, info, "fake-gpt", RouteOptions{}); err != nil {
			b.Fatal(err)
		}
		if _, _, err := rt.Response([]byte(benchChatAnswer), info); err != nil {
			b.Fatal(err)
		}
	}
}
