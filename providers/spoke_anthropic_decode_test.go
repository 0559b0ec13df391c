package providers

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// messagesEveryField sets every member the fast path reads, each block
// type among them.
const messagesEveryField = `{"model":"m","max_tokens":64,"system":[{"type":"text","text":"be brief","cache_control":{"type":"ephemeral"}},{"type":"text","text":"and kind"}],
"messages":[{"role":"user","content":"plain \u00e9 \"q\""},
{"role":"assistant","content":[{"type":"thinking","thinking":"hm","signature":"sig"},{"type":"redacted_thinking","data":"xx"},{"type":"text","text":"calling"},{"type":"tool_use","id":"toolu_1","name":"f","input":{"a": [1, 2]}}]},
{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"ok"},{"type":"tool_reference","tool_name":"g"}],"is_error":true},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AA=="}},{"type":"image","source":{"type":"url","url":"https://x/y.png"}}]},
{"role":"system","content":null},{"role":"user"}],
"stop_sequences":["END",null],"stream":true,"temperature":0.5,"top_p":1,"top_k":5,
"tools":[{"name":"f","description":"d","input_schema":{"type":"object"},"cache_control":null},{"type":"web_search_20250305","name":"web_search"}],
"tool_choice":{"type":"tool","name":"f","disable_parallel_tool_use":true},"thinking":{"type":"enabled","budget_tokens":1024},
"metadata":{"user_id":"u"},"service_tier":"auto"}`

// messagesSeeds are the fuzzers' seeds: the shapes clients send, the
// existing corpus of FuzzAnthropicToOpenAIRequest, and the edges where the
// fast path must give up.
func messagesSeeds(tb testing.TB) [][]byte {
	seeds := [][]byte{
		readFixture(tb, "claude_code_request.json"),
		[]byte(claudeCodeToolSearchTurn),
		[]byte(messagesEveryField),
		[]byte(`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`),
		[]byte(`{"model":"oa","system":"You are terse.","messages":[{"role":"user","content":[{"type":"text","text":"How?"}]},{"role":"assistant","content":[{"type":"text","text":"So."}]}],"max_tokens":512,"temperature":0.2,"stream":false}`),
		[]byte(`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":5}]}`),
		[]byte(`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[null]}]}`),
		[]byte(`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"a","Content":"b"}]}`),
		[]byte(`{"model":"m","max_tokens":5.5,"messages":[]}`),
		[]byte(`{"model":"m","max_tokens":-1,"messages":null,"system":{"type":"text"}}`),
		[]byte(`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":1}]}]}`),
		[]byte(`{"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"a\ud800b"}]}],"tool_choice":null,"metadata":null}`),
		[]byte(`{"messages":[{"role":"bot","content":"x"}],"system":"s","system":"t"}`),
		[]byte(`[1]`),
		[]byte(`null`),
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzAnthropicToOpenAIRequest")
	entries, err := os.ReadDir(dir)
	if err != nil {
		tb.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			tb.Fatal(err)
		}
		_, lit, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
		s, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(lit, "[]byte("), ")"))
		if err != nil {
			tb.Fatalf("%s: %v", e.Name(), err)
		}
		seeds = append(seeds, []byte(s))
	}
	return seeds
}

// FuzzMessagesRequestFastPath: what the fast reader reads, encoding/json
// reads the same, request and every content's blocks.
func FuzzMessagesRequestFastPath(f *testing.F) {
	for _, s := range messagesSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var fast messagesRead
		if !readMessagesRequest(body, &fast) {
			return
		}
		var slow AnthropicRequest
		if err := json.Unmarshal(body, &slow); err != nil {
			t.Fatalf("fast path read a body encoding/json refuses (%v): %s", err, body)
		}
		if !reflect.DeepEqual(fast.in, slow) {
			t.Fatalf("fast %#v\nslow %#v", fast.in, slow)
		}
		sameBlocks := func(what string, got []AnthropicBlock, raw json.RawMessage) {
			want, err := anthropicBlocks(nil, raw, 0)
			if err != nil {
				t.Fatalf("%s: fast path read content encoding/json refuses (%v): %s", what, err, raw)
			}
			if len(got) != len(want) || (len(got) > 0 && !reflect.DeepEqual(got, want)) {
				t.Fatalf("%s: fast %#v\nslow %#v", what, got, want)
			}
		}
		sameBlocks("system", fast.system, slow.System)
		for i := range slow.Messages {
			got, _ := fast.content(nil, i)
			sameBlocks("messages["+strconv.Itoa(i)+"]", got, slow.Messages[i].Content)
		}
	})
}

// FuzzMessagesToChatOldNew holds AnthropicToOpenAIRequest to the
// translation it replaced (encoding/json for the body, then for each
// content as the translation reaches it): the same chat request, or the
// same error.
func FuzzMessagesToChatOldNew(f *testing.F) {
	for _, s := range messagesSeeds(f) {
		f.Add(s, false)
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, body []byte, cloud bool) {
		got, gotErr := AnthropicToOpenAIRequest(body, "up", cloud)
		var old messagesRead
		var want []byte
		var wantErr error
		if err := json.Unmarshal(body, &old.in); err != nil {
			wantErr = BadRequest("messages", "invalid request body: "+jsonErrText(err))
		} else {
			want, wantErr = messagesToChat(&old, len(body), "up", cloud)
		}
		if (gotErr == nil) != (wantErr == nil) || gotErr != nil && gotErr.Error() != wantErr.Error() {
			t.Fatalf("error %v, before %v: %s", gotErr, wantErr, body)
		}
		var ga, wa *APIError
		if errors.As(gotErr, &ga) != errors.As(wantErr, &wa) || !reflect.DeepEqual(ga, wa) {
			t.Fatalf("error %#v, before %#v", ga, wa)
		}
		if string(got) != string(want) {
			t.Fatalf("chat request\n%s\nbefore\n%s", got, want)
		}
	})
}

// TestMessagesFastPathTakesRealRequests: the shapes clients send are read
// by the fast path, not left to encoding/json.
func TestMessagesFastPathTakesRealRequests(t *testing.T) {
	for name, body := range map[string][]byte{
		"claude code":      readFixture(t, "claude_code_request.json"),
		"tool search turn": []byte(claudeCodeToolSearchTurn),
		"every field":      []byte(messagesEveryField),
	} {
		var q messagesRead
		if !readMessagesRequest(body, &q) {
			t.Errorf("%s: the fast path gave up", name)
		}
	}
}
