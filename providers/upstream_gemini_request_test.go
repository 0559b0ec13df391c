package providers

import (
	"bytes"
	"errors"
	"testing"
)

// TestOpenAIToGeminiRequestMalformed pins how the Gemini upstream's
// reading of a chat request fails (or does not) on malformed fields: the
// request shares OpenAIRequest with every other chat route, and the
// thought signature and response_format it reads past that type must fail
// exactly as they did when they were typed fields of the request.
func TestOpenAIToGeminiRequestMalformed(t *testing.T) {
	const msgs = `"messages":[{"role":"user","content":"x"}]`
	call := func(extra string) string {
		return `{"messages":[{"role":"assistant","tool_calls":[{"id":"c","function":{"name":"f","arguments":"{}"}` + extra + `}]},{"role":"user","content":"y"}]}`
	}
	for _, tc := range []struct {
		name, body string
		want       string // the error's message; "" means success
		contains   string // a fragment of the output on success
	}{
		{"signature", call(`,"extra_content":{"google":{"thought_signature":"S"}}`), "", `"thoughtSignature":"S"`},
		{"null extra", call(`,"extra_content":null`), "", `"thoughtSignature":"skip_thought_signature_validator"`},
		{"null google", call(`,"extra_content":{"google":null}`), "", `"thoughtSignature":"skip_thought_signature_validator"`},
		{"other vendor", call(`,"extra_content":{"openai":1}`), "", `"thoughtSignature":"skip_thought_signature_validator"`},
		{"extra not object", call(`,"extra_content":5`), "messages.tool_calls.extra_content must be an object, not number", ""},
		{"extra list", call(`,"extra_content":[]`), "messages.tool_calls.extra_content must be an object, not array", ""},
		{"google not object", call(`,"extra_content":{"google":"S"}`), "messages.tool_calls.extra_content.google must be an object, not string", ""},
		{"signature not string", call(`,"extra_content":{"google":{"thought_signature":1}}`), "messages.tool_calls.extra_content.google.thought_signature must be a string, not number", ""},
		{"response_format json_object", `{` + msgs + `,"response_format":{"type":"json_object"}}`, "", `"responseMimeType":"application/json"`},
		{"response_format null", `{` + msgs + `,"response_format":null}`, "", `"generationConfig":{`},
		{"response_format string", `{` + msgs + `,"response_format":"json_object"}`, "response_format must be an object, not string", ""},
		{"response_format type number", `{` + msgs + `,"response_format":{"type":1}}`, "response_format.type must be a string, not number", ""},
		{"json_schema not object", `{` + msgs + `,"response_format":{"type":"json_schema","json_schema":"s"}}`, "response_format.json_schema must be an object, not string", ""},
		// A tool call outside an assistant turn is not translated; its
		// signature must not shift the next assistant call's.
		{"user tool call", `{"messages":[{"role":"user","content":"x","tool_calls":[{"id":"u","function":{"arguments":""},"extra_content":{"google":{"thought_signature":"U"}}}]},{"role":"assistant","tool_calls":[{"id":"c","function":{"name":"f","arguments":"{}"},"extra_content":{"google":{"thought_signature":"A"}}}]},{"role":"user","content":"y"}]}`, "", `"thoughtSignature":"A"`},
		// Members the Gemini translation does not read are typed by
		// OpenAIRequest: a wrong type is refused as on the Anthropic and
		// Ollama upstreams (the translation's own reader used to skip them).
		{"user number", `{` + msgs + `,"user":5}`, "user must be a string, not number", ""},
		{"parallel_tool_calls string", `{` + msgs + `,"parallel_tool_calls":"x"}`, "parallel_tool_calls must be a boolean, not string", ""},
		{"name number", `{"messages":[{"role":"user","content":"x","name":5}]}`, "messages.name must be a string, not number", ""},
		{"call type number", call(`,"type":5`), "messages.tool_calls.type must be a string, not number", ""},
		{"temperature string", `{` + msgs + `,"temperature":"hot"}`, "temperature must be a number, not string", ""},
		{"content number", `{"messages":[{"role":"user","content":5}]}`, "content must be a string or a list of parts", ""},
	} {
		out, err := OpenAIToGeminiRequest([]byte(tc.body), "gemini-3-pro")
		if tc.want == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			} else if !bytes.Contains(out, []byte(tc.contains)) {
				t.Errorf("%s: lacks %s in %s", tc.name, tc.contains, out)
			}
			continue
		}
		var ae *APIError
		if !errors.As(err, &ae) || ae.Status != 400 || ae.Message != tc.want {
			t.Errorf("%s: got %v (%#v), want 400 %q", tc.name, err, ae, tc.want)
		}
	}
}

// geminiUpstreamTurn is an agent's chat turn bound for a Gemini upstream:
// a system prompt, a tool, and a signed call with its result.
const geminiUpstreamTurn = `{"model":"team-gemini","stream":true,"messages":[
  {"role":"system","content":"You are a coding agent. Use the tools."},
  {"role":"user","content":"List the files in the repository and read the README."},
  {"role":"assistant","content":null,"tool_calls":[
    {"id":"call_1","type":"function","function":{"name":"run","arguments":"{\"cmd\":\"ls -la\"}"},"extra_content":{"google":{"thought_signature":"CiQBcsjafQ=="}}}]},
  {"role":"tool","tool_call_id":"call_1","content":"README.md\ngo.mod\nmain.go\n"},
  {"role":"user","content":[{"type":"text","text":"Now summarise README.md."}]}],
  "tools":[{"type":"function","function":{"name":"run","description":"Run a shell command","parameters":{"type":"object","properties":{"cmd":{"type":"string"}},"required":["cmd"]}}}],
  "max_completion_tokens":4096,"temperature":0.2,"reasoning_effort":"medium"}`

// BenchmarkGeminiUpstreamRequest: a chat turn written as a Gemini
// generateContent body, the work a chat client's request to a Gemini
// upstream costs.
func BenchmarkGeminiUpstreamRequest(b *testing.B) {
	body := []byte(geminiUpstreamTurn)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := OpenAIToGeminiRequest(body, "gemini-3-pro"); err != nil {
			b.Fatal(err)
		}
	}
}
