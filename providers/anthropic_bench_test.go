package providers

import (
	"strings"
	"testing"
)

func BenchmarkOpenAIToAnthropicRequest(b *testing.B) {
	body := readFixture(b, "openai_request.json")
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := OpenAIToAnthropicRequest(body, "claude-sonnet-4-5", 1024); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAnthropicToOpenAIRequest(b *testing.B) {
	body := readFixture(b, "claude_code_request.json")
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := AnthropicToOpenAIRequest(body, "qwen3-coder", false); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkOpenAIToAnthropicResponse is a chat answer with text, two
// tool calls and usage becoming a Messages answer.
func BenchmarkOpenAIToAnthropicResponse(b *testing.B) {
	body := []byte(`{"id":"chatcmpl-123","object":"chat.completion","created":1730000000,"model":"gpt-4o","choices":[{"index":0,"message":{"role":"assistant","content":"Let me look at the weather in both cities before I answer.","refusal":null,"tool_calls":[{"id":"call_abc","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Oslo\"}"}},{"id":"call_def","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Bergen\"}"}}]},"logprobs":null,"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":1200,"completion_tokens":30,"total_tokens":1230,"prompt_tokens_details":{"cached_tokens":1000},"completion_tokens_details":{"reasoning_tokens":0}}}`)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := OpenAIToAnthropicResponse(body); err != nil {
			b.Fatal(err)
		}
	}
}

// streamEvents splits an SSE text into events the way SSEReader yields them.
func streamEvents(s string) []Event {
	var evs []Event
	for _, block := range strings.Split(strings.TrimSpace(s), "\n\n") {
		var ev Event
		for _, line := range strings.Split(block, "\n") {
			if v, ok := strings.CutPrefix(line, "event: "); ok {
				ev.Name = []byte(v)
			} else if v, ok := strings.CutPrefix(line, "data: "); ok {
				ev.Data = []byte(v)
			}
		}
		if ev.Data != nil {
			evs = append(evs, ev)
		}
	}
	return evs
}

// BenchmarkAnthropicToOpenAIStreamEvent measures one text_delta event, the
// bulk of every stream.
func BenchmarkAnthropicToOpenAIStreamEvent(b *testing.B) {
	evs := streamEvents(anthropicUpstream)
	tr := NewAnthropicToOpenAIStream(true)
	dst, _ := tr.Translate(nil, evs[0]) // message_start
	var delta Event
	for _, ev := range evs {
		if strings.Contains(string(ev.Data), "text_delta") {
			delta = ev
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if dst, err = tr.Translate(dst[:0], delta); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkOpenAIToAnthropicStreamChunk measures one content chunk.
func BenchmarkOpenAIToAnthropicStreamChunk(b *testing.B) {
	evs := streamEvents(openAIUpstream)
	tr := NewOpenAIToAnthropicStream("team-sonnet")
	dst, _ := tr.Translate(nil, evs[0])
	dst, _ = tr.Translate(dst[:0], evs[1]) // opens the text block
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if dst, err = tr.Translate(dst[:0], evs[2]); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkOpenAIPassthroughStream(b *testing.B) {
	evs := streamEvents(openAIUpstream)
	b.ReportAllocs()
	var dst []byte
	for b.Loop() {
		tr := NewOpenAIPassthroughStream(true)
		for _, ev := range evs {
			dst, _ = tr.Translate(dst[:0], ev)
		}
	}
}

func BenchmarkRewriteModel(b *testing.B) {
	body := readFixture(b, "claude_code_request.json")
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := RewriteModel(body, "qwen3-coder"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPeekRequest(b *testing.B) {
	body := readFixture(b, "claude_code_request.json")
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := PeekRequest(body); err != nil {
			b.Fatal(err)
		}
	}
}
