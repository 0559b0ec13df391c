package integration

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/fakes"
	"github.com/modelgate/modelgate/internal/testbin"
	"github.com/modelgate/modelgate/ledger"
)

// reload runs `caddy reload --force` on the gateway's Caddyfile: the
// Caddyfile itself is unchanged when only the models file was edited, and
// Caddy skips a reload of an identical config unless forced.
func (g *gateway) reload(t *testing.T) {
	t.Helper()
	cmd := exec.Command(testbin.Path(t), "reload", "--force", "--config", filepath.Join(g.dir, "Caddyfile"),
		"--adapter", "caddyfile", "--address", g.adminAt)
	cmd.Env = g.cmd.Env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("caddy reload: %v\n%s\ngateway log:\n%s", err, out, g.stderr.String())
	}
}

// streamText sends a streamed chat request and returns the concatenated
// content of its chunks and whether it ended with [DONE]. first, when not
// nil, is closed once the first chunk arrived.
func streamText(ctx context.Context, g *gateway, alias string, first chan<- struct{}) (string, bool, error) {
	body := fmt.Sprintf(`{"model":%q,"stream":true,"messages":[{"role":"user","content":"hi"}]}`, alias)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, g.base+"/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+aliceKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", false, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return "", false, fmt.Errorf("status %d", resp.StatusCode)
	}
	var text strings.Builder
	sc := bufio.NewScanner(resp.Body)
	done := false
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if data == "[DONE]" {
			done = true
			continue
		}
		var chunk struct {
			Choices []struct {
				Delta struct{ Content string } `json:"delta"`
			} `json:"choices"`
			Error *struct{ Message string } `json:"error"`
		}
		if err := json.Unmarshal([]byte(data), &chunk); err != nil {
			return text.String(), false, fmt.Errorf("bad chunk %q", data)
		}
		if chunk.Error != nil {
			return text.String(), false, fmt.Errorf("stream error: %s", chunk.Error.Message)
		}
		for _, c := range chunk.Choices {
			text.WriteString(c.Delta.Content)
		}
		if first != nil && text.Len() > 0 {
			close(first)
			first = nil
		}
	}
	return text.String(), done, sc.Err()
}

// Hundreds of parallel requests over two deployments of one alias: every
// one answered, every one in the ledger, both deployments used.
func TestConcurrentRequestsAllRecorded(t *testing.T) {
	u := startUpstreams(t, fakes.Options{})
	models := fmt.Sprintf(`model_list:
  - model_name: pool
    proxy_params:
      model: openai/fake-gpt
      api_base: %s/v1
      api_key: upstream-openai-secret
  - model_name: pool
    proxy_params:
      model: ollama/llama-fake
      api_base: %s
router_settings:
  routing_strategy: least-busy
`, u.openai.URL, u.ollama.URL)
	g := startGateway(t, gatewayConfig{models: models})
	const n = 300
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if i%2 == 0 {
				text, done, err := streamText(ctx, g, "pool", nil)
				if err != nil || !done || text != fakes.DefaultReply {
					errs <- fmt.Errorf("stream %d: %q done=%v: %v", i, text, done, err)
				}
				return
			}
			body := `{"model":"pool","messages":[{"role":"user","content":"hi"}]}`
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, g.base+"/v1/chat/completions", strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+aliceKey)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				errs <- err
				return
			}
			defer resp.Body.Close()
			if resp.StatusCode != 200 {
				errs <- fmt.Errorf("request %d: status %d", i, resp.StatusCode)
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	recs := g.ledgerRecords(t)
	byModel := map[string]int{}
	for _, r := range recs {
		if r.Alias != "pool" || r.Status != 200 || r.Outcome != "ok" {
			t.Errorf("record %+v", r)
		}
		byModel[r.UpstreamModel]++
	}
	if len(recs) != n {
		t.Errorf("ledger has %d records, want %d", len(recs), n)
	}
	if byModel["fake-gpt"] == 0 || byModel["llama-fake"] == 0 || byModel["fake-gpt"]+byModel["llama-fake"] != n {
		t.Errorf("records by deployment = %v", byModel)
	}
	if got := u.openaiRec.Count() + u.ollamaRec.Count(); got != n {
		t.Errorf("upstreams saw %d requests, want %d (no retries were needed)", got, n)
	}
}

// A reload with a changed models file applies it while a slow stream
// started before the reload runs to its end intact.
func TestReloadUnderStream(t *testing.T) {
	u := startUpstreams(t, fakes.Options{Chunks: 15, Gap: 80 * time.Millisecond})
	g := startGateway(t, gatewayConfig{models: u.modelsYAML()})

	first := make(chan struct{})
	type result struct {
		text string
		done bool
		err  error
	}
	res := make(chan result, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		text, done, err := streamText(ctx, g, "oa", first)
		res <- result{text, done, err}
	}()
	select {
	case <-first:
	case r := <-res:
		t.Fatalf("stream ended before the reload: %+v", r)
	}
	models := strings.Replace(u.modelsYAML(), "model_aliases:", fmt.Sprintf(`  - model_name: oa-new
    proxy_params:
      model: openai/fake-gpt-new
      api_base: %s/v1
      api_key: upstream-openai-secret
model_aliases:`, u.openai.URL), 1)
	if err := os.WriteFile(filepath.Join(g.dir, "models.yaml"), []byte(models), 0o600); err != nil {
		t.Fatal(err)
	}
	g.reload(t)

	r := <-res
	if r.err != nil || !r.done || r.text != fakes.DefaultReply {
		t.Fatalf("stream across the reload: %q done=%v err=%v", r.text, r.done, r.err)
	}
	// The stream's connection belongs to the old server, which closes it
	// once idle; a request sent on it at that moment is reset. Clients
	// retry that (the SDKs do); the test starts afresh instead.
	http.DefaultClient.CloseIdleConnections()
	status, _, body := g.do(t, http.MethodPost, "/v1/chat/completions", aliceKey, `{"model":"oa-new","messages":[{"role":"user","content":"hi"}]}`)
	if status != 200 {
		t.Fatalf("new alias after reload: %d %s", status, body)
	}
	recs := g.ledgerRecords(t)
	byAlias := map[string]ledger.Outcome{}
	for _, r := range recs {
		byAlias[r.Alias] = r.Outcome
	}
	if byAlias["oa-new"] != "ok" {
		t.Errorf("ledger has no record of the request after the reload: %+v", recs)
	}
	// The old config keeps the shared writer until its last handler is
	// cleaned up, so a stream that outlives its config is still recorded.
	if byAlias["oa"] != "ok" {
		t.Errorf("ledger has no record of the stream that crossed the reload: %+v", recs)
	}
}

