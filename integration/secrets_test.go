package integration

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/fakes"
	"github.com/modelgate/modelgate/internal/testbin"
	"github.com/modelgate/modelgate/internal/testwait"
	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/secretscan/secrettest"
)

// TestSecretFirewallClaudeCodeRead runs the real Claude Code through the
// gateway against a scripted backend that has it read a .env file full of
// (generated) credentials with its Read tool. The backend sees only
// placeholders, the session goes on to its answer, and no value reaches
// the gateway's log or its ledger's file; the detections are in the
// ledger under the caller's key.
func TestSecretFirewallClaudeCodeRead(t *testing.T) {
	claude := testbin.ClaudeCode(t)
	creds := secrettest.Corpus(77)
	work := t.TempDir()
	envFile := filepath.Join(work, ".env")
	var env strings.Builder
	for _, c := range creds {
		env.WriteString(c.Text + "\n")
	}
	if err := os.WriteFile(envFile, []byte(env.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	script := &scriptedBackend{pick: func([]string) (string, string) {
		args, _ := json.Marshal(map[string]string{"file_path": envFile})
		return "Read", string(args)
	}}
	up := httptest.NewServer(script)
	t.Cleanup(up.Close)
	// An openai/ entry with an api_base is local: it would only log, so
	// the entry asks for redaction.
	models := fmt.Sprintf(`model_list:
  - model_name: coder
    proxy_params:
      model: openai/scripted-coder
      api_base: %s/v1
      api_key: %s
    secrets: {action: redact}
`, up.URL, upstreamKey)
	g := startGateway(t, gatewayConfig{models: models})
	res := runClaude(t, claude, claudeRun{
		prompt: "Read the .env file with the Read tool, then say you are done.",
		dir:    work,
		env:    []string{"ANTHROPIC_BASE_URL=" + g.base, "ANTHROPIC_AUTH_TOKEN=" + aliceKey, "ANTHROPIC_MODEL=coder"},
		args:   []string{"--allowedTools", "Read"},
	})
	if !strings.Contains(res.Result, finalReply) || res.NumTurns < 2 {
		t.Fatalf("the session did not go on after the read: %+v", res)
	}
	sawResult := false
	for i, c := range script.requests() {
		if k := secrettest.Leaked(string(c.raw), creds); k != "" {
			t.Fatalf("upstream request %d carries the %s", i, k)
		}
		if _, content, ok := c.req.toolResult(); ok {
			sawResult = true
			for _, want := range []string{"[REDACTED:aws-access-token:", "[REDACTED:private-key:", "[REDACTED:github-pat:", "[REDACTED:url-password:"} {
				if !strings.Contains(content, want) {
					t.Errorf("the tool result upstream lacks %s: %q", want, content)
				}
			}
		}
	}
	if !sawResult {
		t.Fatal("no upstream request carried the Read tool's result")
	}
	logText := g.stderr.String()
	recs := g.ledgerRecords(t) // stops the gateway: the ledger file is complete
	if k := secrettest.Leaked(logText, creds); k != "" {
		t.Fatalf("the gateway's log carries the %s", k)
	}
	if !strings.Contains(logText, "secret detected") {
		t.Errorf("the log has no detection line")
	}
	// Nothing of Claude Code's own (system prompt, tool definitions,
	// metadata) is taken for a secret: every detection is in a message.
	for _, line := range strings.Split(logText, "\n") {
		if strings.Contains(line, "secret detected") && !strings.Contains(line, `"where":"messages[`) {
			t.Errorf("a detection outside the messages: %s", line)
		}
	}
	db, err := os.ReadFile(filepath.Join(g.dir, "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	if k := secrettest.Leaked(string(db), creds); k != "" {
		t.Fatalf("the ledger's file carries the %s", k)
	}
	rules := map[string]bool{}
	for _, r := range recs {
		if r.Endpoint == ledger.EndpointSecret {
			if r.KeyID != "alice" || r.Alias != "coder" || r.ServiceTier != "redact" || r.Agent != "request" {
				t.Errorf("detection record %+v", r)
			}
			rules[r.Provider] = true
		}
	}
	for _, want := range []string{"aws-access-token", "private-key", "github-pat", "url-password", "jwt"} {
		if !rules[want] {
			t.Errorf("no ledger record for rule %s (have %v)", want, rules)
		}
	}
}

// TestSecretFirewallEveryFormat: through the binary, a request of each
// client format (chat, Messages, Responses, Gemini) carrying credentials
// of every kind in its prompt and tool results, answered by a model that
// writes credentials back in a stream split mid-token: none reaches the
// upstream, the client, the log or the ledger's file; a block answers 400
// in the caller's family; the report counts the detections.
func TestSecretFirewallEveryFormat(t *testing.T) {
	creds := secrettest.Corpus(78)
	var reply strings.Builder
	for _, c := range creds {
		reply.WriteString("Here: " + c.Text + "\n")
	}
	rec := &fakes.Recorder{}
	up := httptest.NewServer(fakes.OpenAI(fakes.Options{Reply: reply.String(), Chunks: 83}, rec))
	t.Cleanup(up.Close)
	models := fmt.Sprintf(`model_list:
  - model_name: coder
    proxy_params: {model: openai/m, api_base: %s/v1, api_key: %s}
    secrets: {action: redact}
  - model_name: strict
    proxy_params: {model: openai/m, api_base: %s/v1, api_key: %s}
    secrets: {action: block}
`, up.URL, upstreamKey, up.URL, upstreamKey)
	g := startGateway(t, gatewayConfig{models: models, siteExtra: "handle /metrics {\n\t\tmetrics\n\t}"})
	var prompt strings.Builder
	for _, c := range creds {
		prompt.WriteString(c.Text + "\n")
	}
	p := prompt.String()
	js := func(v any) string { b, _ := json.Marshal(v); return string(b) }
	for path, body := range map[string]string{
		"/v1/chat/completions": js(map[string]any{"model": "coder", "stream": true, "messages": []any{
			map[string]any{"role": "user", "content": p},
			map[string]any{"role": "assistant", "tool_calls": []any{map[string]any{"id": "call_1", "type": "function", "function": map[string]any{"name": "read", "arguments": "{}"}}}},
			map[string]any{"role": "tool", "tool_call_id": "call_1", "content": p}}}),
		"/v1/messages": js(map[string]any{"model": "coder", "stream": true, "max_tokens": 900, "messages": []any{
			map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": "toolu_1", "content": p}}}}}),
		"/v1/responses": js(map[string]any{"model": "coder", "stream": true, "store": false, "input": []any{
			map[string]any{"role": "user", "content": "read it"},
			map[string]any{"type": "function_call", "call_id": "call_1", "name": "read", "arguments": "{}"},
			map[string]any{"type": "function_call_output", "call_id": "call_1", "output": p}}}),
		"/v1beta/models/coder:streamGenerateContent?alt=sse": js(map[string]any{"contents": []any{
			map[string]any{"role": "user", "parts": []any{map[string]any{"text": p}}}}}),
	} {
		status, _, out := g.do(t, "POST", path, aliceKey, body, "Anthropic-Version", "2023-06-01")
		if status != 200 {
			t.Fatalf("%s: %d %s", path, status, out)
		}
		if k := secrettest.Leaked(string(out), creds); k != "" {
			t.Fatalf("%s: the answer carries the %s", path, k)
		}
		if !strings.Contains(string(out), "[REDACTED:") {
			t.Fatalf("%s: the answer has no placeholder: %s", path, out)
		}
	}
	status, _, out := g.do(t, "POST", "/v1/messages", aliceKey, js(map[string]any{"model": "strict", "max_tokens": 9,
		"messages": []any{map[string]any{"role": "user", "content": creds[3].Text}}}), "Anthropic-Version", "2023-06-01")
	if status != 400 || !strings.Contains(string(out), `"type":"invalid_request_error"`) || !strings.Contains(string(out), "rule aws-access-token") || strings.Contains(string(out), creds[3].Value) {
		t.Fatalf("block: %d %s", status, out)
	}
	if rec.Count() != 4 {
		t.Fatalf("upstream got %d requests, want 4 (the blocked one never)", rec.Count())
	}
	for _, r := range rec.Requests() {
		if k := secrettest.Leaked(string(r.Body), creds); k != "" {
			t.Fatalf("upstream %s carries the %s", r.Path, k)
		}
	}
	// The ledger's writer is asynchronous: the report shows the block once
	// its record is written.
	report := "/v1/organizations/secrets_report?starting_at=" + time.Now().Add(-time.Hour).UTC().Format(time.RFC3339) + "&bucket_width=1h&limit=2"
	if !testwait.Until(func() bool {
		status, _, out = g.do(t, "GET", report, adminKey, "")
		return status == 200 && strings.Contains(string(out), `"rule":"private-key"`) && strings.Contains(string(out), `"model":"strict","detections":1,"redacted":0,"blocked":1`)
	}) {
		t.Errorf("report: %d %s", status, out)
	}
	status, _, out = g.do(t, "GET", "/metrics", adminKey, "")
	if status != 200 || !strings.Contains(string(out), `modelgate_secrets_detected_total{action="block",alias="strict",direction="request",rule="aws-access-token"} 1`) ||
		!strings.Contains(string(out), `modelgate_secrets_detected_total{action="redact",alias="coder",direction="answer",rule="private-key"}`) {
		t.Errorf("metrics: %d %s", status, out)
	}
	// Hostile review 4: a secret as a tool argument's name or under an
	// argument called id is redacted; a block whose secret sits under a
	// member named by another secret names neither.
	toolUse := func(alias string, input map[string]any) string {
		return js(map[string]any{"model": alias, "max_tokens": 9, "messages": []any{
			map[string]any{"role": "user", "content": "x"},
			map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": "toolu_1", "name": "cfg", "input": input}}},
			map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok"}}}}})
	}
	if status, _, out := g.do(t, "POST", "/v1/messages", aliceKey, toolUse("coder", map[string]any{creds[8].Value: 1, "id": creds[9].Value}), "Anthropic-Version", "2023-06-01"); status != 200 {
		t.Fatalf("tool input: %d %s", status, out)
	}
	status, _, out = g.do(t, "POST", "/v1/messages", aliceKey, toolUse("strict", map[string]any{creds[8].Value: creds[3].Value}), "Anthropic-Version", "2023-06-01")
	if status != 400 || !strings.Contains(string(out), "rule github-pat") || secrettest.Leaked(string(out), creds) != "" {
		t.Fatalf("block under a secret name: %d %s", status, out)
	}
	if rec.Count() != 5 {
		t.Fatalf("upstream got %d requests, want 5 (the blocked ones never)", rec.Count())
	}
	// The blocks are in the audit log: rule and place, never the value.
	if !testwait.Until(func() bool {
		status, _, out = g.do(t, "GET", "/v1/organizations/audit_log?limit=100", adminKey, "")
		return status == 200 && strings.Count(string(out), `"secret.block"`) >= 3
	}) {
		t.Errorf("audit log: %d %s", status, out)
	}
	if !strings.Contains(string(out), "aws-access-token") || secrettest.Leaked(string(out), creds) != "" {
		t.Errorf("audit entry: %s", out)
	}
	logText := g.stderr.String()
	g.stop(t)
	if k := secrettest.Leaked(logText, creds); k != "" {
		t.Fatalf("the gateway's log carries the %s", k)
	}
	db, err := os.ReadFile(filepath.Join(g.dir, "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	if k := secrettest.Leaked(string(db), creds); k != "" {
		t.Fatalf("the ledger's file carries the %s", k)
	}
}
