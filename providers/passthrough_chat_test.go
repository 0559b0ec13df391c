package providers

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestRewriteModel(t *testing.T) {
	tests := []struct {
		name, body, model string
		// want is checked by decoding: every other member must be unchanged.
		wantErr bool
	}{
		{"simple", `{"model":"alias","messages":[]}`, "gpt-4o", false},
		{"model last after nested model keys", `{"metadata":{"model":"inner","x":[{"model":"deep"}]},"messages":[{"role":"user","content":"say \"model\": \"no\""}],"model":"alias"}`, "claude-sonnet-4-5", false},
		{"whitespace everywhere", " \n\t{ \"messages\" : [ ] ,\r\n  \"model\"  :\t \"alias\"  } \n", "llama3.1", false},
		{"escaped key and value", `{"mod\u0065l":"a\"li\\as","n":1}`, "up", false},
		{"value needs escaping", `{"model":"a"}`, "we\"ird\\name\n<x>", false},
		{"unicode", `{"model":"åλias","k":"☃"}`, "モデル", false},
		{"string containing braces", `{"p":"}{][","model":"a"}`, "b", false},
		{"missing", `{"messages":[]}`, "x", true},
		{"not a string", `{"model":5}`, "x", true},
		{"null", `{"model":null}`, "x", true},
		{"array body", `["model","a"]`, "x", true},
		{"truncated", `{"model":"a`, "x", true},
		{"empty", ``, "x", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := RewriteModel([]byte(tt.body), tt.model)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("no error, out %s", out)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var before, after map[string]json.RawMessage
			if err := json.Unmarshal([]byte(tt.body), &before); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(out, &after); err != nil {
				t.Fatalf("output is not json: %v: %s", err, out)
			}
			var got string
			if err := json.Unmarshal(after["model"], &got); err != nil || got != tt.model {
				t.Errorf("model = %s, want %q", after["model"], tt.model)
			}
			for k, v := range before {
				if k != "model" && !bytes.Equal(after[k], v) {
					t.Errorf("member %q changed: %s → %s", k, v, after[k])
				}
			}
			if len(after) != len(before) {
				t.Errorf("members %d → %d", len(before), len(after))
			}
		})
	}
}

func TestRewriteModelDuplicates(t *testing.T) {
	out, err := RewriteModel([]byte(`{"model":"a","x":1,"model":"b"}`), "z")
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != `{"model":"z","x":1,"model":"z"}` {
		t.Errorf("out = %s", out)
	}
}

