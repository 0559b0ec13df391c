package agenthook_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/testbin"
)

// TestClaudeCodeStopHook registers the hook in a project with `install
// --project`, runs one real Claude Code turn through the real gateway's
// echo/ backend, and checks that the webhook received the completion
// message naming the project, under the session the gateway recorded.
func TestClaudeCodeStopHook(t *testing.T) {
	claude := testbin.ClaudeCode(t)
	bin := testbin.Path(t)
	home := t.TempDir()
	project := filepath.Join(t.TempDir(), "shop-e2e")
	if err := os.Mkdir(project, 0o755); err != nil {
		t.Fatal(err)
	}
	baseEnv := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home}

	install := exec.Command(bin, "agent-hook", "install", "--project", project)
	install.Env = baseEnv
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("agent-hook install: %v\n%s", err, out)
	}
	settings, err := os.ReadFile(filepath.Join(project, ".claude", "settings.local.json"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("settings.local.json:\n%s", settings)

	hook := newWebhook(t, slackOK)
	gw := startEchoGateway(t, bin)

	const prompt = "agent-hook e2e says hi"
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, claude, "-p", prompt,
		// Only the project's local settings: the user's real ones must not
		// leak in, and print mode must load the hooks from this file.
		"--setting-sources", "local")
	cmd.Dir = project
	cmd.Env = append(baseEnv,
		"ANTHROPIC_BASE_URL="+gw.base,
		"ANTHROPIC_AUTH_TOKEN="+gatewayKey,
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_AUTOUPDATER=1",
		"CHAT_WEBHOOK_URL="+hook.url,
	)
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	t.Logf("claude stdout: %q", stdout.String())
	t.Logf("claude stderr: %q", stderr.String())
	if runErr != nil {
		t.Fatalf("claude -p: %v", runErr)
	}
	// The echo backend answers with the last user message.
	if !strings.Contains(stdout.String(), prompt) {
		t.Errorf("claude printed %q, want the echoed prompt %q", stdout.String(), prompt)
	}

	// The Stop hook runs as Claude Code finishes; give its POST a moment in
	// case the process exited before the hook's request landed.
	deadline := time.Now().Add(10 * time.Second)
	for len(hook.requests()) == 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	reqs := hook.requests()
	if len(reqs) == 0 {
		t.Fatal("webhook received nothing from the Stop hook")
	}
	var stops []string
	for _, r := range reqs {
		t.Logf("webhook received: %s", r.Raw)
		if strings.HasPrefix(r.Text, "✅ ") {
			stops = append(stops, r.Text)
		}
	}
	if len(stops) == 0 {
		t.Fatalf("no ✅ message among %d webhook posts", len(reqs))
	}
	msg := stops[0]
	const prefix = "✅ Claude Code done — project: `shop-e2e` (session: `"
	session, ok := strings.CutPrefix(msg, prefix)
	session, ok2 := strings.CutSuffix(session, "`)")
	if !ok || !ok2 || session == "" || session == "unknown" {
		t.Fatalf("stop message %q: want the project shop-e2e and a real session id", msg)
	}
	var body map[string]string
	if err := json.Unmarshal([]byte(reqs[0].Raw), &body); err != nil {
		t.Errorf("webhook body %s is not {\"text\": ...}: %v", reqs[0].Raw, err)
	}

	// The turn went through the gateway, which recorded it under the same
	// session the hook reported.
	recs := gw.records(t)
	t.Logf("ledger: %d record(s) for session %s", len(recs), session)
	if len(recs) == 0 {
		t.Fatalf("the gateway's ledger holds no record of the turn; gateway log:\n%s", gw.log.String())
	}
	for _, r := range recs {
		if r.SessionID != session || r.Alias != "echo" || r.Outcome != "ok" {
			t.Errorf("ledger record: session %q alias %q outcome %q, want %q echo ok", r.SessionID, r.Alias, r.Outcome, session)
		}
	}
}
