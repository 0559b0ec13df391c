package integration

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/testbin"
)

// keyTTL is the per-person keys' life in the login tests: short, so a
// key expires between two uses.
const keyTTL = 15 * time.Second

var devicePrompt = regexp.MustCompile(`open (\S+) and enter the code (\S+)`)

// cliLogin runs `caddy modelgate login --gateway` as user: it reads the
// device code the CLI prints and signs in on the provider's own device
// pages, as a person would in a browser.
func cliLogin(t *testing.T, s identitySetup, configHome, user string) string {
	t.Helper()
	out, err := cliLoginResult(t, s, configHome, user)
	if err != nil {
		t.Fatalf("caddy modelgate login: %v\n%s", err, out)
	}
	return out
}

// cliLoginResult is cliLogin that leaves a failed login to the caller.
func cliLoginResult(t *testing.T, s identitySetup, configHome, user string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, testbin.Path(t), "modelgate", "login", "--gateway", s.g.base)
	cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+configHome, "HOME="+configHome)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	sc := bufio.NewScanner(stderr)
	var verify, code string
	for sc.Scan() {
		out.WriteString(sc.Text() + "\n")
		if m := devicePrompt.FindStringSubmatch(sc.Text()); m != nil {
			verify, code = m[1], m[2]
			break
		}
	}
	if verify == "" {
		_ = cmd.Wait()
		t.Fatalf("login printed no device code:\n%s", out.String())
	}
	b := newBrowserless(t)
	b.visit(http.MethodGet, verify, nil)
	b.submit(map[string]string{"user_code": code}) // the code entry page
	b.submit(nil)                                  // "is this the device you are signing in?"
	b.signIn(s.issuer, user)
	if !strings.Contains(strings.ToLower(b.body), "sign-in") && !strings.Contains(strings.ToLower(b.body), "success") {
		t.Logf("the provider's last device page (%d): %.500s", b.status, b.body)
	}
	for sc.Scan() {
		out.WriteString(sc.Text() + "\n")
	}
	err = cmd.Wait()
	return out.String(), err
}

// printKey runs `caddy modelgate login --print-key`, as apiKeyHelper does.
func printKey(t *testing.T, configHome string) string {
	t.Helper()
	cmd := exec.Command(testbin.Path(t), "modelgate", "login", "--print-key")
	cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+configHome, "HOME="+configHome)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("login --print-key: %v: %s", err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}

func chat(t *testing.T, g *gateway, key string) (int, string) {
	t.Helper()
	st, _, body := g.do(t, http.MethodPost, "/v1/chat/completions", key, `{"model":"echo","messages":[{"role":"user","content":"hi"}]}`)
	return st, string(body)
}

