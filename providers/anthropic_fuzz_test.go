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
