package providers

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
	"unicode/utf8"
)

// The translators take untrusted client bodies: whatever arrives, they
// must return valid JSON or a 400, never panic.

func checkTranslated(t *testing.T, out []byte, err error) {
	t.Helper()
	if err != nil {
		var ae *APIError
		if !errors.As(err, &ae) || ae.Status != 400 {
			t.Fatalf("error is not a 400 APIError: %#v", err)
		}
		return
	}
	if !json.Valid(out) {
		t.Fatalf("invalid json output: %s", out)
	}
}

func FuzzOpenAIToAnthropicRequest(f *testing.F) {
	f.Add([]byte(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		out, err := OpenAIToAnthropicRequest(body, "up", 100)
		checkTranslated(t, out, err)
	})
}

func FuzzAnthropicToOpenAIRequest(f *testing.F) {
	f.Add([]byte(`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`))
	f.Add([]byte(claudeCodeToolSearchTurn))
	f.Fuzz(func(t *testing.T, body []byte) {
		out, err := AnthropicToOpenAIRequest(body, "up", false)
		checkTranslated(t, out, err)
	})
}

func FuzzRewriteModel(f *testing.F) {
	f.Add([]byte(`{"model":"a","messages":[]}`), "b")
	f.Add([]byte(`{"model":"a","stream":"true","messages":[]}`), "b")
	f.Add([]byte(`{"model":"a","stream":true,"Stream":false,"messages":[]}`), "b")
	f.Add([]byte(`{"model":"a","n":8,"max_tokens":1e5,"messages":[]}`), "b")
	f.Fuzz(func(t *testing.T, body []byte, model string) {
		out, err := RewriteModel(body, model)
		// A struct decode matches keys the way Go upstreams do:
		// case-insensitively, the last match winning.
		var probe struct {
			Model json.RawMessage `json:"model"`
		}
		var asMap map[string]json.RawMessage
		isObject := json.Unmarshal(body, &asMap) == nil && asMap != nil
		_ = json.Unmarshal(body, &probe)
		var old string
		hasStringModel := isObject && probe.Model != nil && json.Unmarshal(probe.Model, &old) == nil
		if hasStringModel && err != nil && err.Error() != "request model is not a string" {
			t.Fatalf("valid body with a string model rejected: %v", err)
		}
		if err == nil && isObject {
			var got struct {
				Model string `json:"model"`
			}
			if json.Unmarshal(out, &got) != nil || (utf8.ValidString(model) && got.Model != model) {
				t.Fatalf("model = %q, want %q in %s", got.Model, model, out)
			}
		}
		info, err := PeekRequest(body)
		if err == nil && (!hasStringModel || info.Model != old) {
			t.Fatalf("PeekRequest model = %q, decoder says %q", info.Model, old)
		}
		// stream decides the framing: whatever PeekRequest accepts, a Go
		// upstream must read as the same boolean.
		var sp struct {
			Stream json.RawMessage `json:"stream"`
		}
		if err == nil && json.Unmarshal(body, &sp) == nil && sp.Stream != nil {
			var b *bool
			if json.Unmarshal(sp.Stream, &b) != nil || (b != nil && *b) != info.Stream {
				t.Fatalf("PeekRequest stream = %v for %s", info.Stream, sp.Stream)
			}
		}
		// n bills each choice's output: whatever an upstream reads as n,
		// the reservation's multiplier is at least that (to its cap).
		var nv struct {
			N *float64 `json:"n"`
		}
		if err == nil && json.Unmarshal(body, &nv) == nil && nv.N != nil && *nv.N > 1 {
			if want := min(int64(*nv.N), 1<<20); info.Choices() < want {
				t.Fatalf("Choices() = %d for n %v", info.Choices(), *nv.N)
			}
		}
		withUsage, _, err := EnsureIncludeUsage(body)
		if isObject {
			if err != nil {
				t.Fatalf("EnsureIncludeUsage rejected an object: %v", err)
			}
			var v struct {
				StreamOptions struct {
					IncludeUsage bool `json:"include_usage"`
				} `json:"stream_options"`
			}
			if json.Unmarshal(withUsage, &v) != nil || !v.StreamOptions.IncludeUsage {
				t.Fatalf("EnsureIncludeUsage output %s", withUsage)
			}
		}
	})
}

// FuzzStreamTranslators feeds one arbitrary event to every translator after
// a normal start: the output must stay well-formed, whatever took the fast
// path.
func FuzzStreamTranslators(f *testing.F) {
	f.Add("content_block_delta", []byte(`{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"a\u00e9"}}`))
	f.Add("content_block_delta", []byte(`{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"a\""}}`))
	f.Add("", []byte(`{"id":"c","choices":[{"index":0,"delta":{"content":"x\ty"},"finish_reason":null}],"usage":null}`))
	f.Add("", []byte(`{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"f","arguments":"{"}}]}}]}`))
	f.Fuzz(func(t *testing.T, name string, data []byte) {
		check := func(out []byte) {
			for _, block := range bytes.Split(bytes.TrimSuffix(out, []byte("\n\n")), []byte("\n\n")) {
				for _, line := range bytes.Split(block, []byte("\n")) {
					if d, ok := bytes.CutPrefix(line, []byte("data: ")); ok && string(d) != dataDone && !json.Valid(d) {
						t.Fatalf("invalid data line %q", d)
					}
				}
			}
		}
		a := NewAnthropicToOpenAIStream(true)
		dst, _ := a.Translate(nil, Event{Name: []byte("message_start"), Data: []byte(`{"type":"message_start","message":{"id":"msg_1","model":"m","usage":{"input_tokens":1}}}`)})
		dst, _ = a.Translate(dst, Event{Name: []byte("content_block_start"), Data: []byte(`{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t","name":"f"}}`)})
		dst, _ = a.Translate(dst, Event{Name: []byte(name), Data: data})
		check(a.Finish(dst))

		for _, p := range []StreamTranslator{NewOpenAIPassthroughStream(false), NewAnthropicPassthroughStream()} {
			dst, _ = p.Translate(nil, Event{Name: []byte(name), Data: data})
			check(p.Finish(dst))
		}

		o := NewOpenAIToAnthropicStream("m")
		dst, _ = o.Translate(nil, Event{Data: []byte(`{"id":"c","choices":[{"index":0,"delta":{"role":"assistant"}}]}`)})
		dst, _ = o.Translate(dst, Event{Name: []byte(name), Data: data})
		check(o.Finish(dst))
	})
}
