package providers

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// FuzzWithOutputLimit: lowering a request's output bound changes only the
// bound, to n, in the member its format reads (every copy of it, under
// any spelling encoding/json matches), and
// leaves valid JSON whose other members are unchanged; the parsed request
// reads the new bound.
func FuzzWithOutputLimit(f *testing.F) {
	f.Add([]byte(`{"model":"a","max_tokens":1000000,"n":128,"messages":[]}`), int64(3905), uint8(0))
	f.Add([]byte(`{"model":"a","messages":[],"max_completion_tokens":5,"max_tokens":7}`), int64(2), uint8(0))
	f.Add([]byte(` { "model":"a" , "messages":[ ] } `), int64(20), uint8(0))
	f.Add([]byte(`{"contents":[{"parts":[{"text":"x"}]}],"generationConfig":{"maxOutputTokens":100000,"candidateCount":4}}`), int64(9), uint8(1))
	f.Add([]byte(`{"contents":[{"parts":[{"text":"x"}]}],"generationConfig":null}`), int64(9), uint8(1))
	f.Add([]byte(`{"contents":[{"parts":[{"text":"x"}]}]}`), int64(9), uint8(1))
	f.Add([]byte(`{"model":"a","input":"hi","max_output_tokens":1000000}`), int64(9), uint8(2))
	f.Add([]byte(`{"model":"a","max_tokens":32000,"thinking":{"type":"enabled","budget_tokens":31999},"messages":[]}`), int64(5000), uint8(0))
	f.Add([]byte(`{"model":"a","max_tokens":32000,"thinking":{"type":"enabled","budget_tokens":31999},"messages":[]}`), int64(900), uint8(0))
	f.Add([]byte(`{"model":"a","input":[{"role":"user","content":"hi"}]}`), int64(9), uint8(2))
	f.Add([]byte(`{"messages":[{"role":"user","content":[{"text":"hi"}]}],"inferenceConfig":{"maxTokens":1000000}}`), int64(9), uint8(3))
	f.Add([]byte(`{"messages":[{"role":"user","content":[{"text":"hi"}]}]}`), int64(9), uint8(3))
	f.Add([]byte(`{"messages":[{"role":"user","content":[{"text":"hi"}]}],"inferenceConfig":null}`), int64(9), uint8(3))
	f.Add([]byte(`{"contents":[{"parts":[{"text":"x"}]}],"generation_config":{"max_output_tokens":65536,"candidate_count":8}}`), int64(9), uint8(1))
	f.Add([]byte(`{"contents":[{"parts":[{"text":"x"}]}],"generationConfig":null,"generation_config":{"max_output_tokens":65536}}`), int64(9), uint8(1))
	f.Add([]byte(`{"contents":[{"parts":[{"text":"x"}]}],"generation_config":{"temperature":1}}`), int64(9), uint8(1))
	f.Add([]byte(`{"contents":[{"parts":[{"text":"x"}]}],"generationConfig":{"max_output_tokens":65536}}`), int64(9), uint8(1))
	f.Fuzz(func(t *testing.T, body []byte, n int64, format uint8) {
		n = max(n, 1)
		var info RequestInfo
		var err error
		gemini, responses, converse := format%4 == 1, format%4 == 2, format%4 == 3
		switch {
		case converse:
			info, err = ParseConverseRequest(body, "m", false)
		case gemini:
			info, err = ParseGeminiRequest(body, "m", false)
		case responses:
			var turn *ResponsesTurn
			if turn, err = ParseResponsesRequest(body); err == nil {
				info = turn.Info()
			}
		default:
			info, err = PeekRequest(body)
		}
		if err != nil {
			return
		}
		out, lowered, err := info.WithOutputLimit(body, n, "max_completion_tokens")
		if err != nil {
			return
		}
		var before, after map[string]json.RawMessage
		if json.Unmarshal(body, &before) != nil {
			return
		}
		if err := json.Unmarshal(out, &after); err != nil {
			t.Fatalf("invalid JSON %q: %v", out, err)
		}
		if lowered.OutputLimit() != n {
			t.Fatalf("parsed bound %d, want %d", lowered.OutputLimit(), n)
		}
		bounds := []string{"max_tokens", "max_completion_tokens"}
		if gemini {
			bounds = geminiConfigNames
		}
		if converse {
			bounds = []string{"inferenceConfig"}
		}
		if responses {
			bounds = []string{"max_output_tokens"}
		}
		// A Messages thinking budget may change only to fit under n.
		if bt, at := before["thinking"], after["thinking"]; !gemini && !responses && !bytes.Equal(bt, at) {
			var th struct {
				Type   string `json:"type"`
				Budget int64  `json:"budget_tokens"`
			}
			if json.Unmarshal(at, &th) != nil || !(th.Type == "disabled" || th.Budget == n-1 && n-1 >= minThinkingBudget) {
				t.Fatalf("thinking %s became %s for a bound of %d", bt, at, n)
			}
			delete(before, "thinking")
			delete(after, "thinking")
		}
		// encoding/json matches member names case-insensitively, so the
		// parser (and the splice) may read the bound from "generAtionConfig".
		for _, m := range []map[string]json.RawMessage{before, after} {
			for k := range m {
				if slices.ContainsFunc(bounds, func(b string) bool { return strings.EqualFold(k, b) }) {
					delete(m, k)
				}
			}
		}
		if !reflect.DeepEqual(before, after) {
			t.Fatalf("other members changed:\n%s\n%s", body, out)
		}
		var reparsed RequestInfo
		switch {
		case converse:
			reparsed, err = ParseConverseRequest(out, "m", false)
		case gemini:
			reparsed, err = ParseGeminiRequest(out, "m", false)
		default:
			return
		}
		if gemini && err != nil && strings.Contains(err.Error(), "given twice") {
			// The client named the config or the bound under both
			// spellings, one of them null (nothing to encoding/json): the
			// splice gave each the bound, whichever Google reads.
			var top map[string]json.RawMessage
			_ = json.Unmarshal(out, &top)
			for _, k := range geminiConfigNames {
				for name, v := range top {
					if strings.EqualFold(name, k) {
						var g map[string]json.RawMessage
						if json.Unmarshal(v, &g) != nil {
							t.Fatalf("%s is not an object after the splice: %s", name, out)
						}
						for m, b := range g {
							if slices.ContainsFunc(geminiBoundNames, func(s string) bool { return strings.EqualFold(s, m) }) && string(b) != strconv.FormatInt(n, 10) {
								t.Fatalf("%s.%s is %s after the splice, want %d: %s", name, m, b, n, out)
							}
						}
					}
				}
			}
			return
		}
		if err != nil || reparsed.OutputLimit() != n {
			t.Fatalf("reparsed %q: bound %d, %v", out, reparsed.OutputLimit(), err)
		}
	})
}