// Faults through the real server: a local server that is down falls back
// and cools down (shown by /health); a client that leaves mid-stream is
// recorded as cancelled long before the stream would have ended.
func TestFaultsThroughCaddy(t *testing.T) {
	u := startUpstreams(t, fakes.Options{Chunks: 20, Gap: 150 * time.Millisecond})
	down := fmt.Sprintf("127.0.0.1:%d", freePort(t)) // nothing listens here
	models := u.modelsYAML() + `router_settings:
  fallbacks:
    - local: [echo]
`
	models = strings.Replace(models, "model_aliases:", fmt.Sprintf(`  - model_name: local
    proxy_params:
      model: ollama/down
      api_base: http://%s
model_aliases:`, down), 1)
	g := startGateway(t, gatewayConfig{models: models})

	for _, path := range []string{"/health/liveliness", "/health/readiness"} {
		if status, _, body := g.do(t, http.MethodGet, path, "", ""); status != 200 {
			t.Errorf("%s without a key: %d %s", path, status, body)
		}
	}
	if status, _, _ := g.do(t, http.MethodGet, "/health", "", ""); status != 401 {
		t.Errorf("/health without a key: %d, want 401", status)
	}

	for i := 0; i < 2; i++ {
		status, _, body := g.do(t, http.MethodPost, "/v1/chat/completions", aliceKey, `{"model":"local","messages":[{"role":"user","content":"ping"}]}`)
		if status != 200 || !strings.Contains(string(body), "ping") {
			t.Fatalf("local with fallback, request %d: %d %s", i, status, body)
		}
	}
	status, _, body := g.do(t, http.MethodGet, "/health", adminKey, "")
	var health struct {
		Deployments []struct {
			Alias        string     `json:"model_name"`
			Healthy      bool       `json:"healthy"`
			CoolingUntil *time.Time `json:"cooling_down_until"`
			InFlight     int64      `json:"in_flight"`
			RecentTTFTMs *float64   `json:"recent_ttft_ms"`
		} `json:"deployments"`
	}
	if err := json.Unmarshal(body, &health); status != 200 || err != nil {
		t.Fatalf("/health: %d %s", status, body)
	}
	seen := map[string]bool{}
	for _, d := range health.Deployments {
		seen[d.Alias] = true
		switch d.Alias {
		case "local":
			if d.Healthy || d.CoolingUntil == nil || time.Until(*d.CoolingUntil) < 30*time.Second {
				t.Errorf("down deployment: %s", body)
			}
		case "echo":
			if !d.Healthy || d.RecentTTFTMs == nil {
				t.Errorf("echo deployment: %s", body)
			}
		}
	}
	if !seen["local"] || !seen["echo"] {
		t.Errorf("/health lacks the local or echo deployment: %s", body)
	}
	if strings.Contains(string(body), "upstream-openai-secret") || strings.Contains(string(body), "api_key") {
		t.Errorf("/health shows secrets: %s", body)
	}

	// The client leaves after the first chunk of a 3 s stream.
	ctx, cancel := context.WithCancel(context.Background())
	first := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, _, err := streamText(ctx, g, "claude", first)
		done <- err
	}()
	select {
	case <-first:
	case err := <-done:
		t.Fatalf("stream ended early: %v", err)
	}
	cancel()
	<-done
	time.Sleep(300 * time.Millisecond) // let the gateway notice and record
	if log := g.stderr.String(); strings.Contains(log, "upstream-openai-secret") || strings.Contains(log, "upstream-anthropic-secret") || strings.Contains(log, aliceKey) {
		t.Errorf("a secret reached the log")
	}
	var cancelled *ledger.Record
	recs := g.ledgerRecords(t)
	for i := range recs {
		if recs[i].Alias == "claude" {
			cancelled = &recs[i]
		}
	}
	if cancelled == nil {
		t.Fatalf("no ledger record for the cancelled stream: %+v", recs)
	}
	if cancelled.Outcome != "cancelled" || cancelled.Status != 499 || cancelled.Latency > 2*time.Second ||
		cancelled.InputTokens != fakes.AnthropicInputTokens {
		t.Errorf("cancelled record: status %d outcome %q latency %s input %d", cancelled.Status, cancelled.Outcome, cancelled.Latency, cancelled.InputTokens)
	}
	if u.anthropicRec.Count() != 1 {
		t.Errorf("anthropic saw %d requests, want 1", u.anthropicRec.Count())
	}
}
