package integration

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/fakes"
)

// Review tests against the real binary: auth on path variants, and that
// no secret reaches the logs, the served config or an upstream.

// rawRequest sends one HTTP/1.1 request line as written (no client-side
// path cleaning) and returns the status code and body.
func rawRequest(t *testing.T, base, method, target string, headers ...string) (int, string) {
	t.Helper()
	host := strings.TrimPrefix(base, "http://")
	c, err := net.DialTimeout("tcp", host, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	body := `{"model":"echo","messages":[{"role":"user","content":"bypass"}]}`
	if method == http.MethodGet || method == http.MethodHead {
		body = ""
	}
	fmt.Fprintf(c, "%s %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n", method, target, host, len(body))
	for i := 0; i+1 < len(headers); i += 2 {
		fmt.Fprintf(c, "%s: %s\r\n", headers[i], headers[i+1])
	}
	fmt.Fprintf(c, "\r\n%s", body)
	resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: method})
	if err != nil {
		t.Fatalf("%s %s: %v", method, target, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestReviewNoKeyNoService(t *testing.T) {
	u := startUpstreams(t, fakes.Options{})
	g := startGateway(t, gatewayConfig{models: u.modelsYAML()})
	cases := []struct{ method, target string }{
		{"POST", "/v1/chat/completions"},
		{"POST", "/v1/chat/completions/"},
		{"POST", "//v1/chat/completions"},
		{"POST", "/v1/chat%2Fcompletions"},
		{"POST", "/v1/./chat/completions"},
		{"POST", "/v1/messages?beta=true"},
		{"POST", "/v1/messages/count_tokens?beta=true"},
		{"POST", "/health/liveliness/../../v1/chat/completions"},
		{"POST", "/health/liveliness"},
		{"GET", "/v1/models"},
		{"HEAD", "/v1/models"},
		{"GET", "/models?beta=true"},
		{"GET", "/health"},
		{"GET", "/v1/organizations/usage_report/messages?starting_at=2025-01-01T00:00:00Z"},
		{"GET", "/v1/organizations/cost_report?starting_at=2025-01-01T00:00:00Z"},
	}
	for _, c := range cases {
		status, body := rawRequest(t, g.base, c.method, c.target)
		if status/100 == 2 {
			t.Errorf("%s %s without a key: %d %q", c.method, c.target, status, body)
		}
		if strings.Contains(body, "bypass") || strings.Contains(body, `"data"`) {
			t.Errorf("%s %s without a key served content: %q", c.method, c.target, body)
		}
	}
	if n := u.openaiRec.Count() + u.anthropicRec.Count() + u.ollamaRec.Count(); n != 0 {
		t.Errorf("unauthenticated requests reached upstreams %d times", n)
	}
}

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
