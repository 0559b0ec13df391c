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

// geminiSettings is ~/.gemini/settings.json as docs/clients.md tells users
// to write it: the API-key auth type (without it the CLI refuses a custom
// base URL) and no usage statistics or telemetry, which would call Google.
const geminiSettings = `{"security":{"auth":{"selectedType":"gemini-api-key"}},"privacy":{"usageStatisticsEnabled":false},"telemetry":{"enabled":false}}`

// runGeminiCLI runs `gemini -p` headless in dir with a private HOME, the
// gateway as GOOGLE_GEMINI_BASE_URL and a gateway key as GEMINI_API_KEY;
// --yolo lets it run the shell tool without asking.
func runGeminiCLI(t *testing.T, gemini, base, alias, dir, prompt string) string {
	t.Helper()
	return runGeminiCLISettings(t, gemini, geminiSettings, base, alias, dir, prompt)
}

// runGeminiCLISettings is runGeminiCLI with the given settings.json.
func runGeminiCLISettings(t *testing.T, gemini, settings, base, alias, dir, prompt string) string {
	t.Helper()
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, ".gemini"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".gemini", "settings.json"), []byte(settings), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, gemini, "-m", alias, "--yolo", "-p", prompt)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+home, "GOOGLE_GEMINI_BASE_URL="+base, "GEMINI_API_KEY="+aliceKey,
		"GEMINI_CLI_TRUST_WORKSPACE=true", "NO_COLOR=1", "GEMINI_API_KEY_AUTH_MECHANISM=", "GOOGLE_API_KEY=", "GOOGLE_CLOUD_PROJECT=")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	t.Logf("gemini stdout: %s", stdout.String())
	t.Logf("gemini stderr: %s", stderr.String())
	if err != nil {
		t.Fatalf("gemini -p: %v", err)
	}
	return strings.TrimSpace(stdout.String())
}

// TestGeminiCLIThroughGateway runs the real Gemini CLI through the real
// gateway on Gemini's native API, configured as docs/clients.md says: a turn
// answered by echo/, and a turn on a chat-completions-only backend that
// asks for the CLI's shell tool, which really runs, and then answers with
// text. The ledger holds every turn.
func TestGeminiCLIThroughGateway(t *testing.T) {
	gemini := testbin.GeminiCLI(t)
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

	t.Run("echo", func(t *testing.T) {
		prompt := "modelgate gemini echo check 4242"
		if got := runGeminiCLI(t, gemini, g.base, "echo", t.TempDir(), prompt); !strings.Contains(got, prompt) {
			t.Errorf("answer %q does not echo the prompt", got)
		}
	})
	t.Run("shell-tool", func(t *testing.T) {
		dir := t.TempDir()
		got := runGeminiCLI(t, gemini, g.base, "coder", dir, "Write the marker file, then say done.")
		marker, err := os.ReadFile(filepath.Join(dir, "marker.txt"))
		if err != nil || !strings.Contains(string(marker), toolMarker) {
			t.Fatalf("Gemini CLI's shell tool did not run: %v %q", err, marker)
		}
		if !strings.Contains(got, finalReply) {
			t.Errorf("answer %q, want %q", got, finalReply)
		}
		calls := script.requests()
		if len(calls) < 2 {
			t.Fatalf("the backend saw %d requests, want the call and its result", len(calls))
		}
		last := calls[len(calls)-1]
		if id, content, ok := last.req.toolResult(); !ok || !strings.HasPrefix(id, toolCallPrefix) || content == "" {
			t.Errorf("the last request carries no result for the call: %s", last.raw)
		}
		if got := last.header.Get("Authorization"); got != "Bearer "+upstreamKey {
			t.Errorf("upstream Authorization %q", got)
		}
	})

	g.stop(t)
	n := 0
	for _, rec := range g.ledgerRecords(t) {
		if rec.Endpoint != "generate_content" {
			continue
		}
		n++
		if rec.Outcome != "ok" || rec.KeyID != "alice" {
			t.Errorf("record %+v", rec)
		}
	}
	if n < 3 {
		t.Errorf("%d generate_content records, want at least 3 (echo, two coder turns)", n)
	}
}
