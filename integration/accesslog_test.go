package integration

import (
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/fakes"
)

// TestAccessLogShowsKeyIDNeverKeys: the llm.* vars reach the access log
// through log_append, and the filter Caddyfile.example ships redacts
// X-Api-Key, X-Goog-Api-Key and ?key=, which Caddy would otherwise log
// verbatim (it logs the request as it arrived, before any handler).
func TestAccessLogShowsKeyIDNeverKeys(t *testing.T) {
	example, err := os.ReadFile("../Caddyfile.example")
	if err != nil {
		t.Fatal(err)
	}
	filter := regexp.MustCompile(`(?s)\tformat filter \{.*?\n\t\t\}\n`).Find(example)
	if filter == nil {
		t.Fatal("Caddyfile.example has no format filter block")
	}
	u := startUpstreams(t, fakes.Options{})
	g := startGateway(t, gatewayConfig{models: u.modelsYAML(), siteExtra: `log {
		output stderr
` + string(filter) + `	}
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
	gemini := `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`
	if st, _, _ = g.do(t, "POST", "/v1beta/models/echo:generateContent", "", gemini, "X-Goog-Api-Key", aliceKey); st != 200 {
		t.Fatalf("x-goog-api-key: status %d", st)
	}
	if st, _, _ = g.do(t, "POST", "/v1beta/models/echo:streamGenerateContent?alt=sse&key="+bobKey, "", gemini); st != 200 {
		t.Fatalf("?key=: status %d", st)
	}
	var logs string
	for i := 0; i < 100; i++ {
		logs = g.stderr.String()
		if strings.Contains(logs, `key=REDACTED`) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, want := range []string{`"key_id":"alice"`, `"workspace":"frontend"`, `"role":"user"`, `"key_id":"bob"`, `"X-Api-Key":"REDACTED"`, `"user_id":"alice"`,
		`"X-Goog-Api-Key":"REDACTED"`, `alt=sse&key=REDACTED`} {
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
