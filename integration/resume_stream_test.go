package integration

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/fakes"
	"github.com/modelgate/modelgate/internal/testbin"
)

// TestStreamCutContinuesOnFallback: an Anthropic upstream breaks the
// stream after two words; the gateway continues it on the fallback with
// those words as the assistant's prefill, and the official Anthropic and
// OpenAI Node SDKs each see one complete stream (one message start or
// role, one id, the whole text, the final usage of both parts). A second
// alias whose upstream says nothing after message_start fails over
// within first_token_timeout. The ledger has both parts of each cut
// answer.
func TestStreamCutContinuesOnFallback(t *testing.T) {
	dir, node := testbin.NodeSDKs(t)
	script := installScript(t, dir, "resume_stream.mjs")
	cutRec, restRec := &fakes.Recorder{}, &fakes.Recorder{}
	cut := httptest.NewServer(fakes.Anthropic(fakes.Options{CutAfter: 2}, cutRec))
	t.Cleanup(cut.Close)
	// The fallback continues the answer after the prefill "Hello from".
	rest := httptest.NewServer(fakes.Anthropic(fakes.Options{Reply: " the fake upstream."}, restRec))
	t.Cleanup(rest.Close)
	stalled := httptest.NewServer(fakes.Anthropic(fakes.Options{Gap: time.Minute}, nil))
	t.Cleanup(stalled.Close)
	entry := func(alias, base string) string {
		return fmt.Sprintf("  - model_name: %s\n    proxy_params:\n      model: anthropic/claude-sonnet-4-5\n      api_base: %s\n      api_key: upstream-anthropic-secret\n", alias, base)
	}
	g := startGateway(t, gatewayConfig{models: "model_list:\n" + entry("cut", cut.URL) + entry("rest", rest.URL) + entry("stalled", stalled.URL) +
		"router_settings:\n  fallbacks:\n    - cut: [rest]\n    - stalled: [rest]\n  first_token_timeout: 1s\n"})

	type result struct {
		Text, Stop     string
		Starts, Blocks int
		IDs            []string
		Input, Output  int64
	}
	run := func(t *testing.T, sdk, model string) result {
		out := runNode(t, dir, node, script, "MODELGATE_SDK="+sdk, "MODELGATE_BASE="+g.base, "MODELGATE_API_KEY="+aliceKey, "MODELGATE_MODEL="+model)
		var res result
		if err := json.Unmarshal(out, &res); err != nil {
			t.Fatalf("script output: %v: %s", err, out)
		}
		return res
	}
	for _, sdk := range []string{"anthropic", "openai"} {
		t.Run(sdk, func(t *testing.T) {
			res := run(t, sdk, "cut")
			if res.Text != fakes.DefaultReply || res.Starts != 1 || (sdk == "anthropic" && res.Blocks != 1) || (sdk == "openai" && len(res.IDs) != 1) {
				t.Errorf("the SDK saw %+v, want one stream of %q", res, fakes.DefaultReply)
			}
			// Both parts' input (the fallback's counted by the fake alike).
			if res.Input < 2*fakes.AnthropicInputTokens-1 || res.Output < fakes.AnthropicOutputTokens {
				t.Errorf("final usage in %d, out %d: want both parts'", res.Input, res.Output)
			}
		})
	}
	for _, r := range restRec.Requests() {
		if !strings.Contains(string(r.Body), `{"content":[{"text":"Hello from","type":"text"}],"role":"assistant"}`) {
			t.Errorf("the fallback's request has no prefill: %s", r.Body)
		}
	}
	if cutRec.Count() != 2 || restRec.Count() != 2 {
		t.Errorf("the cut upstream saw %d requests, the fallback %d; want 2 each", cutRec.Count(), restRec.Count())
	}
	t.Run("first_token_timeout", func(t *testing.T) {
		// The stalled upstream sends message_start and then nothing for a
		// minute: the fallback answers after the 1 s first_token_timeout.
		start := time.Now()
		res := run(t, "anthropic", "stalled")
		if res.Text == "" || res.Starts != 1 {
			t.Errorf("the SDK saw %+v", res)
		}
		if took := time.Since(start); took > 15*time.Second {
			t.Errorf("took %s", took)
		}
	})
	parts := map[string]int{}
	for _, r := range g.ledgerRecords(t) {
		if r.Alias == "cut" {
			parts[string(r.Outcome)]++
		}
	}
	if parts["ok"] != 2 || parts["error"] != 2 {
		t.Errorf("ledger records of the cut alias by outcome %v, want 2 ok (continuations) and 2 error (cut parts)", parts)
	}
}
