package integration

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelgate/modelgate/internal/fakes"
	"github.com/modelgate/modelgate/internal/testbin"
	"github.com/modelgate/modelgate/internal/testwait"
)

// A Claude subscription's OAuth token, as `claude setup-token` prints one.
const seatOAuthToken = "sk-ant-oat01-modelgate-seat-test-token-0123456789"

// TestClaudeCodeSeatPassThrough runs the real Claude Code signed in with a
// subscription-shaped token (CLAUDE_CODE_OAUTH_TOKEN) through the gateway,
// its gateway key in ANTHROPIC_CUSTOM_HEADERS as docs/seats.md says: the
// fake Anthropic answers only requests carrying exactly that token and its
// OAuth beta and nothing of the gateway's, the ledger has the turns under
// alice as notional cost, and the access log (with Caddyfile.example's
// filter) holds neither the token nor the gateway key.
func TestClaudeCodeSeatPassThrough(t *testing.T) {
	claude := testbin.ClaudeCode(t)
	var good, bad atomic.Int64
	inner := fakes.Anthropic(fakes.Options{}, nil)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ok := r.Header.Get("Authorization") == "Bearer "+seatOAuthToken && r.Header.Get("X-Api-Key") == "" &&
			r.Header.Get("X-Modelgate-Key") == "" && strings.Contains(r.Header.Get("Anthropic-Beta"), "oauth-")
		for _, v := range r.Header {
			ok = ok && !strings.Contains(strings.Join(v, " "), aliceKey)
		}
		if !ok {
			bad.Add(1)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"type":"error","error":{"type":"authentication_error","message":"the seat's credential did not arrive unchanged"}}`)
			return
		}
		good.Add(1)
		r.Header.Set("X-Api-Key", "seat-checked") // what the fake itself insists on
		inner.ServeHTTP(w, r)
	}))
	t.Cleanup(up.Close)
	example, err := os.ReadFile("../Caddyfile.example")
	if err != nil {
		t.Fatal(err)
	}
	filter := regexp.MustCompile(`(?s)\tformat filter \{.*?\n\t\t\}\n`).Find(example)
	if filter == nil || !strings.Contains(string(filter), "X-Modelgate-Key") {
		t.Fatalf("Caddyfile.example's access log filter does not redact X-Modelgate-Key")
	}
	g := startGateway(t, gatewayConfig{models: fmt.Sprintf(`model_list:
  - model_name: claude-seat
    proxy_params:
      model: anthropic/claude-sonnet-4-5
      api_base: %s
      passthrough_auth: true
model_aliases:
  "claude-*": claude-seat
`, up.URL), siteExtra: "log {\n\t\toutput stderr\n" + string(filter) + "\t}"})

	res := runClaude(t, claude, claudeRun{prompt: "Say hello.", dir: t.TempDir(), env: []string{
		"ANTHROPIC_BASE_URL=" + g.base,
		"CLAUDE_CODE_OAUTH_TOKEN=" + seatOAuthToken,
		"ANTHROPIC_CUSTOM_HEADERS=X-Modelgate-Key: " + aliceKey,
		"ANTHROPIC_MODEL=claude-seat",
	}})
	if res.Result != fakes.DefaultReply {
		t.Errorf("result %q, want %q", res.Result, fakes.DefaultReply)
	}
	if good.Load() == 0 || bad.Load() != 0 {
		t.Errorf("the provider saw %d requests with the seat's credential and %d without", good.Load(), bad.Load())
	}
	if !testwait.Until(func() bool { return strings.Contains(g.stderr.String(), `"X-Modelgate-Key":"REDACTED"`) }) {
		t.Errorf("the access log shows no redacted X-Modelgate-Key")
	}
	logs := g.stderr.String()
	for _, secret := range []string{seatOAuthToken, aliceKey} {
		if strings.Contains(logs, secret) {
			t.Errorf("a secret reached the gateway's log")
		}
	}
	// The gateway key where the provider's credential goes is refused,
	// and a seat alias called without X-Modelgate-Key sends nothing on.
	msg := `{"model":"claude-seat","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`
	calls := good.Load() + bad.Load()
	if st, _, body := g.do(t, "POST", "/v1/messages", bobKey, msg, "X-Modelgate-Key", aliceKey, "Anthropic-Version", "2023-06-01"); st != 400 || !strings.Contains(string(body), "send the gateway key in X-Modelgate-Key only") {
		t.Errorf("a gateway key in Authorization beside X-Modelgate-Key: %d %s", st, body)
	}
	if st, _, body := g.do(t, "POST", "/v1/messages", aliceKey, msg, "Anthropic-Version", "2023-06-01"); st != 401 || !strings.Contains(string(body), "passthrough_auth") {
		t.Errorf("a seat alias without X-Modelgate-Key: %d %s", st, body)
	}
	if good.Load()+bad.Load() != calls {
		t.Errorf("a refused request reached the provider")
	}
	n := 0
	for _, r := range g.ledgerRecords(t) {
		if r.Alias != "claude-seat" || r.Status == 401 {
			continue
		}
		if r.KeyID != "alice" || !r.Notional || !r.ReportOnly || r.Outcome != "ok" || r.CostPicoUSD <= 0 || r.SessionID != res.SessionID {
			t.Errorf("seat record %+v", r)
		}
		n++
	}
	if n == 0 {
		t.Errorf("no seat turn in the ledger")
	}
}
