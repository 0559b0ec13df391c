package integration

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/fakes"
)

// TestReviewSecretsStayOut runs the real binary with debug logging: no key
// reaches the logs or the served config, and no client key reaches an
// upstream.
func TestReviewSecretsStayOut(t *testing.T) {
	u := startUpstreams(t, fakes.Options{})
	g := startGateway(t, gatewayConfig{models: u.modelsYAML(), globalExtra: "debug",
		siteExtra: "log {\n\t\tformat filter {\n\t\t\trequest>headers>X-Api-Key replace REDACTED\n\t\t}\n\t}"})
	chat := `{"model":"%s","max_tokens":20,"stream":%v,"messages":[{"role":"user","content":"hi"}]}`
	for _, alias := range []string{"oa", "claude", "llama", "echo", "nope"} {
		for _, stream := range []bool{false, true} {
			body := fmt.Sprintf(chat, alias, stream)
			want := http.StatusOK
			if alias == "nope" {
				want = http.StatusNotFound
			}
			// Real traffic, or the checks below would have nothing to see.
			if st, _, b := g.do(t, "POST", "/v1/chat/completions", aliceKey, body); st != want {
				t.Errorf("chat %s stream=%v: %d %s", alias, stream, st, b)
			}
			if st, _, b := g.do(t, "POST", "/v1/messages?beta=true", "", body, "X-Api-Key", aliceKey, "Anthropic-Version", "2023-06-01"); st != want {
				t.Errorf("messages %s stream=%v: %d %s", alias, stream, st, b)
			}
		}
	}
	g.do(t, "POST", "/v1/chat/completions", "sk-wrong-key-that-is-secret", fmt.Sprintf(chat, "oa", false))
	g.do(t, "POST", "/v1/messages", "", fmt.Sprintf(chat, "claude", false), "X-Api-Key", "sk-wrong-key-that-is-secret")
	g.do(t, "GET", "/health", adminKey, "")
	g.do(t, "GET", "/v1/organizations/usage_report/messages?starting_at=2025-01-01T00:00:00Z", "", "", "X-Api-Key", adminKey)

	// The served config.
	resp, err := http.Get("http://" + g.adminAt + "/config/")
	if err != nil {
		t.Fatal(err)
	}
	cfg, _ := io.ReadAll(resp.Body)
	resp.Body.Close()

	secrets := []string{aliceKey, bobKey, adminKey, "sk-wrong-key-that-is-secret", "upstream-openai-secret", "upstream-anthropic-secret"}
	// Let the access log drain.
	time.Sleep(100 * time.Millisecond)
	logs := g.stderr.String()
	for _, s := range secrets {
		if strings.Contains(logs, s) {
			i := strings.Index(logs, s)
			lo := max(0, i-300)
			t.Errorf("secret %q in the log: ...%s...", s, logs[lo:min(len(logs), i+len(s)+50)])
		}
		if strings.Contains(string(cfg), s) {
			t.Errorf("secret %q in the served config", s)
		}
	}
	// No upstream sees the client's key.
	if u.openaiRec.Count() == 0 || u.anthropicRec.Count() == 0 || u.ollamaRec.Count() == 0 {
		t.Fatal("some upstream got no traffic: the key check below would be vacuous")
	}
	for name, rec := range map[string]*fakes.Recorder{"openai": u.openaiRec, "anthropic": u.anthropicRec, "ollama": u.ollamaRec} {
		for _, r := range rec.Requests() {
			for k, vs := range r.Header {
				for _, v := range vs {
					if strings.Contains(v, aliceKey) {
						t.Errorf("%s upstream got the client key in %s", name, k)
					}
				}
			}
			if strings.Contains(string(r.Body), aliceKey) {
				t.Errorf("%s upstream got the client key in the body", name)
			}
		}
	}
}
