package providers

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
)

// boundSamples are, per client format, a request asking for a huge output
// and one asking for none. A format missing here fails
// TestOutputLimitReachesEveryUpstream: a new client format must say how
// budgets bound its output before it ships.
var boundSamples = map[Format][]string{
	FormatOpenAI: {`{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":1000000}`,
		`{"model":"m","messages":[{"role":"user","content":"hi"}]}`},
	FormatAnthropic: {`{"model":"m","max_tokens":1000000,"messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"m","messages":[{"role":"user","content":"hi"}]}`},
	FormatResponses: {`{"model":"m","input":"hi","max_output_tokens":1000000}`, `{"model":"m","input":"hi"}`},
	FormatGemini: {`{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"generationConfig":{"maxOutputTokens":1000000,"temperature":0.5}}`,
		`{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`,
		// Google reads the proto field names too (hostile2 D3).
		`{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"generation_config":{"max_output_tokens":1000000}}`,
		`{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"generationConfig":{"max_output_tokens":1000000}}`},
	FormatConverse: {`{"messages":[{"role":"user","content":[{"text":"hi"}]}],"inferenceConfig":{"maxTokens":1000000,"temperature":0.5}}`,
		`{"messages":[{"role":"user","content":[{"text":"hi"}]}]}`},
}

// outputless are the client formats whose requests produce no output:
// there is no bound to set, and WithOutputLimit must say so rather than
// let the gateway claim it set one.
var outputless = map[Format]string{
	FormatEmbeddings:  `{"model":"m","input":"hi"}`,
	FormatGeminiEmbed: `{"content":{"parts":[{"text":"hi"}]}}`,
}

// upstreamBoundKeys are the members any upstream format reads an output
// bound from.
var upstreamBoundKeys = map[string]bool{"max_tokens": true, "max_completion_tokens": true, "max_output_tokens": true,
	"maxOutputTokens": true, "num_predict": true, "maxTokens": true}

// boundsIn collects every output bound in a decoded upstream body.
func boundsIn(v any, out []float64) []float64 {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if f, ok := x.(float64); ok && upstreamBoundKeys[k] {
				out = append(out, f)
			}
			out = boundsIn(x, out)
		}
	case []any:
		for _, x := range v {
			out = boundsIn(x, out)
		}
	}
	return out
}

// A lowered or added output bound reaches the upstream on every route of
// every client format (D1: Converse's never did, though the answer's header
// said it was lowered), and a format with no output is refused the bound
// instead of being told it has one.
func TestOutputLimitReachesEveryUpstream(t *testing.T) {
	const n = 7
	upstreams := []Format{FormatOpenAI, FormatAnthropic, FormatOllama, FormatResponses, FormatGemini}
	for _, cf := range ClientFormats() {
		if body, ok := outputless[cf]; ok {
			info, err := cf.Parser()([]byte(body), "m", "")
			if err != nil {
				t.Fatalf("%s: %v", cf, err)
			}
			if _, _, err := info.WithOutputLimit([]byte(body), n, cf.BoundMember()); !errors.Is(err, ErrNoOutputBound) {
				t.Errorf("%s: WithOutputLimit = %v, want ErrNoOutputBound", cf, err)
			}
			continue
		}
		samples, ok := boundSamples[cf]
		if !ok {
			t.Errorf("client format %s has no sample: add one here and a WithOutputLimit case for its bound", cf)
			continue
		}
		for i, body := range samples {
			for _, up := range upstreams {
				for _, cloud := range []bool{false, true} {
					name := fmt.Sprintf("%s sample %d to %s cloud=%v", cf, i, up, cloud)
					info, err := cf.Parser()([]byte(body), "m", "generateContent")
					if err != nil {
						t.Fatalf("%s: parse: %v", name, err)
					}
					lowered, info, err := info.WithOutputLimit([]byte(body), n, cf.BoundMember())
					if err != nil {
						t.Fatalf("%s: WithOutputLimit: %v", name, err)
					}
					if got := info.OutputLimit(); got != n {
						t.Errorf("%s: the request reads bound %d after lowering, want %d", name, got, n)
					}
					r, err := NewRoute(cf, up)
					if err != nil {
						continue // no such route (chat clients reach no Responses upstream)
					}
					out, _, err := r.Request(lowered, info, "up", RouteOptions{DefaultMaxTokens: 4096, Cloud: cloud})
					if err != nil {
						t.Fatalf("%s: translate: %v", name, err)
					}
					var v any
					if err := json.Unmarshal(out, &v); err != nil {
						t.Fatalf("%s: upstream body %s: %v", name, out, err)
					}
					bounds := boundsIn(v, nil)
					if len(bounds) == 0 {
						t.Errorf("%s: the upstream is sent no output bound: %s", name, out)
					}
					for _, b := range bounds {
						if b != n {
							t.Errorf("%s: the upstream is sent bound %v, want %d: %s", name, b, n, out)
						}
					}
				}
			}
		}
	}
}
