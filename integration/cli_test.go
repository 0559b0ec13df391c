package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/modelgate/modelgate/caddymodule"
	"github.com/modelgate/modelgate/internal/testbin"
	"github.com/modelgate/modelgate/ledger"
)

func repoRoot(t *testing.T) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..")
}

// caddyCmd runs the binary to completion with a bounded time.
func caddyCmd(t *testing.T, env []string, args ...string) (string, string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, testbin.Path(t), args...)
	dir := t.TempDir()
	cmd.Env = append(os.Environ(), "XDG_DATA_HOME="+filepath.Join(dir, "data"), "XDG_CONFIG_HOME="+filepath.Join(dir, "config"), "HOME="+dir)
	cmd.Env = append(cmd.Env, env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return stdout.String(), stderr.String(), err
}

func TestListModules(t *testing.T) {
	out, _, err := caddyCmd(t, nil, "list-modules")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"modelgate", "http.handlers.llm_auth", "http.handlers.llm_gateway", "http.handlers.llm_admin"} {
		if !strings.Contains(out, "\n"+m+"\n") && !strings.HasPrefix(out, m+"\n") {
			t.Errorf("list-modules lacks %s", m)
		}
	}
}

// TestVersionNamesModelgate: caddy version and caddy build-info say which
// Modelgate the binary is, not Caddy's alone or (devel).
func TestVersionNamesModelgate(t *testing.T) {
	out, stderr, err := caddyCmd(t, nil, "version")
	if err != nil || !strings.HasPrefix(out, "Modelgate "+caddymodule.Version+" on Caddy v2.") {
		t.Errorf("caddy version: %v %q %s", err, out, stderr)
	}
	out, stderr, err = caddyCmd(t, nil, "build-info")
	if err != nil || !strings.Contains(out, "github.com/modelgate/modelgate\t"+caddymodule.Version) || strings.Contains(out, "(devel)") {
		t.Errorf("caddy build-info: %v\n%s%s", err, out, stderr)
	}
}

// TestAdaptExample adapts Caddyfile.example: directives order themselves
// (auth, then admin, then gateway) and secrets stay placeholders.
func TestAdaptExample(t *testing.T) {
	out, stderr, err := caddyCmd(t, nil, "adapt", "--config", filepath.Join(repoRoot(t), "Caddyfile.example"))
	if err != nil {
		t.Fatalf("adapt: %v\n%s", err, stderr)
	}
	for _, want := range []string{`"{env.ALICE_KEY}"`, `"{env.GATEWAY_ADMIN_KEY}"`, `"models":"/etc/modelgate/models.yaml"`, `"modelgate":{"ledger":{"driver":"sqlite","dsn":"/var/lib/modelgate/ledger.db"}}`} {
		if !strings.Contains(out, want) {
			t.Errorf("adapted JSON lacks %s", want)
		}
	}
	auth, admin, gw := strings.Index(out, `"handler":"llm_auth"`), strings.Index(out, `"handler":"llm_admin"`), strings.Index(out, `"handler":"llm_gateway"`)
	if auth < 0 || !(auth < admin && admin < gw) {
		t.Errorf("handler order auth=%d admin=%d gateway=%d; want auth < admin < gateway", auth, admin, gw)
	}
}