// TestOIDCLoginDeviceFlow signs bob in from the CLI with the device flow
// of a real OpenID provider: the key it keeps (0600, in the user's config
// directory) works, is listed as created_by oidc with his identity, his
// group's workspace and models, expires after key_ttl, and
// --print-key then renews it without a prompt. `caddy modelgate env`
// prints the clients' settings.
func TestOIDCLoginDeviceFlow(t *testing.T) {
	s := startIdentity(t, "key_ttl "+keyTTL.String())
	g := s.g
	home := t.TempDir()
	out := cliLogin(t, s, home, "bob")
	if !strings.Contains(out, "Signed in as bob@example.com (role member)") {
		t.Errorf("login's last words:\n%s", out)
	}
	if m := oidcStatus(t, g); m["device_flow"] != true || m["device_flow_confirmed"] != true {
		t.Errorf("status after a device sign-in: %v, want the device flow offered and confirmed", m)
	}
	file := filepath.Join(home, "modelgate", "login.json")
	if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("login file %s: %v, mode %v; want 0600", file, err, fi)
	}
	k1 := printKey(t, home)
	if !strings.HasPrefix(k1, "sk-mg-") {
		t.Fatalf("--print-key printed %q", k1)
	}
	if st, body := chat(t, g, k1); st != http.StatusOK {
		t.Fatalf("chat with bob's key: %d %s", st, body)
	}
	if st, _, body := g.do(t, http.MethodPost, "/v1/chat/completions", k1, `{"model":"claude","messages":[{"role":"user","content":"hi"}]}`); st == http.StatusOK {
		t.Errorf("bob's key used a model outside his group's list: %s", body)
	}
	st, _, body := g.do(t, http.MethodGet, "/v1/organizations/api_keys", adminKey, "")
	var list struct {
		Data []struct {
			ID          string  `json:"id"`
			WorkspaceID *string `json:"workspace_id"`
			ExpiresAt   *string `json:"expires_at"`
			CreatedBy   struct {
				Type, ID, Email, Subject string
			} `json:"created_by"`
			Models []string `json:"models"`
			Budget any      `json:"budget"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &list); st != http.StatusOK || err != nil {
		t.Fatalf("keys list: %d %s", st, body)
	}
	found := false
	for _, k := range list.Data {
		if k.CreatedBy.Type == "oidc" {
			found = true
			if k.CreatedBy.ID != "bob@example.com" || k.CreatedBy.Subject != "bob" || k.WorkspaceID == nil || *k.WorkspaceID != "eng" ||
				k.ExpiresAt == nil || len(k.Models) != 1 || k.Budget != nil {
				// The group's budget is bob's, over all his keys, not a
				// budget of each key (hostile review N3).
				t.Errorf("bob's key as listed: %+v", k)
			}
		}
	}
	if !found {
		t.Errorf("no key with created_by.type oidc in %s", body)
	}
	if _, _, me := g.do(t, http.MethodGet, "/v1/me", k1, ""); !strings.Contains(string(me), `"scope":"user","period":"monthly","amount":"2000"`) ||
		!strings.Contains(string(me), `"scope_id":"bob@example.com","source":{"scope":"rbac_group","id":"engineering"}`) {
		t.Errorf("bob's /v1/me does not show his group's budget as his own limit: %s", me)
	}

	env := exec.Command(testbin.Path(t), "modelgate", "env")
	env.Env = append(os.Environ(), "XDG_CONFIG_HOME="+home, "HOME="+home)
	envOut, err := env.Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"export ANTHROPIC_BASE_URL=" + g.base, "export OPENAI_BASE_URL=" + g.base + "/v1", "export GEMINI_API_KEY=" + k1,
		"export GOOGLE_GEMINI_BASE_URL=" + g.base, "apiKeyHelper"} {
		if !strings.Contains(string(envOut), want) {
			t.Errorf("modelgate env lacks %q:\n%s", want, envOut)
		}
	}

	// The key expires; --print-key renews it with the refresh token.
	time.Sleep(keyTTL + time.Second)
	if st, body := chat(t, g, k1); st != http.StatusUnauthorized || !strings.Contains(body, "expired") {
		t.Errorf("chat with the expired key: %d %s, want 401 naming the expiry", st, body)
	}
	k2 := printKey(t, home)
	if k2 == k1 || !strings.HasPrefix(k2, "sk-mg-") {
		t.Fatalf("--print-key after expiry printed %q (the old key %q)", k2, k1)
	}
	if st, body := chat(t, g, k2); st != http.StatusOK {
		t.Errorf("chat with the renewed key: %d %s", st, body)
	}
	if k3 := printKey(t, home); k3 != k2 {
		t.Errorf("--print-key renewed a key that is still fresh")
	}
}

// TestOIDCClaudeCodeAPIKeyHelper runs the real Claude Code with
// apiKeyHelper = `caddy modelgate login --print-key` twice through the
// gateway, the person's key expiring between the runs: each run answers,
// and the ledger shows the two runs under two keys.
func TestOIDCClaudeCodeAPIKeyHelper(t *testing.T) {
	claude := testbin.ClaudeCode(t)
	s := startIdentity(t, "key_ttl "+keyTTL.String())
	g := s.g
	home := t.TempDir()
	cliLogin(t, s, home, "bob")
	project := t.TempDir()
	if err := os.MkdirAll(filepath.Join(project, ".claude"), 0o700); err != nil {
		t.Fatal(err)
	}
	settings, _ := json.Marshal(map[string]any{"apiKeyHelper": testbin.Path(t) + " modelgate login --print-key"})
	if err := os.WriteFile(filepath.Join(project, ".claude", "settings.local.json"), settings, 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(prompt string) {
		res := runClaude(t, claude, claudeRun{prompt: prompt, dir: project, env: []string{
			"ANTHROPIC_BASE_URL=" + g.base, "ANTHROPIC_MODEL=echo", "XDG_CONFIG_HOME=" + home}})
		if !strings.Contains(res.Result, prompt) {
			t.Errorf("claude's answer %q does not echo %q", res.Result, prompt)
		}
	}
	run("modelgate helper check one")
	time.Sleep(keyTTL + time.Second)
	run("modelgate helper check two")

	keys := map[string]bool{}
	for _, r := range g.ledgerRecords(t) {
		if strings.HasPrefix(r.KeyID, "apikey_") {
			keys[r.KeyID] = true
		}
	}
	if len(keys) < 2 {
		t.Errorf("the ledger shows Claude Code's calls under %d per-person key(s) %v, want two (the key renewed between runs)", len(keys), keys)
	}
}

var browserPrompt = regexp.MustCompile(`open this link in a browser on this machine: (\S+)`)

// TestOIDCLoginBrowserFlow signs carol in from the CLI with `login
// --browser`: the link it prints starts the gateway's sign-in at the real
// provider, which ends at the CLI's loopback listener; the key it
// redeems works and is carol's. The handed-over code is useless without
// the CLI's verifier.
func TestOIDCLoginBrowserFlow(t *testing.T) {
	s := startIdentity(t, "")
	g := s.g
	home := t.TempDir()
	out, handedOver := browserLogin(t, s, home, "carol", "--browser")
	if !strings.Contains(out, "Signed in as carol@example.com (role auditor)") {
		t.Errorf("login --browser said:\n%s", out)
	}
	k := printKey(t, home)
	if st, body := chat(t, g, k); st != http.StatusOK {
		t.Errorf("chat with carol's key: %d %s", st, body)
	}
	// What the browser's history holds cannot be redeemed without the verifier.
	st, _, body := g.do(t, http.MethodPost, "/auth/oidc/token", "", `{"cli_code":"`+handedOver+`","code_verifier":"`+strings.Repeat("a", 43)+`"}`)
	if handedOver == "" || st != http.StatusUnauthorized || !strings.Contains(string(body), "code_verifier") {
		t.Errorf("redeeming the handed-over code with a wrong verifier: %d %s", st, body)
	}
}

// browserLogin runs `caddy modelgate login --no-open` with args, signs
// user in at the link it prints as a browser on the same machine would,
// and returns what the CLI printed and the code handed to its listener.
func browserLogin(t *testing.T, s identitySetup, home, user string, args ...string) (out, handedOver string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, testbin.Path(t), append([]string{"modelgate", "login", "--no-open", "--gateway", s.g.base}, args...)...)
	cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+home, "HOME="+home)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stderr)
	var link string
	var printed bytes.Buffer
	for sc.Scan() {
		printed.WriteString(sc.Text() + "\n")
		if m := browserPrompt.FindStringSubmatch(sc.Text()); m != nil {
			link = m[1]
			break
		}
	}
	if link == "" {
		_ = cmd.Wait()
		t.Fatalf("login printed no browser link:\n%s", printed.String())
	}
	b := newBrowserless(t)
	b.c.CheckRedirect = func(req *http.Request, _ []*http.Request) error {
		if req.URL.Path == "/callback" {
			handedOver = req.URL.Query().Get("cli_code")
		}
		return http.ErrUseLastResponse
	}
	b.visit(http.MethodGet, link, nil)
	b.signIn(s.issuer, user)
	if !strings.Contains(b.body, "Signed in to Modelgate") {
		t.Errorf("the browser's last page (%s, %d): %.300s", b.last, b.status, b.body)
	}
	for sc.Scan() {
		printed.WriteString(sc.Text() + "\n")
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("login %v: %v\n%s", args, err, printed.String())
	}
	return printed.String(), handedOver
}

