package integration

import (
	"strings"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/fakes"
)

// TestAccessLogShowsKeyIDNeverKeys: the llm.* vars reach the access log
// through log_append, and the shipped filter redacts X-Api-Key, which
// Caddy would otherwise log verbatim.
func TestAccessLogShowsKeyIDNeverKeys(t *testing.T) {
	u := startUpstreams(t, fakes.Options{})
	g := startGateway(t, gatewayConfig{models: u.modelsYAML(), siteExtra: `log {
		output stderr
		format filter {
			request>headers>X-Api-Key replace REDACTED
		}
	}
	log_append key_id {http.vars.llm.key_id}
	log_append workspace {http.vars.llm.workspace}
	log_append role {http.vars.llm.role}`})
	st, _, _ := g.do(t, "POST", "/v1/messages", "", `{"model":"echo","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`, "X-Api-Key", aliceKey, "Anthropic-Version", "2023-06-01")
	if st != 200 {
		t.Fatalf("status %d", st)
	}
	st, _, _ = g.do(t, "POST", "/v1/chat/completions", bobKey, `{"model":"echo","messages":[{"role":"user","content":"hi"}]}`)
	if st != 200 {
		t.Fatalf("status %d", st)
	}
	var logs string
	for i := 0; i < 100; i++ {
		logs = g.stderr.String()
		if strings.Contains(logs, `"key_id":"bob"`) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, want := range []string{`"key_id":"alice"`, `"workspace":"frontend"`, `"role":"user"`, `"key_id":"bob"`, `"X-Api-Key":"REDACTED"`, `"user_id":"alice"`} {
		if !strings.Contains(logs, want) {
			t.Errorf("access log lacks %s", want)
		}
	}
	for _, secret := range []string{aliceKey, bobKey, "upstream-openai-secret", "upstream-anthropic-secret"} {
		if strings.Contains(logs, secret) {
			t.Errorf("a secret reached the log")
		}
	}
}
