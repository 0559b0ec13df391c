package providers

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The differential tests hold the hand-written readers and encoders to
// encoding/json: every encoder's bytes must equal json.Marshal of the same
// struct, and the request reader must fill a request exactly as
// json.Unmarshal does, errors included, so they stay invisible to clients
// and upstreams.

// trickyRequests are bodies where a hand-written reader or encoder could
// part ways with encoding/json.
var trickyRequests = []string{
	`{"model":"m","messages":[{"role":"assistant","tool_calls":[{"id":"c","function":{"name":"f","arguments":"{}"},"extra_content":{ "google" : {"thought_signature":"S"} }},{"id":"d","function":{"arguments":""},"extra_content":null},{"Extra_Content":{},"function":{"arguments":""}}]}]}`,
	`{"model":"m","messages":[{"role":"user","content":"<b>&amp;</b> \u2028\u2029 \b\f\u0001 é \ud800 tab\t"}]}`,
	"{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"bad \xff\xfe utf8 \xe2\x80\xa8\"}]}",
	`{"model":"m","messages":[{"role":"user","content":"a"}],"model":"n"}`,
	`{"Model":"m","MESSAGES":[{"ROLE":"user","Content":"hi"}]}`,
	`{"model":"m","messages":[{"role":"user","content":"hi","ſtream":1}],"ſtream":true}`,
	`{"model":"m","mod\u0065l":"x","messages":[{"role":"user","content":"hi"}]}`,
	`{"model":null,"messages":[null,{"role":"user","content":"hi"}]}`,
	`{"model":"m","messages":[{"role":"user","content":null},{"role":"user","content":[]}]}`,
	`{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":1.0}`,
	`{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":"5"}`,
	`{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":99999999999999999999}`,
	`{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":-0,"max_completion_tokens":7}`,
	`{"model":"m","messages":[{"role":"user","content":"hi"}],"temperature":1e-7,"top_p":0.000001,"seed":3,"frequency_penalty":1e21,"presence_penalty":-2.5e-10}`,
	`{"model":"m","messages":[{"role":"user","content":"hi"}],"temperature":0.30000000000000004,"top_p":1E2}`,
	`{"model":"m","messages":[{"role":"user","content":"hi"}],"temperature":1e400}`,
	`{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":null,"user":null,"n":null,"temperature":null}`,
	`{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":"yes"}`,
	`{"model":"m","messages":{"role":"user"}}`,
	`null`,
	`[]`,
	`{"model":"m","messages":[{"role":"user","content":"hi"}]} trailing`,
	` {"model" : "m" , "messages" : [ { "role" : "user" , "content" : [ { "type" : "text" , "text" : "a<b" } , {"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA","detail":"low"}} ] } ] } `,
	`{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://example.com/a.png?x=1&y=<2>"}}]}]}`,
	`{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":null}]}]}`,
	`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"a","TEXT":"b"}]}]}`,
	`{"model":"m","messages":[{"role":"user","content":[null]}]}`,
	`{"model":"m","messages":[{"role":"assistant","content":null,"reasoning":"think","tool_calls":[{"index":0,"id":"c.1","type":"function","function":{"name":"f","arguments":" { \"a\" : \"<x>\" , \"b\":[1, 2] } "}}]},{"role":"tool","tool_call_id":"c.1","content":"r<&>"},{"role":"function","name":"f","content":"old"}]}`,
	`{"model":"m","messages":[{"role":"assistant","tool_calls":[{"id":"c","function":{"name":"f","arguments":"[1]"}}]}]}`,
	`{"model":"m","messages":[{"role":"assistant","tool_calls":[{"id":"c","function":null}]}]}`,
	`{"model":"m","messages":[{"role":"assistant","tool_calls":[{"index":1.5,"id":"c","function":{"arguments":""}}]}]}`,
	`{"model":"m","messages":[{"role":"tool","tool_call_id":"c","content":[{"type":"text","text":"x"},{"type":"image_url","image_url":{"url":"data:image/jpeg;base64,/9j/"}}]}]}`,
	`{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f","description":"d<>","parameters":{ "type" : "object", "properties" : { "q" : { "type":"string", "description":"a&b \u2028" } } },"strict":true}},{"function":{"name":"g","parameters":null,"strict":false}}],"tool_choice":{"type":"function","function":{"name":"g"}},"parallel_tool_calls":false}`,
	`{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":"none","parallel_tool_calls":false}`,
	`{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":"required","stop":["a","  ",""],"user":"u<1>"}`,
	`{"model":"m","messages":[{"role":"user","content":"hi"}],"stop":"END","response_format":{"type":"json_schema","json_schema":{"schema":{ "type":"object" }}},"reasoning_effort":"minimal"}`,
	`{"model":"m","messages":[{"role":"user","content":"hi"}],"response_format":{"type":"json_object"},"reasoning_effort":"none","stream":true,"stream_options":{"include_usage":true,"Include_Usage":false}}`,
	`{"model":"m","messages":[{"role":"system","content":[{"type":"text","text":"s1"},{"type":"text","text":"s2"}]},{"role":"developer","content":"d"},{"role":"user","content":"hi"},{"role":"user","content":"again"}],"unknown":{"nested":[1,{"x":null}]}}`,
}

