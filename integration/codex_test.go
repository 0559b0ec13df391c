package integration

import (
	"bytes"
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/fakes"
	"github.com/modelgate/modelgate/internal/testbin"
)

// codexConfig is ~/.codex/config.toml exactly as docs/clients.md tells
// users to write it.
func codexConfig(base, alias string) string {
	return fmt.Sprintf(`model = %q
model_provider = "modelgate"
[model_providers.modelgate]
name = "Modelgate"
base_url = "%s/v1"
env_key = "MODELGATE_API_KEY"
wire_api = "responses"
`, alias, base)
}

// runCodex runs `codex exec` in dir with a private CODEX_HOME and HOME, so
// the user's own config, credentials and history never take part, and
// returns its last message.
func runCodex(t *testing.T, codex, base, alias, dir, prompt string) string {
	t.Helper()
	return runCodexConfig(t, codex, codexConfig(base, alias), dir, prompt)
}

// runCodexConfig is runCodex with the given config.toml.
func runCodexConfig(t *testing.T, codex, config, dir, prompt string) string {
	t.Helper()
	last, err := codexExec(t, codex, config, dir, prompt, aliceKey)
	if err != nil {
		t.Fatalf("codex exec: %v", err)
	}
	return last
}

// codexExec runs `codex exec` with key as its provider key and returns its
// last message, or the error it exited with.
func codexExec(t *testing.T, codex, config, dir, prompt, key string) (string, error) {
	t.Helper()
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	last := filepath.Join(t.TempDir(), "last.txt")
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, codex, "exec", "--skip-git-repo-check", "--ephemeral",
		"--dangerously-bypass-approvals-and-sandbox", "--color", "never", "-o", last, prompt)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "CODEX_HOME=" + home, "MODELGATE_API_KEY=" + key}
	cmd.Stdin = nil
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	t.Logf("codex stdout: %s", stdout.String())
	t.Logf("codex stderr: %s", stderr.String())
	if err != nil {
		return "", fmt.Errorf("%v; stderr: %s", err, stderr.String())
	}
	out, err := os.ReadFile(last)
	if err != nil {
		t.Fatalf("codex wrote no last message: %v", err)
	}
	return strings.TrimSpace(string(out)), nil
}

// TestCodexThroughGateway runs the real Codex CLI through the real gateway
// on the Responses API, configured as docs/clients.md says: a turn answered by
// echo/, a tool round trip through a chat-completions-only backend where
// Codex's shell tool really runs, and a turn on Anthropic. The ledger holds
// every turn with Codex's session id.
func TestCodexThroughGateway(t *testing.T) {
	codex := testbin.Codex(t)
	script := &scriptedBackend{}
	chatOnly := httptest.NewServer(script)
	t.Cleanup(chatOnly.Close)
	anthropic := httptest.NewServer(fakes.Anthropic(fakes.Options{}, nil))
	t.Cleanup(anthropic.Close)
	g := startGateway(t, gatewayConfig{models: fmt.Sprintf(`model_list:
  - model_name: coder
    proxy_params:
      model: openai/scripted-coder
      api_base: %s/v1
      api_key: %s
  - model_name: claude
    proxy_params:
      model: anthropic/claude-fake
      api_base: %s
      api_key: upstream-anthropic-secret
  - model_name: echo
    proxy_params:
      model: echo/echo
`, chatOnly.URL, upstreamKey, anthropic.URL)})

	t.Run("echo", func(t *testing.T) {
		prompt := "modelgate codex echo check 5309"
		if got := runCodex(t, codex, g.base, "echo", t.TempDir(), prompt); !strings.Contains(got, prompt) {
			t.Errorf("last message %q does not echo the prompt", got)
		}
	})
	t.Run("shell-tool", func(t *testing.T) {
		dir := t.TempDir()
		got := runCodex(t, codex, g.base, "coder", dir, "Write the marker file, then say done.")
		marker, err := os.ReadFile(filepath.Join(dir, "marker.txt"))
		if err != nil || !strings.Contains(string(marker), toolMarker) {
			t.Fatalf("Codex's shell tool did not run: %v %q", err, marker)
		}
		if got != finalReply {
			t.Errorf("last message %q, want %q", got, finalReply)
		}
		calls := script.requests()
		if len(calls) < 2 {
			t.Fatalf("the backend saw %d requests, want the call and its result", len(calls))
		}
		last := calls[len(calls)-1]
		if _, _, ok := last.req.toolResult(); !ok {
			t.Errorf("the second request carries no tool result: %s", last.raw)
		}
		if name, _ := shellCall(calls[0].req.toolNames()); name == "" {
			t.Errorf("no shell tool among %v", calls[0].req.toolNames())
		}
		if got := last.header.Get("Authorization"); got != "Bearer "+upstreamKey {
			t.Errorf("upstream Authorization %q", got)
		}
		if strings.Contains(string(last.raw), `"web_search"`) {
			t.Errorf("the hosted web_search tool reached a chat backend: %s", last.raw)
		}
	})
	t.Run("anthropic", func(t *testing.T) {
		if got := runCodex(t, codex, g.base, "claude", t.TempDir(), "Say hello."); got != fakes.DefaultReply {
			t.Errorf("last message %q, want %q", got, fakes.DefaultReply)
		}
	})

	g.stop(t)
	sessions := map[string]bool{}
	n := 0
	for _, rec := range g.ledgerRecords(t) {
		if rec.Endpoint != "responses" {
			continue
		}
		n++
		if rec.Outcome != "ok" || !rec.Stream {
			t.Errorf("record %+v", rec)
		}
		if rec.SessionID == "" {
			t.Errorf("record without Codex's session id: %+v", rec)
		}
		sessions[rec.Alias+"/"+rec.SessionID] = true
	}
	if n < 4 {
		t.Errorf("%d responses records, want at least 4 (echo, two coder turns, claude)", n)
	}
	if len(sessions) != 3 {
		t.Errorf("sessions %v: want one per codex run", sessions)
	}
}