// oidcStatus is GET /auth/oidc/status of a gateway whose provider is up.
func oidcStatus(t *testing.T, g *gateway) map[string]any {
	t.Helper()
	st, _, body := g.do(t, http.MethodGet, "/auth/oidc/status", "", "")
	var m map[string]any
	if st != http.StatusOK || json.Unmarshal(body, &m) != nil || m["ready"] != true {
		t.Fatalf("status: %d %s", st, body)
	}
	return m
}

// TestOIDCDeviceFlowRefused: with the test IdP's client registered
// without the device grant (the provider still has the flow), the
// gateway's device call answers naming the refusal and suggesting
// `login --browser`, /auth/oidc/status stops claiming device_flow and
// says why, and `caddy modelgate login` says so and signs in through the
// browser instead.
func TestOIDCDeviceFlowRefused(t *testing.T) {
	s := startIdentity(t, "", "DEVICE_GRANT=0")
	g := s.g
	status := func() map[string]any { return oidcStatus(t, g) }
	if m := status(); m["device_flow"] != true || m["device_flow_confirmed"] != false {
		t.Errorf("status before any try: %v; the provider advertises the flow, and no try has said whether this client may use it", m)
	}
	st, _, body := g.do(t, http.MethodPost, "/auth/oidc/device", "", "{}")
	if st != http.StatusNotImplemented || !strings.Contains(string(body), "refused the device flow for client modelgate") || !strings.Contains(string(body), "caddy modelgate login --browser") {
		t.Errorf("device authorization for a client without the grant: %d %s", st, body)
	}
	if m := status(); m["device_flow"] != false || m["device_flow_confirmed"] != false || !strings.Contains(fmt.Sprint(m["device_flow_error"]), "refused the device flow") {
		t.Errorf("status after the refusal: %v, want device_flow false naming it", m)
	}
	home := t.TempDir()
	out, _ := browserLogin(t, s, home, "bob")
	if !strings.Contains(out, "The device flow is not available") || !strings.Contains(out, "--browser") ||
		!strings.Contains(out, "Signed in as bob@example.com") {
		t.Errorf("login against a client without the device grant said:\n%s", out)
	}
	if st, body := chat(t, g, printKey(t, home)); st != http.StatusOK {
		t.Errorf("chat with bob's key: %d %s", st, body)
	}
}
