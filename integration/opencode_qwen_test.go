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

	"github.com/modelgate/modelgate/internal/testbin"
)

// chatOnlyGateway is a gateway with an echo alias and a coder alias on a
// chat-completions-only backend scripted to make the agent run its shell
// tool once.
func chatOnlyGateway(t *testing.T) (*gateway, *scriptedBackend) {
	t.Helper()
	script := &scriptedBackend{}
	chatOnly := httptest.NewServer(script)
	t.Cleanup(chatOnly.Close)
	g := startGateway(t, gatewayConfig{models: fmt.Sprintf(`model_list:
  - model_name: coder
    proxy_params:
      model: openai/scripted-coder
      api_base: %s/v1
      api_key: %s
  - model_name: echo
    proxy_params:
      model: echo/echo
`, chatOnly.URL, upstreamKey)})
	return g, script
}

// runAgent runs an agent CLI headless in dir and returns its stdout.
func runAgent(t *testing.T, name string, cmd *exec.Cmd) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	t.Logf("%s stdout: %s", name, stdout.String())
	t.Logf("%s stderr: %s", name, stderr.String())
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return strings.TrimSpace(stdout.String())
}

// checkShellTurn checks a tool loop: the marker file the shell tool
// wrote, the final answer, and the tool's result sent back upstream.
func checkShellTurn(t *testing.T, dir, got string, script *scriptedBackend) {
	t.Helper()
	marker, err := os.ReadFile(filepath.Join(dir, "marker.txt"))
	if err != nil || !strings.Contains(string(marker), toolMarker) {
		t.Fatalf("the agent's shell tool did not run: %v %q", err, marker)
	}
	if !strings.Contains(got, finalReply) {
		t.Errorf("answer %q, want %q", got, finalReply)
	}
	var result bool
	for _, c := range script.requests() {
		if id, content, ok := c.req.toolResult(); ok && strings.HasPrefix(id, toolCallPrefix) && content != "" {
			result = true
		}
	}
	if !result {
		t.Errorf("no request carried the shell tool's result back upstream")
	}
}

// opencodeConfig is the opencode.json docs/clients.md shows: the gateway as an
// OpenAI-compatible provider at …/v1, the key from the environment.
const opencodeConfig = `{
  "provider": {
    "modelgate": {
      "npm": "@ai-sdk/openai-compatible",
      "name": "Modelgate",
      "options": {"baseURL": "%s/v1", "apiKey": "{env:MODELGATE_API_KEY}"},
      "models": {"echo": {}, "coder": {}}
    }
  },
  "model": "modelgate/echo",
  "small_model": "modelgate/echo",
  "autoupdate": false,
  "share": "disabled"
}`

// TestOpencodeThroughGateway runs the real opencode (`opencode run`)
// through the gateway as docs/clients.md configures it: an echo turn, and a
// tool loop on a chat-completions-only backend where opencode's bash tool
// really runs.
func TestOpencodeThroughGateway(t *testing.T) {
	opencode := testbin.Opencode(t)
	g, script := chatOnlyGateway(t)
	// One HOME for both runs: opencode fetches its provider package from
	// npm into it on first use.
	home := t.TempDir()
	run := func(dir, model, prompt string) string {
		if err := os.WriteFile(filepath.Join(dir, "opencode.json"), []byte(fmt.Sprintf(opencodeConfig, g.base)), 0o600); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, opencode, "run", "-m", model, prompt)
		cmd.Dir = dir
		cmd.Env = append(withoutXDG(os.Environ()), "HOME="+home, "PWD="+dir, "MODELGATE_API_KEY="+aliceKey, "OPENCODE_DISABLE_MODELS_FETCH=1",
			"OPENCODE_DISABLE_AUTOUPDATE=1", "OPENCODE_DISABLE_LSP_DOWNLOAD=1", "NO_COLOR=1")
		return runAgent(t, "opencode", cmd)
	}
	t.Run("echo", func(t *testing.T) {
		prompt := "modelgate opencode echo check 4242"
		if got := run(t.TempDir(), "modelgate/echo", prompt); !strings.Contains(got, prompt) {
			t.Errorf("answer %q does not echo the prompt", got)
		}
	})
	t.Run("shell-tool", func(t *testing.T) {
		dir := t.TempDir()
		got := run(dir, "modelgate/coder", "Write the marker file, then say done.")
		checkShellTurn(t, dir, got, script)
	})
}

// qwenSettings is ~/.qwen/settings.json: the OpenAI auth type (the base
// URL, key and model come from the environment) and no telemetry.
const qwenSettings = `{"security":{"auth":{"selectedType":"openai"}},"privacy":{"usageStatisticsEnabled":false},"telemetry":{"enabled":false}}`

// TestQwenCodeThroughGateway runs the real Qwen Code (`qwen -p`) through
// the gateway with OPENAI_BASE_URL at …/v1: an echo turn, and a tool loop
// on a chat-completions-only backend where its run_shell_command runs.
func TestQwenCodeThroughGateway(t *testing.T) {
	qwen := testbin.QwenCode(t)
	g, script := chatOnlyGateway(t)
	run := func(dir, model, prompt string) string {
		home := t.TempDir()
		if err := os.MkdirAll(filepath.Join(home, ".qwen"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(home, ".qwen", "settings.json"), []byte(qwenSettings), 0o600); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, qwen, "--yolo", "-p", prompt)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "HOME="+home, "OPENAI_BASE_URL="+g.base+"/v1", "OPENAI_API_KEY="+aliceKey, "OPENAI_MODEL="+model, "NO_COLOR=1")
		return runAgent(t, "qwen", cmd)
	}
	t.Run("echo", func(t *testing.T) {
		prompt := "modelgate qwen echo check 4242"
		if got := run(t.TempDir(), "echo", prompt); !strings.Contains(got, prompt) {
			t.Errorf("answer %q does not echo the prompt", got)
		}
	})
	t.Run("shell-tool", func(t *testing.T) {
		dir := t.TempDir()
		got := run(dir, "coder", "Write the marker file, then say done.")
		checkShellTurn(t, dir, got, script)
	})
}

// withoutXDG drops the XDG base directories from env, so a client under a
// private HOME keeps its config, data and cache there. (PWD is set by the
// caller: opencode reads its project directory from it.)
func withoutXDG(env []string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, "XDG_") {
			out = append(out, kv)
		}
	}
	return out
}
