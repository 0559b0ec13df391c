package integration

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelgate/modelgate/adminapi"
	"github.com/modelgate/modelgate/internal/fakes"
	"github.com/modelgate/modelgate/internal/testbin"
	"github.com/modelgate/modelgate/internal/testwait"
)

// TestClaudeCodeAsksForMoreAndGoesOn is the increase request as a person
// lives it: bob signs in with `caddy modelgate login`, an admin holds him
// to $0 this month, real Claude Code is refused with a message saying how
// to ask; bob runs `caddy modelgate request-increase`; the approvers' chat
// line carries a link at the configured public URL, which decides nothing
// for bob, who reads the same chat, nor for anyone not signed in; alice,
// an admin signed in to the dashboard, approves through it, which raises
// his limit; he is told in the chat, his next request is admitted within
// 2 s, and Claude Code goes on.
func TestClaudeCodeAsksForMoreAndGoesOn(t *testing.T) {
	claude := testbin.ClaudeCode(t)
	hook := startChatSink(t)
	u := startUpstreams(t, fakes.Options{})
	// "echo": the only alias bob's group may use, here a priced model.
	models := fmt.Sprintf(`model_list:
  - model_name: echo
    proxy_params:
      model: anthropic/claude-fake
      api_base: %s
      api_key: upstream-anthropic-secret
    model_info:
      input_cost_per_token: 0.000001
      output_cost_per_token: 0.000002
model_aliases:
  "claude-*": echo
`, u.anthropic.URL)
	s := startIdentityWith(t, identityOptions{models: models, ledgerLine: "ledger sqlite {env.LEDGER}\n\t\talerts_webhook {env.HOOK}\n\t\tpublic_url " + gatewayBaseURL,
		env: []string{"HOOK=" + hook.URL, "LEDGER=" + filepath.Join(t.TempDir(), "ledger.db")}})
	g := s.g
	home := t.TempDir()
	cliLogin(t, s, home, "bob")
	key := printKey(t, home)
	// Signed in to the dashboard, bob sees his own limit: his group's.
	b := dashboardSignIn(t, s, "bob")
	if st, me := b.call(http.MethodGet, g.base+"/v1/me", ""); st != http.StatusOK || !strings.Contains(fmt.Sprint(me["budgets"]), "scope:user") ||
		!strings.Contains(fmt.Sprint(me["budgets"]), "remaining:2000") {
		t.Errorf("bob's /v1/me signed in: %d %v", st, me)
	}
	if st, _, body := g.do(t, http.MethodPost, adminapi.SpendLimitsPath, adminKey,
		`{"amount":"0","scope":{"type":"user","user_id":"bob@example.com"},"period":"monthly"}`); st != http.StatusOK {
		t.Fatalf("setting bob's limit: %d %s", st, body)
	}
	messages := func() (int, string) {
		st, _, body := g.do(t, http.MethodPost, "/v1/messages", key, `{"model":"echo","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}`)
		return st, string(body)
	}
	if !testwait.Until(func() bool { st, _ := messages(); return st == http.StatusTooManyRequests }) {
		st, body := messages()
		_, _, me := g.do(t, http.MethodGet, "/v1/me", key, "")
		t.Fatalf("bob's $0 limit never refused him: %d %s; /v1/me %s", st, body, me)
	}
	project := t.TempDir()
	env := []string{"ANTHROPIC_BASE_URL=" + g.base, "ANTHROPIC_API_KEY=" + key, "ANTHROPIC_MODEL=echo", "ANTHROPIC_SMALL_FAST_MODEL=echo"}
	refused := runClaudeOutput(t, claude, project, env, "say hello")
	if !strings.Contains(refused, "request-increase") {
		t.Fatalf("Claude Code at the cap does not show how to ask:\n%s", refused)
	}

	cmd := exec.Command(testbin.Path(t), "modelgate", "request-increase", "--amount", "5", "--reason", "release week")
	cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+home, "HOME="+home)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if out, err := cmd.Output(); err != nil || !strings.Contains(stderr.String(), "Asked for a monthly limit of $5") {
		t.Fatalf("request-increase: %v\n%s\n%s", err, out, stderr.String())
	}
	var line string
	if !testwait.Until(func() bool {
		for _, p := range hook.Posts() {
			if strings.Contains(p, "bob@example.com asks for a monthly spend limit of $5.00") {
				line = p
			}
		}
		return line != ""
	}) {
		t.Fatalf("no line for the approvers: %q", hook.Posts())
	}
	link, err := url.Parse(regexp.MustCompile(`https?://\S+`).FindString(line))
	if err != nil || link.Host != strings.TrimPrefix(g.base, "http://") {
		t.Fatalf("the approvers' link %v (%v) is not at the public URL %s", link, err, g.base)
	}
	// Opening the link (a chat's preview does) approves nothing.
	resp, err := http.Get(link.String())
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("opening the link: %v %v", err, resp)
	}
	resp.Body.Close()
	if st, _ := messages(); st != http.StatusTooManyRequests {
		t.Fatalf("opening the link let bob in: %d", st)
	}
	decision := func(action string) string {
		return fmt.Sprintf(`{"token":%q,"action":%q}`, link.Query().Get("key"), action)
	}
	post := func(b *browserless, action string) (int, map[string]any) {
		_, me := b.call(http.MethodGet, g.base+"/v1/me", "")
		csrf, _ := me["csrf_token"].(string)
		return b.call(http.MethodPost, link.Scheme+"://"+link.Host+link.Path, decision(action), "X-CSRF-Token", csrf)
	}
	// The token alone is no approver: bob has it, from the same chat.
	resp, err = http.Post(link.Scheme+"://"+link.Host+link.Path, "application/json", strings.NewReader(decision("approve")))
	if err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("the link's token with no sign-in: %v %v", err, resp)
	}
	resp.Body.Close()
	if st, out := post(b, "approve"); st != http.StatusForbidden || !strings.Contains(errMessage(out), "your own request") {
		t.Fatalf("bob approving his own request through the link: %d %v", st, out)
	}
	alice := dashboardSignIn(t, s, "alice")
	approvedAt := time.Now()
	if st, out := post(alice, "approve"); st != http.StatusOK || out["status"] != "approved" {
		t.Fatalf("alice approving through the link: %d %v", st, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for {
		if st, _ := messages(); st == http.StatusOK {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("bob is still refused 5 s after the approval")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if took := time.Since(approvedAt); took > 2500*time.Millisecond {
		t.Errorf("the approval took %v to admit bob; the design says within 2 s", took)
	}
	if !testwait.Until(func() bool {
		for _, p := range hook.Posts() {
			if strings.Contains(p, "bob@example.com: your monthly spend limit is now $5.00") {
				return true
			}
		}
		return false
	}) {
		t.Errorf("bob was not told: %q", hook.Posts())
	}
	if out := runClaudeOutput(t, claude, project, env, "say hello again"); !strings.Contains(out, `"is_error":false`) || strings.Contains(out, "budget exceeded") {
		t.Errorf("Claude Code after the approval:\n%s", out)
	}
	// The link worked once.
	if st, out := post(alice, "deny"); st != http.StatusBadRequest || !strings.Contains(errMessage(out), "already approved") {
		t.Errorf("the link used again: %d %v", st, out)
	}
	// resolved_by is alice, not the link.
	_, _, body := g.do(t, http.MethodGet, adminapi.IncreaseRequestsPath+"?status[]=approved", adminKey, "")
	if !strings.Contains(string(body), `"resolved_by":{"type":"user_actor","user_id":"alice@example.com"`) {
		t.Errorf("the approved request: %s", body)
	}
}

// runClaudeRaw runs Claude Code in print mode and returns everything it
// printed, failing or not.
func runClaudeOutput(t *testing.T, claude, dir string, env []string, prompt string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, claude, "-p", prompt, "--output-format", "json", "--setting-sources", "local")
	cmd.Dir = dir
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1"}, env...)
	out, _ := cmd.CombinedOutput()
	return string(out)
}

// TestClaudeCodeDowngradedAtTheCap: a downgrade to an unpriced model is
// refused when it is set; a key's spend limit of $0 with
// `at_cap downgrade local` sends real Claude Code's requests for the paid
// model to the free local alias: Claude Code goes on, answered by it, and
// the ledger keeps the alias asked for; the paid upstream is never called.
func TestClaudeCodeDowngradedAtTheCap(t *testing.T) {
	claude := testbin.ClaudeCode(t)
	u := startUpstreams(t, fakes.Options{})
	models := fmt.Sprintf(`model_list:
  - model_name: paid
    proxy_params:
      model: anthropic/claude-fake
      api_base: %s
      api_key: upstream-anthropic-secret
    model_info:
      input_cost_per_token: 0.000001
      output_cost_per_token: 0.000002
  - model_name: local
    proxy_params:
      model: echo/echo
  - model_name: unpriced
    proxy_params:
      model: openai/gpt-5.9-turbo-preview
      api_base: %s/v1
      api_key: upstream-openai-secret
model_aliases:
  "claude-*": paid
`, u.anthropic.URL, u.openai.URL)
	g := startGateway(t, gatewayConfig{models: models})
	// An unpriced model is no downgrade target, even at an api_base on
	// loopback: the set names it and why (hostile review 4, finding 6).
	if st, _, body := g.do(t, http.MethodPost, adminapi.SpendLimitsPath, adminKey,
		`{"amount":"0","scope":{"type":"api_key","api_key_id":"alice"},"period":"daily","at_cap":{"action":"downgrade","alias":"unpriced"}}`); st != http.StatusBadRequest ||
		!strings.Contains(string(body), `at_cap.alias: \"unpriced\" is not free`) {
		t.Errorf("a downgrade to an unpriced model: %d %s", st, body)
	}
	if st, _, body := g.do(t, http.MethodPost, adminapi.SpendLimitsPath, adminKey,
		`{"amount":"0","scope":{"type":"api_key","api_key_id":"alice"},"period":"daily","at_cap":{"action":"downgrade","alias":"local"}}`); st != http.StatusOK {
		t.Fatalf("setting alice's limit: %d %s", st, body)
	}
	if !testwait.Until(func() bool {
		_, h, _ := g.do(t, http.MethodPost, "/v1/messages", aliceKey, `{"model":"paid","max_tokens":16,"messages":[{"role":"user","content":"probe"}]}`)
		return h.Get("X-Modelgate-Downgraded-From") == "paid"
	}) {
		t.Fatal("alice's requests were never downgraded")
	}
	// The probes before the limit reached the budgets (within 2 s) were
	// paid; from the first downgrade on, none is.
	paidCalls := u.anthropicRec.Count()
	var since time.Time
	res := runClaude(t, claude, claudeRun{prompt: "modelgate downgrade check", dir: t.TempDir(), env: []string{
		"ANTHROPIC_BASE_URL=" + g.base, "ANTHROPIC_API_KEY=" + aliceKey, "ANTHROPIC_MODEL=paid", "ANTHROPIC_SMALL_FAST_MODEL=paid"}})
	if !strings.Contains(res.Result, "modelgate downgrade check") {
		t.Errorf("Claude Code's answer %q is not the local echo's", res.Result)
	}
	if n := u.anthropicRec.Count() - paidCalls; n != 0 {
		t.Errorf("the paid upstream was called %d times past the cap", n)
	}
	downgraded := 0
	recs := g.ledgerRecords(t)
	for _, r := range recs {
		if r.DowngradedFrom == "paid" && (since.IsZero() || r.Time.Before(since)) {
			since = r.Time
		}
	}
	for _, r := range recs {
		if r.Alias == "local" && r.DowngradedFrom == "paid" && r.CostPicoUSD == 0 {
			downgraded++
		} else if r.Alias == "paid" && r.Status == http.StatusOK && !r.Time.Before(since) {
			t.Errorf("a paid request past the cap was served: %+v", r)
		}
	}
	if downgraded < 2 {
		t.Errorf("%d downgraded records; want the probe and Claude Code's", downgraded)
	}
}