// fuzzSeeds reads the bodies of a fuzz target's stored corpus.
func fuzzSeeds(t testing.TB, target string) [][]byte {
	files, err := filepath.Glob(filepath.Join("testdata", "fuzz", target, "*"))
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		if len(lines) < 2 {
			continue
		}
		lit, ok := strings.CutPrefix(lines[1], "[]byte(")
		if !ok {
			continue
		}
		s, err := strconv.Unquote(strings.TrimSuffix(lit, ")"))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out = append(out, []byte(s))
	}
	if len(out) == 0 {
		t.Fatalf("no seeds for %s", target)
	}
	return out
}

func requestSeeds(f *testing.F) {
	f.Add(readFixture(f, "openai_request.json"))
	f.Add(benchRequest)
	for _, s := range trickyRequests {
		f.Add([]byte(s))
	}
	for _, target := range []string{"FuzzOpenAIToAnthropicRequest", "FuzzOpenAIToOllamaRequest"} {
		for _, b := range fuzzSeeds(f, target) {
			f.Add(b)
		}
	}
}

// sameAsMarshal fails unless the hand-written encoding of v is exactly
// what json.Marshal makes of it: the encoders replace json.Marshal on the
// hot path and must not change a byte.
func sameAsMarshal(t *testing.T, name string, got []byte, v any) {
	t.Helper()
	want, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("%s: json.Marshal: %v", name, err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s:\n got  %s\n want %s", name, got, want)
	}
}

func FuzzOpenAIRequestDifferential(f *testing.F) {
	requestSeeds(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		if out, err := buildAnthropicRequest(body, "up<1>", 100); err == nil {
			sameAsMarshal(t, "anthropic", appendAnthropicRequest(nil, &out), &out)
		}
		if out, err := buildOllamaRequest(body, "llama&3"); err == nil {
			sameAsMarshal(t, "ollama", appendOllamaRequest(nil, &out), &out)
		}

		// The reader must fill the request exactly as json.Unmarshal does.
		var fast, slow OpenAIRequest
		ferr := unmarshalOpenAIRequest(body, &fast)
		serr := json.Unmarshal(body, &slow)
		if (ferr == nil) != (serr == nil) {
			t.Fatalf("reader error %v, json.Unmarshal %v", ferr, serr)
		}
		if serr == nil {
			fb, _ := json.Marshal(&fast)
			sb, _ := json.Marshal(&slow)
			if !bytes.Equal(fb, sb) {
				t.Fatalf("reader:\n got  %s\n want %s", fb, sb)
			}
		}
	})
}

func FuzzResponseDifferential(f *testing.F) {
	for _, s := range []string{
		string(benchAnthropicResponse), string(benchOllamaResponse), anthropicToolResponse,
		`{"type":"message","content":[],"usage":{}}`,
		`{"id":"msg_1","type":"message","content":[{"type":"tool_use","id":"t","name":"f","input":null},{"type":"tool_use","id":"u","name":"g","input":{ "a" : "<&>" }},{"type":"text","text":"\u2028"}],"stop_reason":"max_tokens","usage":{"input_tokens":0,"output_tokens":0}}`,
		`{"id":"msg_1","type":"error"}`,
		`{"model":"m","created_at":"bad","message":{"role":"assistant","content":"a<b>"},"done":false}`,
		`{"model":"m","message":{"content":"","tool_calls":[{"id":"x","function":{"name":"f","arguments":null}},{"function":{"name":"g","arguments":{ "k" : [ 1 , "<" ] }}}]},"done_reason":"length","done":true}`,
		`{"error":"model not found"}`,
		`{"model":"m","message":{"tool_calls":[{"function":{"arguments":"x"}}]}}`,
	} {
		f.Add([]byte(s))
	}
	if b, err := os.ReadFile("testdata/ollama/chat_tools.json"); err == nil {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if out, _, err := buildOpenAIResponseFromAnthropic(body); err == nil {
			sameAsMarshal(t, "anthropic", appendOpenAIResponse(nil, &out), &out)
		}
		if out, _, err := buildOpenAIResponseFromOllama(body); err == nil {
			sameAsMarshal(t, "ollama", appendOpenAIResponse(nil, &out), &out)
		}
	})
}
