package providers

import (
	"encoding/json"
	"testing"

	"github.com/modelgate/modelgate/internal/jsonfast"
)

// openAIUsageByUnmarshal is OpenAIUsageFromBody as it was before the fast
// read: encoding/json on the usage member.
func openAIUsageByUnmarshal(body []byte) Usage {
	v, ok, err := jsonfast.FindMember(body, 0, "usage")
	if err != nil || !ok || body[v.Start] != '{' {
		return Usage{}
	}
	var u OpenAIUsage
	if json.Unmarshal(body[v.Start:v.End], &u) != nil {
		return Usage{}
	}
	out := usageFromOpenAI(&u)
	if t, ok, err := jsonfast.FindMember(body, 0, "service_tier"); err == nil && ok {
		out.ServiceTier, _ = jsonfast.DecodeStringToken(body[t.Start:t.End])
	}
	return out
}

// FuzzOpenAIUsageFromBody holds the fast usage read (the hub's reader) to
// encoding/json.
func FuzzOpenAIUsageFromBody(f *testing.F) {
	for _, s := range []string{
		`{"usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15}}`,
		`{"usage":{"prompt_tokens":12,"completion_tokens":3,"prompt_tokens_details":{"cached_tokens":4,"cache_write_tokens":2},"completion_tokens_details":{"reasoning_tokens":1}}}`,
		`{"usage":{"prompt_tokens":12,"prompt_tokens_details":{"cached_tokens":4},"prompt_tokens_details":{"cache_write_tokens":2}}}`,
		`{"usage":{"prompt_tokens":12,"prompt_tokens_details":{"cached_tokens":4},"prompt_tokens_details":null}}`,
		`{"usage":{"Prompt_Tokens":12,"completion_tokens":1.5}}`,
		`{"usage":{"prompt_tokens":null,"completion_tokens":"3"}}`,
		`{"usage":{"prompt_tokens":-0,"completion_tokens":99999999999999999999}}`,
		`{"usage":{"prompt_tokens":1e3,"pro\u006dpt_tokens":2}}`,
		`{"usage":{"prompt_toKens":7,"prompt_tokens_details":[1]}}`,
		`{"usage":{"prompt_tokens":5} ,"service_tier":"flex"}`,
		`{"usage":{"prompt_tokens":5,}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		got, want := OpenAIUsageFromBody(body), openAIUsageByUnmarshal(body)
		if got != want {
			t.Fatalf("body %q: fast read %+v, encoding/json %+v", body, got, want)
		}
	})
}

// BenchmarkOpenAIUsageFromBody is the usage read of a pass-through answer.
func BenchmarkOpenAIUsageFromBody(b *testing.B) {
	body := []byte(`{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4o","choices":[{"index":0,"message":{"role":"assistant","content":"Hello there, how can I help?"},"finish_reason":"stop"}],"usage":{"prompt_tokens":512,"completion_tokens":24,"total_tokens":536,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}},"service_tier":"default"}`)
	for _, c := range []struct {
		name string
		read func([]byte) Usage
	}{{"fast", OpenAIUsageFromBody}, {"encoding-json", openAIUsageByUnmarshal}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				if c.read(body).InputTokens != 512 {
					b.Fatal("wrong usage")
				}
			}
		})
	}
}

// BenchmarkPassthroughStreamUsageChunk is the pass-through stream's read
// of the usage chunk at a stream's end.
func BenchmarkPassthroughStreamUsageChunk(b *testing.B) {
	ev := Event{Data: []byte(`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":1200,"completion_tokens":300,"total_tokens":1500,"prompt_tokens_details":{"cached_tokens":1024},"completion_tokens_details":{"reasoning_tokens":64}}}`)}
	tr := NewOpenAIPassthroughStream(false)
	var out []byte
	b.ReportAllocs()
	for b.Loop() {
		out, _ = tr.Translate(out[:0], ev)
	}
	if tr.Usage().TotalInput() != 1200 {
		b.Fatalf("usage %+v", tr.Usage())
	}
}