// TestAdaptedJSONRuns adapts a Caddyfile and runs the JSON as-is.
func TestAdaptedJSONRuns(t *testing.T) {
	dir := t.TempDir()
	port := freePort(t)
	models := "model_list:\n  - model_name: echo\n    proxy_params:\n      model: echo/echo\n"
	if err := os.WriteFile(filepath.Join(dir, "models.yaml"), []byte(models), 0o600); err != nil {
		t.Fatal(err)
	}
	cf := fmt.Sprintf("{\n\tadmin off\n\tmodelgate {\n\t\tledger sqlite %s\n\t}\n}\nhttp://127.0.0.1:%d {\n\tllm_auth {\n\t\tkey {env.ALICE_KEY}\n\t}\n\tllm_gateway {\n\t\tmodels %s\n\t}\n}\n",
		filepath.Join(dir, "l.db"), port, filepath.Join(dir, "models.yaml"))
	if err := os.WriteFile(filepath.Join(dir, "Caddyfile"), []byte(cf), 0o600); err != nil {
		t.Fatal(err)
	}
	jsonCfg, stderr, err := caddyCmd(t, nil, "adapt", "--config", filepath.Join(dir, "Caddyfile"))
	if err != nil {
		t.Fatalf("adapt: %v %s", err, stderr)
	}
	if strings.Contains(jsonCfg, aliceKey) {
		t.Fatal("adapted JSON contains the key")
	}
	if err := os.WriteFile(filepath.Join(dir, "caddy.json"), []byte(jsonCfg), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(testbin.Path(t), "run", "--config", filepath.Join(dir, "caddy.json"))
	cmd.Env = append(os.Environ(), "ALICE_KEY="+aliceKey, "XDG_DATA_HOME="+dir, "XDG_CONFIG_HOME="+dir)
	var logs syncBuffer
	cmd.Stderr = &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	body := waitChat(t, base, aliceKey, "echo", "json config works", &logs)
	if !strings.Contains(body, "json config works") {
		t.Errorf("reply: %s", body)
	}
}

// waitChat retries until the server answers, then returns the reply body.
func waitChat(t *testing.T, base, key, model, text string, logs *syncBuffer) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	payload := fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":%q}]}`, model, text)
	for {
		req, _ := http.NewRequest("POST", base+"/v1/chat/completions", strings.NewReader(payload))
		req.Header.Set("Content-Type", "application/json")
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			var b bytes.Buffer
			_, _ = b.ReadFrom(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", resp.StatusCode, b.String())
			}
			return b.String()
		}
		if time.Now().After(deadline) {
			t.Fatalf("server never answered: %v\n%s", err, logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestValidateReportsModelErrors: caddy validate names the entry, the field
// and the fix, and starts nothing (no ledger file is created).
func TestValidateReportsModelErrors(t *testing.T) {
	dir := t.TempDir()
	models := `model_list:
  - model_name: echo
    proxy_params:
      model: echo/echo
  - model_name: coder
    proxy_params:
      model: openai/qwen
      api_base: http://localhost:1234/v1
`
	if err := os.WriteFile(filepath.Join(dir, "models.yaml"), []byte(models), 0o600); err != nil {
		t.Fatal(err)
	}
	ledgerPath := filepath.Join(dir, "ledger.db")
	cf := fmt.Sprintf("{\n\tmodelgate {\n\t\tledger sqlite %s\n\t}\n}\n:0 {\n\tllm_auth {\n\t\tkey {env.ALICE_KEY}\n\t}\n\tllm_gateway {\n\t\tmodels %s\n\t}\n}\n", ledgerPath, filepath.Join(dir, "models.yaml"))
	if err := os.WriteFile(filepath.Join(dir, "Caddyfile"), []byte(cf), 0o600); err != nil {
		t.Fatal(err)
	}
	_, stderr, err := caddyCmd(t, []string{"ALICE_KEY=" + aliceKey}, "validate", "--config", filepath.Join(dir, "Caddyfile"))
	if err == nil {
		t.Fatal("validate accepted a models file with an error")
	}
	for _, want := range []string{`model_list[1]`, `coder`, `proxy_params.api_key`, `api_key: none`} {
		if !strings.Contains(stderr, want) {
			t.Errorf("validate output lacks %q:\n%s", want, stderr)
		}
	}
	if _, err := os.Stat(ledgerPath); err == nil {
		t.Error("validate created the ledger file; it must not start anything")
	}
	// An unset key variable is named, and no value is printed.
	_, stderr, err = caddyCmd(t, []string{"ALICE_KEY="}, "validate", "--config", filepath.Join(dir, "Caddyfile"))
	if err == nil || !strings.Contains(stderr, "ALICE_KEY") {
		t.Errorf("unset key: %v\n%s", err, stderr)
	}
}

// TestValidateReadsLikeACompiler: every problem of the models file in one
// run (entry errors and unknown fallback and model_aliases targets
// together, warnings beside them), one per line, file:line first, in
// plain text on stderr, not Caddy's one JSON log line; and the same lines
// from caddy gateway.
func TestValidateReadsLikeACompiler(t *testing.T) {
	dir := t.TempDir()
	models := filepath.Join(dir, "models.yaml")
	src := `model_list:
  - model_name: local
    proxy_params:
      model: olama/llama3
  - model_name: coder
    proxy_params:
      model: ollama/qwen
      api_base: http://localhost:11434/v1
  - model_name: fast
    proxy_params:
      model: echo/fast
      temprature: 0.2
router_settings:
  fallbacks:
    - coder: [local, nosuch]
model_aliases:
  claude-*: missing
`
	if err := os.WriteFile(models, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	cf := filepath.Join(dir, "Caddyfile")
	if err := os.WriteFile(cf, []byte(":0 {\n\tllm_gateway {\n\t\tmodels "+models+"\n\t}\n}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	want := []string{
		models + `:4: model_list[0] (model_name "local"): proxy_params.model: unknown provider prefix "olama"`,
		models + `:8: warning: model_list[1] (model_name "coder"): proxy_params.api_base`,
		models + `:12: model_list[2] (model_name "fast"): proxy_params: unknown field "temprature"`,
		models + `:15: router_settings.fallbacks[0].coder[1]: "nosuch" is not a model_name`,
		models + `:17: model_aliases."claude-*": "missing" is not a model_name`,
	}
	check := func(name string, want []string, stderr string, err error) {
		t.Helper()
		if err == nil {
			t.Fatalf("%s accepted the file", name)
		}
		var plain []string
		for _, l := range strings.Split(strings.TrimSpace(stderr), "\n") {
			if strings.HasPrefix(l, `{"level":"error"`) || strings.Contains(l, `\n`) {
				t.Errorf("%s: an error as a JSON log line: %s", name, l)
			}
			if !strings.HasPrefix(l, "{") {
				plain = append(plain, l)
			}
		}
		if len(plain) != len(want) {
			t.Fatalf("%s: %d plain lines, want %d:\n%s", name, len(plain), len(want), stderr)
		}
		for i, w := range want {
			found := false
			for _, l := range plain {
				found = found || strings.HasPrefix(l, w)
			}
			if !found {
				t.Errorf("%s: no line %d starting %q:\n%s", name, i, w, stderr)
			}
		}
	}
	_, stderr, err := caddyCmd(t, nil, "validate", "--config", cf, "--adapter", "caddyfile")
	check("validate", want, stderr, err)
	var errs []string
	for _, w := range want {
		if !strings.Contains(w, "warning:") {
			errs = append(errs, w)
		}
	}
	_, stderr, err = caddyCmd(t, []string{"PROXY_KEY=sk-some-long-key"}, "gateway", "--config", models, "--listen", "127.0.0.1:0")
	check("gateway", errs, stderr, err)

	// A fixed file validates.
	fixed := "model_list:\n  - model_name: local\n    proxy_params:\n      model: echo/x\n"
	if err := os.WriteFile(models, []byte(fixed), 0o600); err != nil {
		t.Fatal(err)
	}
	out, stderr, err := caddyCmd(t, nil, "validate", "--config", cf, "--adapter", "caddyfile")
	if err != nil || !strings.Contains(out, "Valid configuration") {
		t.Errorf("fixed file: %v\n%s%s", err, out, stderr)
	}
}

// TestGatewayCommand runs `caddy gateway --config` as the quick start does.
func TestGatewayCommand(t *testing.T) {
	dir := t.TempDir()
	models := filepath.Join(dir, "models.yaml")
	if err := os.WriteFile(models, []byte("model_list:\n  - model_name: echo\n    proxy_params:\n      model: echo/echo\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, stderr, err := caddyCmd(t, []string{"PROXY_KEY="}, "gateway", "--config", models)
	if err == nil || !strings.Contains(stderr, "PROXY_KEY") || !strings.Contains(stderr, "--insecure-no-auth") {
		t.Errorf("without a key: %v %s", err, stderr)
	}

	for _, noAuth := range []bool{false, true} {
		port := freePort(t)
		args := []string{"gateway", "--config", models, "--listen", fmt.Sprintf("127.0.0.1:%d", port), "--ledger", "sqlite:" + filepath.Join(dir, "l.db")}
		key := "sk-quickstart-key-123"
		if noAuth {
			args = append(args, "--insecure-no-auth")
			key = ""
		}
		cmd := exec.Command(testbin.Path(t), args...)
		cmd.Env = append(os.Environ(), "PROXY_KEY=sk-quickstart-key-123", "XDG_DATA_HOME="+dir, "XDG_CONFIG_HOME="+dir)
		var logs syncBuffer
		cmd.Stderr = &logs
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		base := fmt.Sprintf("http://127.0.0.1:%d", port)
		body := waitChat(t, base, key, "echo", "quick start", &logs)
		var resp struct {
			Choices []struct{ Message struct{ Content string } }
		}
		if err := json.Unmarshal([]byte(body), &resp); err != nil || resp.Choices[0].Message.Content != "quick start" {
			t.Errorf("reply: %s", body)
		}
		// Nothing follows the gateway in its route: every path it does not
		// serve is its 404, in the caller's shape.
		for _, p := range []string{"/nope", "/v1/nosuch"} {
			st, _, out := (&gateway{base: base}).do(t, http.MethodGet, p, key, "")
			if st != http.StatusNotFound || !strings.Contains(string(out), `"error"`) || !strings.Contains(string(out), "GET "+p) {
				t.Errorf("GET %s: %d %s", p, st, out)
			}
		}
		if !noAuth {
			r, _ := http.Post(base+"/v1/chat/completions", "application/json", strings.NewReader(`{"model":"echo","messages":[]}`))
			if r == nil || r.StatusCode != 401 {
				t.Errorf("no key accepted: %v", r)
			}
			if r != nil {
				r.Body.Close()
			}
		}
		// The banner follows caddy.Run, which returns a little after the
		// listener is up.
		for i := 0; i < 200 && !strings.Contains(logs.String(), "with models: echo"); i++ {
			time.Sleep(25 * time.Millisecond)
		}
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
		if !strings.Contains(logs.String(), "with models: echo") || strings.Contains(logs.String(), "sk-quickstart-key-123") {
			t.Errorf("startup output should list aliases and never the key:\n%s", logs.String())
		}
	}
	// Ctrl-C stops the apps, which flushes the ledger queue: each run's
	// request is on disk although the writer's batch timer never fired.
	store, err := ledger.OpenSQLite(filepath.Join(dir, "l.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	recs, err := store.Query(context.Background(), ledger.Filter{From: time.Now().Add(-time.Hour), To: time.Now().Add(time.Hour)})
	if err != nil || len(recs) != 2 {
		t.Errorf("ledger after Ctrl-C: %d records (%v), want 2", len(recs), err)
	}
}

// TestAdminKeyKindCheckedAtStartup: proxy mode refuses a key that is not
// an organization admin key, says how to get one, and never prints it.
func TestAdminKeyKindCheckedAtStartup(t *testing.T) {
	dir := t.TempDir()
	models := filepath.Join(dir, "models.yaml")
	if err := os.WriteFile(models, []byte("model_list:\n  - model_name: echo\n    proxy_params:\n      model: echo/echo\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cf := fmt.Sprintf(":0 {\n\tllm_auth {\n\t\tadmin_key {env.ADMIN_KEY}\n\t}\n\tllm_admin {\n\t\tupstream https://api.anthropic.com\n\t\tadmin_api_key {env.ADMIN_API_KEY}\n\t}\n\tllm_gateway {\n\t\tmodels %s\n\t}\n}\n", models)
	if err := os.WriteFile(filepath.Join(dir, "Caddyfile"), []byte(cf), 0o600); err != nil {
		t.Fatal(err)
	}
	const regular = "sk-ant-api03-not-an-admin-key-xyz"
	_, stderr, err := caddyCmd(t, []string{"ADMIN_KEY=" + adminKey, "ADMIN_API_KEY=" + regular}, "validate", "--config", filepath.Join(dir, "Caddyfile"))
	if err == nil || !strings.Contains(stderr, "admin_api_key") || !strings.Contains(stderr, "admin key") || strings.Contains(stderr, regular) {
		t.Errorf("regular key as admin_api_key: %v\n%s", err, stderr)
	}
	_, stderr, err = caddyCmd(t, []string{"ADMIN_KEY=" + adminKey, "ADMIN_API_KEY=sk-ant-admin01-abcdef"}, "validate", "--config", filepath.Join(dir, "Caddyfile"))
	if err != nil {
		t.Errorf("admin key refused: %v\n%s", err, stderr)
	}
}
