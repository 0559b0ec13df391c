package providers

import (
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
	f.Fuzz(func(t *testing.T, body []byte) {
		out, err := AnthropicToOpenAIRequest(body, "up", false)
		checkTranslated(t, out, err)
	})
}

func FuzzRewriteModel(f *testing.F) {
	f.Add([]byte(`{"model":"a","messages":[]}`), "b")
	f.Fuzz(func(t *testing.T, body []byte, model string) {
		out, err := RewriteModel(body, model)
		var probe map[string]json.RawMessage
		isObject := json.Unmarshal(body, &probe) == nil && probe != nil
		var old string
		hasStringModel := isObject && json.Unmarshal(probe["model"], &old) == nil && probe["model"] != nil
		if hasStringModel && err != nil {
			t.Fatalf("valid body with a string model rejected: %v", err)
		}
		if err == nil && isObject {
			var got map[string]json.RawMessage
			if json.Unmarshal(out, &got) != nil {
				t.Fatalf("output is not a json object: %s", out)
			}
			var m string
			if json.Unmarshal(got["model"], &m) != nil || (utf8.ValidString(model) && m != model) {
				t.Fatalf("model = %s, want %q", got["model"], model)
			}
		}
		info, err := PeekRequest(body)
		if err == nil && (!hasStringModel || info.Model != old) {
			t.Fatalf("PeekRequest model = %q, decoder says %q", info.Model, old)
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