func TestPeekRequest(t *testing.T) {
	tests := []struct {
		name  string
		body  string
		want  RequestInfo
		param string
	}{
		{"openai stream with usage", `{"messages":[{"role":"user","content":"{\"model\":\"x\"}"}],"stream":true,"stream_options":{"include_obfuscation":false,"include_usage":true},"model":"fast"}`, RequestInfo{Model: "fast", Stream: true, IncludeUsage: true}, ""},
		{"anthropic", `{"model":"claude-sonnet-4-5","max_tokens":10,"stream":false,"metadata":{"stream":true},"messages":[]}`, RequestInfo{Model: "claude-sonnet-4-5", maxTokens: 10}, ""},
		{"escaped model", `{"model":"a\/b\u00e9","messages":[]}`, RequestInfo{Model: "a/bé"}, ""},
		{"stream not bool", `{"model":"m","stream":"true","stream_options":null,"messages":[]}`, RequestInfo{Model: "m"}, "stream"},
		{"stream null", `{"model":"m","stream":null,"messages":[]}`, RequestInfo{Model: "m"}, ""},
		{"stream twice", `{"model":"m","stream":true,"stream":false,"messages":[]}`, RequestInfo{Model: "m"}, "stream"},
		{"include_usage not bool", `{"model":"m","stream":true,"stream_options":{"include_usage":1},"messages":[]}`, RequestInfo{Model: "m", Stream: true}, "stream_options.include_usage"},
		{"stream_options not object", `{"model":"m","stream":true,"stream_options":"yes","messages":[]}`, RequestInfo{Model: "m", Stream: true}, "stream_options"},
		{"malformed", `{"model":"m"`, RequestInfo{}, ""},
		{"array", `[{"model":"m"}]`, RequestInfo{}, ""},
		{"missing messages", `{"model":"m"}`, RequestInfo{}, "messages"},
		{"messages not array", `{"model":"m","messages":"hi"}`, RequestInfo{}, "messages"},
		{"missing model", `{"messages":[]}`, RequestInfo{}, "model"},
		{"numeric model", `{"model":4}`, RequestInfo{}, "model"},
		{"empty model", `{"model":""}`, RequestInfo{}, "model"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := PeekRequest([]byte(tt.body))
			if tt.param != "" || tt.want == (RequestInfo{}) {
				var ae *APIError
				if !errors.As(err, &ae) || ae.Status != 400 || ae.Param != tt.param {
					t.Fatalf("err = %#v, want 400 param %q", err, tt.param)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestEnsureIncludeUsage(t *testing.T) {
	tests := []struct {
		name      string
		body      string
		wantAdded bool
	}{
		{"absent", `{"model":"m","stream":true}`, true},
		{"absent, leading space", ` { "model":"m" }`, true},
		{"empty object body", `{}`, true},
		{"empty options", `{"model":"m","stream_options":{}}`, true},
		{"other option", `{"model":"m","stream_options":{ "include_obfuscation":false }}`, true},
		{"false", `{"model":"m","stream_options":{"include_usage":false}}`, true},
		{"null options", `{"model":"m","stream_options":null}`, true},
		{"already true", `{"model":"m","stream_options":{"include_usage": true}}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, added, err := EnsureIncludeUsage([]byte(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			if added != tt.wantAdded {
				t.Errorf("added = %v", added)
			}
			if !added && string(out) != tt.body {
				t.Errorf("unchanged body rewritten: %s", out)
			}
			var v struct {
				StreamOptions map[string]any `json:"stream_options"`
			}
			if err := json.Unmarshal(out, &v); err != nil {
				t.Fatalf("output not json: %s", out)
			}
			if v.StreamOptions["include_usage"] != true {
				t.Errorf("out = %s", out)
			}
			if tt.name == "other option" && v.StreamOptions["include_obfuscation"] != false {
				t.Errorf("other option lost: %s", out)
			}
		})
	}
	if _, _, err := EnsureIncludeUsage([]byte(`[1]`)); err == nil {
		t.Error("array body accepted")
	}
}

func TestOpenAIPassthroughStream(t *testing.T) {
	for _, drop := range []bool{false, true} {
		tr := NewOpenAIPassthroughStream(drop)
		out := runStream(t, openAIUpstream, tr)
		evs := parseSSE(t, out)
		wantN := 10
		if drop {
			wantN = 9
		}
		if len(evs) != wantN || evs[len(evs)-1].data != "[DONE]" {
			t.Fatalf("drop=%v: %d events, last %+v", drop, len(evs), evs[len(evs)-1])
		}
		hasUsageChunk := strings.Contains(out, `"choices":[],"usage":{`)
		if hasUsageChunk == drop {
			t.Errorf("drop=%v but usage chunk forwarded=%v", drop, hasUsageChunk)
		}
		// Everything forwarded is byte-identical to the upstream's data lines.
		for _, ev := range evs {
			if !strings.Contains(openAIUpstream, "data: "+ev.data+"\n\n") {
				t.Errorf("event altered: %s", ev.data)
			}
		}
		if want := (Usage{InputTokens: 20, CacheReadTokens: 100, OutputTokens: 17, Seen: true}); tr.Usage() != want {
			t.Errorf("Usage() = %+v", tr.Usage())
		}
	}
	t.Run("finish adds DONE only when missing", func(t *testing.T) {
		lines := strings.SplitAfter(openAIUpstream, "\n\n")
		out := runStream(t, strings.Join(lines[:3], ""), NewOpenAIPassthroughStream(true))
		if !strings.HasSuffix(out, "data: [DONE]\n\n") || strings.Count(out, "[DONE]") != 1 {
			t.Errorf("out = %q", out)
		}
	})
	t.Run("usage together with a choice is kept", func(t *testing.T) {
		in := `data: {"id":"c","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":4}}` + "\n\n"
		tr := NewOpenAIPassthroughStream(true)
		out := runStream(t, in, tr)
		if len(parseSSE(t, out)) != 2 || tr.Usage().OutputTokens != 4 {
			t.Errorf("out = %q usage %+v", out, tr.Usage())
		}
	})
}

func TestAnthropicPassthroughStream(t *testing.T) {
	tr := NewAnthropicPassthroughStream()
	out := runStream(t, anthropicUpstream, tr)
	if out != anthropicUpstream {
		t.Errorf("stream altered:\n%s", out)
	}
	want := Usage{InputTokens: 25, CacheCreation5m: 10, CacheReadTokens: 100, OutputTokens: 52, Seen: true}
	if tr.Usage() != want {
		t.Errorf("Usage() = %+v, want %+v", tr.Usage(), want)
	}

	in := strings.Replace(anthropicUpstream, `"usage":{"output_tokens":52}`, `"usage":{"output_tokens":70,"input_tokens":26,"cache_creation_input_tokens":12}`, 1)
	tr = NewAnthropicPassthroughStream()
	runStream(t, in, tr)
	want = Usage{InputTokens: 26, CacheCreation5m: 12, CacheReadTokens: 100, OutputTokens: 70, Seen: true}
	if tr.Usage() != want {
		t.Errorf("with repeated input: Usage() = %+v, want %+v", tr.Usage(), want)
	}

	// Cut before message_delta: the message_start figures stand.
	lines := strings.SplitAfter(anthropicUpstream, "\n\n")
	tr = NewAnthropicPassthroughStream()
	runStream(t, strings.Join(lines[:3], ""), tr)
	if u := tr.Usage(); u.InputTokens != 25 || u.OutputTokens != 1 || !u.Seen {
		t.Errorf("cut stream: Usage() = %+v", u)
	}
}

// A Go upstream matches JSON keys case-insensitively, so every spelling of
// "model" must be rewritten or a client could pick a model behind the
// gateway's back.
func TestRewriteModelCaseFolding(t *testing.T) {
	out, err := RewriteModel([]byte(`{"model":"allowed","MODEL":"forbidden","\u004dodel":"x","ſtream":true}`), "up")
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Model string `json:"model"`
	}
	if err := json.Unmarshal(out, &got); err != nil || got.Model != "up" {
		t.Fatalf("a Go decoder reads model %q from %s", got.Model, out)
	}
	// Two spellings of one key are ambiguous (decoders differ on which
	// wins), so the request is refused rather than guessed at.
	_, err = PeekRequest([]byte(`{"model":"a","Model":"b","ſtream":true,"messages":[]}`))
	if e, ok := err.(*APIError); !ok || e.Status != 400 || e.Param != "model" {
		t.Errorf("PeekRequest error = %v, want a 400 naming model", err)
	}
	info, err := PeekRequest([]byte(`{"model":"a","ſtream":true,"messages":[]}`))
	if err != nil || info.Model != "a" || !info.Stream {
		t.Errorf("PeekRequest = %+v, %v (want what encoding/json reads)", info, err)
	}
}

func TestAnthropicPassthroughWithoutEventNames(t *testing.T) {
	var in strings.Builder
	for _, line := range strings.SplitAfter(anthropicUpstream, "\n") {
		if !strings.HasPrefix(line, "event: ") {
			in.WriteString(line)
		}
	}
	tr := NewAnthropicPassthroughStream()
	if out := runStream(t, in.String(), tr); out != in.String() {
		t.Errorf("stream altered:\n%s", out)
	}
	if u := tr.Usage(); u.InputTokens != 25 || u.OutputTokens != 52 || u.CacheReadTokens != 100 {
		t.Errorf("Usage() = %+v", u)
	}
}
