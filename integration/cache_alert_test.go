package integration

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelgate/modelgate/policy"
)

// cacheAnthropic answers Messages like Anthropic with cache usage: a
// broken cache writes the prefix every turn and never reads it; a working
// one writes on the first turn and reads from then on.
func cacheAnthropic(t *testing.T, works bool) *httptest.Server {
	t.Helper()
	var turns atomic.Int64
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		write, read := int64(5000), int64(0)
		if works && turns.Add(1) > 1 {
			write, read = 200, 5000
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"msg_a","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[{"type":"text","text":"ok"}],`+
			`"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":10,"cache_creation_input_tokens":%d,"cache_read_input_tokens":%d,`+
			`"cache_creation":{"ephemeral_5m_input_tokens":%d,"ephemeral_1h_input_tokens":0},"output_tokens":5}}`, write, read, write)
	}))
	t.Cleanup(s.Close)
	return s
}

// TestUnreadCacheAlert: a session that writes its prompt cache on every
// turn and never reads it gets one alert in the team chat, naming the
// session and what its writes cost; a session whose cache works, on the
// same gateway, gets none.
func TestUnreadCacheAlert(t *testing.T) {
	hook := startChatSink(t)
	broken, works := cacheAnthropic(t, false), cacheAnthropic(t, true)
	models := fmt.Sprintf("model_list:\n"+
		"  - model_name: broken\n    proxy_params: {model: anthropic/claude-sonnet-4-5, api_base: %s, api_key: k}\n"+
		"  - model_name: works\n    proxy_params: {model: anthropic/claude-sonnet-4-5, api_base: %s, api_key: k}\n", broken.URL, works.URL)
	dir := t.TempDir()
	g := startGateway(t, gatewayConfig{models: models, dir: dir,
		ledgerLine: "ledger sqlite " + filepath.Join(dir, "ledger.db") + "\n\t\talerts_webhook {env.HOOK}",
		env:        []string{"HOOK=" + hook.URL + "/services/T/B/secret"}})
	turn := func(alias, session string) {
		t.Helper()
		body := fmt.Sprintf(`{"model":%q,"max_tokens":16,"metadata":{"user_id":"user_x_account_y_session_%s"},"messages":[{"role":"user","content":"hi"}]}`, alias, session)
		if st, _, b := g.do(t, "POST", "/v1/messages", aliceKey, body, "anthropic-version", "2023-06-01"); st != 200 {
			t.Fatalf("%s: %d %s", alias, st, b)
		}
	}
	for i := 0; i < policy.CacheAlertWindow; i++ {
		turn("works", "cache-ok")
		turn("broken", "cache-lost")
	}
	var got []string
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		got = hook.Posts()
		if len(got) > 0 {
			break
		}
	}
	time.Sleep(500 * time.Millisecond) // a repeat, or the working session's, would arrive now
	got = hook.Posts()
	if len(got) != 1 {
		t.Fatalf("posts %q, want one alert", got)
	}
	// Four writes of 5000 tokens at Claude Sonnet 4.5's 5-minute write
	// price ($3.75/M): $0.075.
	for _, w := range []string{"Prompt cache written but never read", "session cache-lost (key alice, claude-code, model broken)",
		fmt.Sprintf("%d cache writes and no cache read in its last %d requests", policy.CacheAlertWrites, policy.CacheAlertWrites), "$0.075"} {
		if !strings.Contains(got[0], w) {
			t.Errorf("alert %q lacks %q", got[0], w)
		}
	}
	if strings.Contains(g.stderr.String(), "secret") {
		t.Error("the webhook URL reached a log")
	}
}