// TestCodexOverWebSocket runs the real Codex CLI with its provider's
// supports_websockets on, as docs/codex.md shows: a tool loop through a
// chat-completions-only backend, where Codex's shell tool really runs.
// Codex falls back to HTTP silently when a WebSocket fails, so the ledger
// must say every turn came over the WebSocket, and the backend must have
// seen the call and its result.
func TestCodexOverWebSocket(t *testing.T) {
	codex := testbin.Codex(t)
	script := &scriptedBackend{}
	chatOnly := httptest.NewServer(script)
	t.Cleanup(chatOnly.Close)
	g := startGateway(t, gatewayConfig{models: fmt.Sprintf(`model_list:
  - model_name: coder
    proxy_params:
      model: openai/scripted-coder
      api_base: %s/v1
      api_key: %s
`, chatOnly.URL, upstreamKey)})

	dir := t.TempDir()
	config := codexConfig(g.base, "coder") + "supports_websockets = true\n"
	got := runCodexConfig(t, codex, config, dir, "Write the marker file, then say done.")
	marker, err := os.ReadFile(filepath.Join(dir, "marker.txt"))
	if err != nil || !strings.Contains(string(marker), toolMarker) {
		t.Fatalf("Codex's shell tool did not run: %v %q", err, marker)
	}
	if got != finalReply {
		t.Errorf("last message %q, want %q", got, finalReply)
	}
	calls := script.requests()
	if len(calls) < 2 {
		t.Fatalf("the backend saw %d requests, want the call and its result", len(calls))
	}
	if _, _, ok := calls[len(calls)-1].req.toolResult(); !ok {
		t.Errorf("the last request carries no tool result: %s", calls[len(calls)-1].raw)
	}

	g.stop(t)
	ws, other := 0, 0
	for _, rec := range g.ledgerRecords(t) {
		switch rec.Endpoint {
		case "responses_websocket":
			ws++
			if rec.Outcome != "ok" || !rec.Stream || rec.SessionID == "" || rec.KeyID == "" {
				t.Errorf("record %+v", rec)
			}
		case "responses":
			other++
		}
	}
	if ws < 2 || other != 0 {
		t.Errorf("%d turns over the WebSocket and %d over HTTP; want the tool loop's turns (at least 2) all over the WebSocket", ws, other)
	}
}
