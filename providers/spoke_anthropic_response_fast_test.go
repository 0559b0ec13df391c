package providers

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
)

// chatAnswerSeeds are chat answers as upstreams send them, and the edges
// where the fast reader must give up or the encoder could part ways with
// json.Marshal.
var chatAnswerSeeds = []string{
	`{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"fake-gpt","choices":[{"index":0,"message":{"role":"assistant","content":"Hello from the fake upstream."},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`,
	`{"id":"chatcmpl-123","object":"chat.completion","created":1730000000,"model":"gpt-4o",
	  "choices":[{"index":0,"message":{"role":"assistant","content":"Let me look.","refusal":null,"tool_calls":[
	    {"id":"call_abc","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Oslo\"}"}},
	    {"id":"call.x/y","type":"function","function":{"name":"broken","arguments":"{not json"}}]},"logprobs":null,"finish_reason":"tool_calls"}],
	  "usage":{"prompt_tokens":1200,"completion_tokens":30,"total_tokens":1230,"prompt_tokens_details":{"cached_tokens":1000,"cache_write_tokens":100},"completion_tokens_details":{"reasoning_tokens":0}},"service_tier":"default"}`,
	`{"id":"c","choices":[{"message":{"content":[{"type":"text","text":"a<b>"},{"type":"image_url"},{"type":"text","text":" & \u2028"}]},"finish_reason":"length"}]}`,
	`{"id":"c","choices":[{"message":{"content":null,"refusal":"no <thanks>"},"finish_reason":"content_filter"}],"usage":null}`,
	`{"id":"c","choices":[{"message":{"content":"x","tool_calls":[{"id":"t","function":{"name":"f","arguments":" { \"a\" : [1, \"<\"] } "}}]},"finish_reason":"stop"}]}`,
	`{"id":"c","choices":[{"message":null,"finish_reason":null}],"model":null}`,
	`{"id":"c","choices":[null]}`,
	`{"id":"c","choices":[],"usage":{"prompt_tokens":1.5}}`,
	`{"id":"c","choices":[{"message":{"content":"a","Content":"b"}}]}`,
	`{"id":"c","id":"d","choices":[]}`,
	`{"id":"c","choices":[{"message":{"content":"a"}}],"usage":{"prompt_tokens":3,"completion_tokens_details":{"reasoning_tokens":"x"}}}`,
	"{\"id\":\"bad \xff utf8\",\"choices\":[{\"message\":{\"content\":\"\xe2\x80\xa8\"}}]}",
	`{"choices":"none"}`,
	`<html>`,
	`null`,
	`[]`,
}

// FuzzChatAnswerToMessages holds the Messages answer's fast path to the
// encoding/json path it replaced: the reader reads what json.Unmarshal
// reads (or gives up), the answer fails exactly when json.Unmarshal does
// and with its words, and the hand-written encoding is json.Marshal's.
func FuzzChatAnswerToMessages(f *testing.F) {
	for _, s := range chatAnswerSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var slow chatInAnswer
		slowErr := json.Unmarshal(body, &slow)
		var fast chatInAnswer
		if readChatInAnswer(body, &fast) {
			if slowErr != nil {
				t.Fatalf("fast path read a body encoding/json refuses (%v): %s", slowErr, body)
			}
			// The fast path keeps of usage what usageFromOpenAI reads.
			if (fast.Usage == nil) != (slow.Usage == nil) ||
				fast.Usage != nil && usageFromOpenAI(fast.Usage) != usageFromOpenAI(slow.Usage) {
				t.Fatalf("usage: fast %+v, slow %+v", fast.Usage, slow.Usage)
			}
			fast.Usage, slow.Usage = nil, nil
			if !reflect.DeepEqual(fast, slow) {
				t.Fatalf("fast %#v\nslow %#v", fast, slow)
			}
		}
		out, _, err := buildAnthropicResponseFromOpenAI(body)
		if (err == nil) != (slowErr == nil) {
			t.Fatalf("error %v, encoding/json's %v", err, slowErr)
		}
		if err != nil {
			if want := errors.New("upstream openai response: " + jsonErrText(slowErr)); err.Error() != want.Error() {
				t.Fatalf("error %q, before %q", err, want)
			}
			return
		}
		sameAsMarshal(t, "messages answer", appendAnthropicOutResponse(nil, &out), &out)
	})
}

// TestChatAnswerFastPathTakesRealAnswers: the answers upstreams send are
// read by the fast path, not left to encoding/json.
func TestChatAnswerFastPathTakesRealAnswers(t *testing.T) {
	for _, body := range chatAnswerSeeds[:5] {
		var a chatInAnswer
		if !readChatInAnswer([]byte(body), &a) {
			t.Errorf("the fast path gave up on %s", body)
		}
	}
}
