package integration

import (
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"testing"
)

// Usage the cache fakes report: a turn that read a long cached prefix,
// wrote some of it for 5 minutes and some for an hour.
const (
	cacheUncached = 100
	cacheWrite5m  = 1000
	cacheWrite1h  = 2000
	cacheRead     = 20000
	cacheOutput   = 50
)

// cacheFakes answers as Anthropic (Messages, with the cache writes split
// by TTL), as an OpenAI-compatible cloud (cached_tokens inside
// prompt_tokens) and as Gemini (cachedContentTokenCount inside
// promptTokenCount).
func cacheFakes(t *testing.T) (anthropic, openaiCompat, gemini *httptest.Server) {
	t.Helper()
	answer := func(body string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, body)
		}
	}
	anthropic = httptest.NewServer(answer(fmt.Sprintf(`{"id":"msg_c","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929",`+
		`"content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","stop_sequence":null,`+
		`"usage":{"input_tokens":%d,"cache_creation_input_tokens":%d,"cache_read_input_tokens":%d,`+
		`"cache_creation":{"ephemeral_5m_input_tokens":%d,"ephemeral_1h_input_tokens":%d},"output_tokens":%d}}`,
		cacheUncached, cacheWrite5m+cacheWrite1h, cacheRead, cacheWrite5m, cacheWrite1h, cacheOutput)))
	openaiCompat = httptest.NewServer(answer(fmt.Sprintf(`{"id":"c1","object":"chat.completion","created":1,"model":"grok-4",`+
		`"choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],`+
		`"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d,"prompt_tokens_details":{"cached_tokens":%d}}}`,
		cacheUncached+cacheRead, cacheOutput, cacheUncached+cacheRead+cacheOutput, cacheRead)))
	gemini = httptest.NewServer(answer(fmt.Sprintf(`{"candidates":[{"content":{"role":"model","parts":[{"text":"ok"}]},"finishReason":"STOP","index":0}],`+
		`"usageMetadata":{"promptTokenCount":%d,"cachedContentTokenCount":%d,"candidatesTokenCount":%d,"totalTokenCount":%d},"modelVersion":"gemini-2.5-flash"}`,
		cacheUncached+cacheRead, cacheRead, cacheOutput, cacheUncached+cacheRead+cacheOutput)))
	for _, s := range []*httptest.Server{anthropic, openaiCompat, gemini} {
		t.Cleanup(s.Close)
	}
	return
}

// pico is dollars per million tokens times tokens, in picodollars.
func pico(perMillion float64, tokens int64) float64 { return perMillion * float64(tokens) }

// TestCachePricing: cache writes (5 m and 1 h) and reads reported by each
// provider are recorded and priced with the multipliers the providers
// publish, written out here independently of the gateway's table:
// Anthropic's pricing page (writes 1.25x for 5 minutes, 2x for an hour,
// reads 0.1x of the $3/M input of Claude Sonnet 4.5, output $15/M); xAI's
// (grok-4 $3/M input, cached input $0.75/M, output $15/M); Google's Gemini
// API pricing (gemini-2.5-flash $0.30/M input, cached $0.03/M, output
// $2.50/M).
func TestCachePricing(t *testing.T) {
	anth, compat, gem := cacheFakes(t)
	models := fmt.Sprintf(`model_list:
  - model_name: sonnet
    proxy_params:
      model: anthropic/claude-sonnet-4-5
      api_base: %s
      api_key: k
  - model_name: grok
    proxy_params:
      model: xai/grok-4
      api_base: %s/v1
      api_key: k
  - model_name: flash
    proxy_params:
      model: gemini/gemini-2.5-flash
      api_base: %s
      api_key: k
`, anth.URL, compat.URL, gem.URL)
	g := startGateway(t, gatewayConfig{models: models})
	send := func(path, body string, headers ...string) {
		t.Helper()
		if st, _, b := g.do(t, "POST", path, aliceKey, body, headers...); st != 200 {
			t.Fatalf("%s: %d %s", path, st, b)
		}
	}
	send("/v1/messages", `{"model":"sonnet","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}`, "anthropic-version", "2023-06-01", "X-Session-Id", "price-s")
	send("/v1/chat/completions", `{"model":"grok","messages":[{"role":"user","content":"hi"}]}`, "X-Session-Id", "price-s")
	send("/v1/chat/completions", `{"model":"flash","messages":[{"role":"user","content":"hi"}]}`, "X-Session-Id", "price-s")

	const sonnetIn, sonnetOut = 3.0, 15.0
	want := map[string]struct {
		in, w5, w1, read int64
		cost             float64
	}{
		"sonnet": {cacheUncached, cacheWrite5m, cacheWrite1h, cacheRead,
			pico(sonnetIn, cacheUncached) + pico(1.25*sonnetIn, cacheWrite5m) + pico(2*sonnetIn, cacheWrite1h) +
				pico(0.1*sonnetIn, cacheRead) + pico(sonnetOut, cacheOutput)},
		// OpenAI-style usage has no cache writes: only reads are priced apart.
		"grok":  {cacheUncached, 0, 0, cacheRead, pico(3, cacheUncached) + pico(0.75, cacheRead) + pico(15, cacheOutput)},
		"flash": {cacheUncached, 0, 0, cacheRead, pico(0.30, cacheUncached) + pico(0.03, cacheRead) + pico(2.50, cacheOutput)},
	}
	recs := g.ledgerRecords(t)
	seen := 0
	for _, r := range recs {
		w, ok := want[r.Alias]
		if !ok {
			continue
		}
		seen++
		if r.InputTokens != w.in || r.CacheCreation5m != w.w5 || r.CacheCreation1h != w.w1 || r.CacheReadTokens != w.read || r.OutputTokens != cacheOutput {
			t.Errorf("%s: tokens in %d, 5m %d, 1h %d, read %d, out %d; want %d, %d, %d, %d, %d", r.Alias,
				r.InputTokens, r.CacheCreation5m, r.CacheCreation1h, r.CacheReadTokens, r.OutputTokens, w.in, w.w5, w.w1, w.read, cacheOutput)
		}
		if wantPico := int64(math.Round(w.cost * 1e6)); r.CostPicoUSD != wantPico {
			t.Errorf("%s: cost %d pUSD, want %d (the provider's published multipliers)", r.Alias, r.CostPicoUSD, wantPico)
		}
		t.Logf("%s: $%.6f for %d uncached, %d+%d written, %d read, %d out", r.Alias, float64(r.CostPicoUSD)/1e12, r.InputTokens,
			r.CacheCreation5m, r.CacheCreation1h, r.CacheReadTokens, r.OutputTokens)
	}
	if seen != 3 {
		t.Fatalf("%d priced records, want 3: %+v", seen, recs)
	}
}
