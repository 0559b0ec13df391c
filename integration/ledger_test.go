package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/openai/openai-go/v3"

	"github.com/modelgate/modelgate/internal/fakes"
)

// pricedModels is the harness's model list with prices on two aliases, so
// the cost report has exact expected amounts.
func (u *upstreams) pricedModels() string {
	y := u.modelsYAML()
	y = strings.Replace(y, "      api_key: upstream-openai-secret\n", `      api_key: upstream-openai-secret
    model_info:
      input_cost_per_token: 0.000001
      output_cost_per_token: 2e-6
`, 1)
	y = strings.Replace(y, "      api_key: upstream-anthropic-secret\n", `      api_key: upstream-anthropic-secret
    model_info:
      input_cost_per_token: 0.000003
      output_cost_per_token: 0.000015
      cache_read_input_token_cost: 3e-7
      cache_creation_input_token_cost: 0.00000375
`, 1)
	return y
}

// TestLedgerReportsFromRecordedTraffic sends known traffic through the
// binary (three backend kinds, streamed and not, two keys, both client
// formats), restarts the gateway on the same ledger file, and checks the
// usage and cost reports to the token and to the fraction of a cent.
func TestLedgerReportsFromRecordedTraffic(t *testing.T) {
	u := startUpstreams(t, fakes.Options{})
	dir := t.TempDir()
	cfg := gatewayConfig{models: u.pricedModels(), dir: dir, siteExtra: "handle /metrics {\n\t\tmetrics\n\t}"}
	g := startGateway(t, cfg)
	ctx := context.Background()
	day := time.Now().UTC().Truncate(24 * time.Hour)

	alice, bob := openaiClient(g, aliceKey), openaiClient(g, bobKey)
	chat := func(c openai.Client, alias string, stream bool) {
		t.Helper()
		p := openai.ChatCompletionNewParams{Model: alias, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("count me")}}
		if !stream {
			if _, err := c.Chat.Completions.New(ctx, p); err != nil {
				t.Fatalf("%s: %v", alias, err)
			}
			return
		}
		s := c.Chat.Completions.NewStreaming(ctx, p)
		for s.Next() {
		}
		if err := s.Err(); err != nil {
			t.Fatalf("%s stream: %v", alias, err)
		}
	}
	// alice: oa and claude, each once plain and once streamed (without
	// include_usage: the gateway must ask upstream for usage itself).
	for _, stream := range []bool{false, true} {
		chat(alice, "oa", stream)
		chat(alice, "claude", stream)
		chat(bob, "llama", stream)
	}
	// alice also calls claude through the Messages endpoint once.
	ac := anthropicClient(g, aliceKey, false)
	if _, err := ac.Messages.New(ctx, anthropic.MessageNewParams{Model: "claude", MaxTokens: 20,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("count me"))}}); err != nil {
		t.Fatal(err)
	}
	// Token counting is free: no record, no cost.
	st, _, body := g.do(t, "POST", "/v1/messages/count_tokens?beta=true", aliceKey, `{"model":"claude","messages":[{"role":"user","content":"how many tokens is this?"}]}`)
	if st != 200 || !strings.Contains(string(body), `"input_tokens":`) {
		t.Errorf("count_tokens via anthropic: %d %s", st, body)
	}
	// ?beta=true goes to api.anthropic.com only; the fake is another server.
	if last := u.anthropicRec.Last(); last.Path != "/v1/messages/count_tokens" || last.Query != "" {
		t.Errorf("count_tokens forwarded to %s?%s, want no query", last.Path, last.Query)
	}
	for _, alias := range []string{"oa", "llama", "echo"} {
		st, _, body := g.do(t, "POST", "/v1/messages/count_tokens", aliceKey, `{"model":"`+alias+`","messages":[{"role":"user","content":"how many tokens is this?"}]}`)
		var n struct {
			InputTokens int `json:"input_tokens"`
		}
		if err := json.Unmarshal(body, &n); st != 200 || err != nil || n.InputTokens < 5 || n.InputTokens > 50 {
			t.Errorf("count_tokens %s: %d %s", alias, st, body)
		}
	}

	// /metrics sits behind llm_auth in the site, so scrapers use a key.
	// A handler counts a request just after the client has its answer, so
	// the last one may need a moment.
	wantMetrics := []string{
		`modelgate_requests_total{alias="oa",endpoint="chat_completions",provider="openai",status="2xx"} 2`,
		`modelgate_tokens_total{alias="llama",type="output"} 8`,
		`modelgate_time_to_first_token_seconds_count{alias="claude"} 3`,
		`modelgate_ledger_queue_depth`,
	}
	var metrics []byte
	for i := 0; i < 100; i++ {
		st, _, metrics = g.do(t, "GET", "/metrics", adminKey, "")
		missing := 0
		for _, want := range wantMetrics {
			if !strings.Contains(string(metrics), want) {
				missing++
			}
		}
		if st == 200 && missing == 0 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, want := range wantMetrics {
		if !strings.Contains(string(metrics), want) {
			t.Errorf("metrics lack %q (status %d)", want, st)
		}
	}

	// Shutdown flushes the queue; a new process on the same file sees it.
	g.stop(t)
	g = startGateway(t, cfg)

	q := url.Values{"starting_at": {day.Format(time.RFC3339)}, "ending_at": {day.Add(24 * time.Hour).Format(time.RFC3339)},
		"group_by[]": {"model", "api_key_id"}}
	st, _, body = g.do(t, "GET", "/v1/organizations/usage_report/messages?"+q.Encode(), adminKey, "")
	if st != 200 {
		t.Fatalf("usage report: %d %s", st, body)
	}
	var usage struct {
		Data []struct {
			StartingAt string `json:"starting_at"`
			Results    []struct {
				Uncached      int64 `json:"uncached_input_tokens"`
				CacheCreation struct {
					E5m int64 `json:"ephemeral_5m_input_tokens"`
				} `json:"cache_creation"`
				CacheRead int64   `json:"cache_read_input_tokens"`
				Output    int64   `json:"output_tokens"`
				Model     *string `json:"model"`
				APIKeyID  *string `json:"api_key_id"`
			} `json:"results"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &usage); err != nil || len(usage.Data) != 1 {
		t.Fatalf("usage report: %v %s", err, body)
	}
	got := map[string][4]int64{}
	for _, r := range usage.Data[0].Results {
		got[*r.Model+"/"+*r.APIKeyID] = [4]int64{r.Uncached, r.CacheCreation.E5m, r.CacheRead, r.Output}
	}
	oaIn := int64(fakes.OpenAIPromptTokens - fakes.OpenAICachedTokens)
	want := map[string][4]int64{
		"oa/alice":     {2 * oaIn, 0, 2 * fakes.OpenAICachedTokens, 2 * fakes.OpenAICompletionTokens},
		"claude/alice": {3 * fakes.AnthropicInputTokens, 3 * fakes.AnthropicCacheCreation, 3 * fakes.AnthropicCacheRead, 3 * fakes.AnthropicOutputTokens},
		"llama/bob":    {2 * fakes.OllamaPromptEvalCount, 0, 0, 2 * fakes.OllamaEvalCount},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("usage by model and key:\n got %v\nwant %v\nbody %s", got, want, body)
	}

	// Cost: oa 8×1e-6 + 7×2e-6 = 22 µ$ per request; claude 13×3e-6 +
	// 9×15e-6 + 5×0.3e-6 + 2×3.75e-6 = 183 µ$; llama is local and free.
	// Total 2×22 + 3×183 = 593 µ$ = 0.0593 cents.
	cq := url.Values{"starting_at": {day.Format(time.RFC3339)}, "ending_at": {day.Add(24 * time.Hour).Format(time.RFC3339)}}
	st, _, body = g.do(t, "GET", "/v1/organizations/cost_report?"+cq.Encode(), adminKey, "")
	var cost struct {
		Data []struct {
			Results []struct {
				Amount   string `json:"amount"`
				Currency string `json:"currency"`
			} `json:"results"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &cost); st != 200 || err != nil || len(cost.Data) != 1 || len(cost.Data[0].Results) != 1 {
		t.Fatalf("cost report: %d %v %s", st, err, body)
	}
	amount, ok := new(big.Rat).SetString(cost.Data[0].Results[0].Amount)
	if !ok || amount.Cmp(big.NewRat(593, 10000)) != 0 || cost.Data[0].Results[0].Currency != "USD" {
		t.Errorf("cost amount = %q %s, want 0.0593 cents USD", cost.Data[0].Results[0].Amount, cost.Data[0].Results[0].Currency)
	}

	// A regular key reads the reports of its own rows: part of the whole.
	st, _, body = g.do(t, "GET", "/v1/organizations/cost_report?"+cq.Encode(), aliceKey, "")
	var own struct {
		Data []struct {
			Results []struct {
				Amount string `json:"amount"`
			} `json:"results"`
		} `json:"data"`
	}
	if st != 200 || json.Unmarshal(body, &own) != nil || len(own.Data) == 0 || len(own.Data[0].Results) == 0 {
		t.Errorf("regular key on reports: %d %s", st, body)
	} else if part, ok := new(big.Rat).SetString(own.Data[0].Results[0].Amount); !ok || part.Sign() <= 0 || part.Cmp(amount) > 0 {
		t.Errorf("alice's own cost %s, want more than 0 and at most everyone's %s", own.Data[0].Results[0].Amount, amount.FloatString(4))
	}
	st, _, _ = g.do(t, "GET", "/v1/organizations/cost_report?"+cq.Encode(), "", "")
	if st != 401 {
		t.Errorf("no key on reports: %d", st)
	}
	st, _, body = g.do(t, "GET", "/v1/organizations/usage_report/messages?starting_at=yesterday", adminKey, "")
	if st != 400 || !strings.Contains(string(body), "starting_at") {
		t.Errorf("bad starting_at: %d %s", st, body)
	}
}
