package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/modelgate/modelgate/internal/fakes"
)

// TestResponsesWebSocketReload: a reload that rotates a Caddyfile key's
// secret (bob) or takes a key's paid use away (alice: budget 0, models
// echo) closes the Responses WebSockets the old config admitted with 1012
// within 2 s, and no turn reaches an upstream after it; the new config
// refuses both keys as HTTP does (hostile re-test D4).
func TestResponsesWebSocketReload(t *testing.T) {
	up := startUpstreams(t, fakes.Options{})
	g := startGateway(t, gatewayConfig{models: up.pricedModels()})
	upstreamCalls := func() int { return up.openaiRec.Count() + up.ollamaRec.Count() }

	alice, bob := dialResponsesWS(t, g, aliceKey), dialResponsesWS(t, g, bobKey)
	for _, c := range []struct {
		w     *wsClient
		model string
	}{{alice, "oa"}, {bob, "llama"}} {
		if m, err := c.w.turn(c.model); err != nil || m["type"] != "response.completed" {
			t.Fatalf("turn on %s before the reload: %v %v", c.model, m, err)
		}
	}

	rotated := g.rotateBob(t, "id alice\n", "id alice\n\t\t\tbudget 0 monthly\n\t\t\tmodels echo\n")
	before := upstreamCalls()
	g.reload(t)

	for name, w := range map[string]*wsClient{"alice": alice, "bob": bob} {
		code, reason, events, took := w.closed(5 * time.Second)
		if code != websocket.StatusServiceRestart || !strings.Contains(reason, "reloaded") {
			t.Errorf("%s: closed with %d %q, want 1012 naming the reload", name, code, reason)
		}
		if took > 2*time.Second {
			t.Errorf("%s: closed %v after the reload, want within 2s", name, took)
		}
		if len(events) > 0 {
			t.Errorf("%s: events after the reload: %v", name, events)
		}
		t.Logf("%s: closed %v after the reload: %d %q", name, took, code, reason)
		if _, err := w.turn("oa"); err == nil {
			t.Errorf("%s: a turn was served after the close", name)
		}
	}

	// The new config, as a reconnecting client meets it.
	if status, _, body := g.do(t, "POST", "/v1/responses", bobKey, `{"model":"llama","input":"hi","max_output_tokens":10}`); status != 401 {
		t.Errorf("bob's old secret over HTTP: %d %s, want 401", status, body)
	}
	again := dialResponsesWS(t, g, aliceKey)
	if m, err := again.turn("oa"); err != nil || m["type"] != "error" || m["status"] != float64(403) {
		t.Errorf("alice's turn on oa on a new connection: %v %v, want a 403 error event", m, err)
	}
	if m, err := dialResponsesWS(t, g, rotated).turn("llama"); err != nil || m["type"] != "response.completed" {
		t.Errorf("bob's rotated secret on a new connection: %v %v", m, err)
	}
	if n := upstreamCalls() - before; n != 1 {
		t.Errorf("%d upstream calls after the reload, want 1 (bob's turn under his new secret)", n)
	}
}

// rotateBob rewrites the gateway's Caddyfile, for a reload, with bob's key
// given a new literal secret, which it returns, and each old text of
// replace (pairs) replaced by its new one.
func (g *gateway) rotateBob(t *testing.T, replace ...string) string {
	t.Helper()
	const rotated = "sk-test-bob-rotated-0123456789"
	cfPath := filepath.Join(g.dir, "Caddyfile")
	cf, err := os.ReadFile(cfPath)
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(string(cf), "key {env.BOB_KEY} {", "key "+rotated+" {", 1)
	for i := 0; i+1 < len(replace); i += 2 {
		if !strings.Contains(edited, replace[i]) {
			t.Fatalf("the Caddyfile has no %q:\n%s", replace[i], edited)
		}
		edited = strings.Replace(edited, replace[i], replace[i+1], 1)
	}
	if !strings.Contains(edited, rotated) {
		t.Fatalf("the Caddyfile names no {env.BOB_KEY}:\n%s", edited)
	}
	if err := os.WriteFile(cfPath, []byte(edited), 0o600); err != nil {
		t.Fatal(err)
	}
	return rotated
}
