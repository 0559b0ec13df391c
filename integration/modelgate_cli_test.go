package integration

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/fakes"
)

// TestModelgateCLIOverTLSInternal: `caddy modelgate` reaches a gateway
// whose certificate comes from Caddy's internal CA, trusting its root with
// --ca-cert or with SSL_CERT_FILE; without either, the error says how.
func TestModelgateCLIOverTLSInternal(t *testing.T) {
	u := startUpstreams(t, fakes.Options{})
	g := startGateway(t, gatewayConfig{models: u.modelsYAML(), tls: true})
	root := filepath.Join(g.dir, "data", "caddy", "pki", "authorities", "local", "root.crt")
	if _, err := os.Stat(root); err != nil {
		t.Fatalf("Caddy's local root: %v", err)
	}
	env := []string{"MODELGATE_ADMIN_KEY=" + adminKey}

	_, stderr, err := caddyCmd(t, env, "modelgate", "--gateway", g.base, "keys", "list")
	if err == nil || !strings.Contains(stderr, "unknown authority") || !strings.Contains(stderr, "--ca-cert") || !strings.Contains(stderr, "SSL_CERT_FILE") {
		t.Errorf("untrusted CA: %v\n%s", err, stderr)
	}
	out, stderr, err := caddyCmd(t, env, "modelgate", "--gateway", g.base, "--ca-cert", root, "keys", "list")
	if err != nil || !strings.Contains(out, "alice") {
		t.Errorf("--ca-cert: %v\n%s%s", err, out, stderr)
	}
	out, stderr, err = caddyCmd(t, append(env, "SSL_CERT_FILE="+root), "modelgate", "--gateway", g.base, "keys", "list")
	if err != nil || !strings.Contains(out, "alice") {
		t.Errorf("SSL_CERT_FILE: %v\n%s%s", err, out, stderr)
	}
	notPEM := filepath.Join(t.TempDir(), "ca.txt")
	if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, stderr, err = caddyCmd(t, env, "modelgate", "--gateway", g.base, "--ca-cert", notPEM, "keys", "list")
	if err == nil || !strings.Contains(stderr, "--ca-cert") || !strings.Contains(stderr, "no PEM certificate") {
		t.Errorf("a --ca-cert without a certificate: %v\n%s", err, stderr)
	}
}

// TestKeysCreateChecksWorkspaceAndModels: --workspace takes a runtime
// workspace's name (resolved to its wrkspc_ id) as well as an id or a
// Caddyfile workspace; an unknown workspace and an alias the gateway does
// not serve are refused naming them, before any key is made.
func TestKeysCreateChecksWorkspaceAndModels(t *testing.T) {
	u := startUpstreams(t, fakes.Options{})
	g := startGateway(t, gatewayConfig{models: u.modelsYAML()})
	status, _, body := g.do(t, "POST", "/v1/organizations/workspaces", adminKey, `{"name":"research"}`)
	if status != 200 {
		t.Fatalf("creating a workspace: %d %s", status, body)
	}
	var ws struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(body, &ws); err != nil || !strings.HasPrefix(ws.ID, "wrkspc_") {
		t.Fatalf("workspace: %v %s", err, body)
	}
	env := []string{"MODELGATE_ADMIN_KEY=" + adminKey}
	run := func(args ...string) (string, string, error) {
		return caddyCmd(t, env, append([]string{"modelgate", "--gateway", g.base, "--json"}, args...)...)
	}
	for _, tc := range []struct{ name, workspace, want string }{
		{"by-name", "research", ws.ID},
		{"by-id", ws.ID, ws.ID},
		{"caddyfile", "frontend", "frontend"},
	} {
		out, stderr, err := run("keys", "create", "--name", tc.name, "--workspace", tc.workspace, "--models", "echo,oa")
		if err != nil {
			t.Fatalf("--workspace %s: %v\n%s", tc.workspace, err, stderr)
		}
		var k struct {
			WorkspaceID string   `json:"workspace_id"`
			Models      []string `json:"models"`
		}
		if err := json.Unmarshal([]byte(out), &k); err != nil || k.WorkspaceID != tc.want || len(k.Models) != 2 {
			t.Errorf("--workspace %s: %v %s, want workspace %s", tc.workspace, err, out, tc.want)
		}
	}
	before := listKeyNames(t, g)
	_, stderr, err := run("keys", "create", "--name", "typo", "--workspace", "reserch")
	if err == nil || !strings.Contains(stderr, `--workspace: no workspace named or with id "reserch"`) || !strings.Contains(stderr, "research ("+ws.ID+")") {
		t.Errorf("an unknown workspace: %v\n%s", err, stderr)
	}
	_, stderr, err = run("keys", "create", "--name", "typo", "--models", "echo,nosuchalias")
	if err == nil || !strings.Contains(stderr, `--models: "nosuchalias" is not a model of this gateway`) || !strings.Contains(stderr, "echo") {
		t.Errorf("an unknown alias: %v\n%s", err, stderr)
	}
	if after := listKeyNames(t, g); after != before {
		t.Errorf("a refused create made a key: %s → %s", before, after)
	}
	// update checks the same way.
	var id string
	out, _, _ := run("keys", "list")
	var keys []struct{ ID, Name string }
	_ = json.Unmarshal([]byte(out), &keys)
	for _, k := range keys {
		if k.Name == "by-name" {
			id = k.ID
		}
	}
	if _, stderr, err = run("keys", "update", id, "--models", "lama"); err == nil || !strings.Contains(stderr, `"lama"`) {
		t.Errorf("update with an unknown alias: %v\n%s", err, stderr)
	}
	if out, stderr, err = run("keys", "update", id, "--workspace", "frontend"); err != nil || !strings.Contains(out, `"workspace_id":"frontend"`) {
		t.Errorf("update --workspace frontend: %v\n%s%s", err, out, stderr)
	}
}

func listKeyNames(t *testing.T, g *gateway) string {
	t.Helper()
	status, _, body := g.do(t, "GET", "/v1/organizations/api_keys?limit=1000", adminKey, "")
	if status != 200 {
		t.Fatalf("listing keys: %d %s", status, body)
	}
	var page struct{ Data []struct{ Name string } }
	if err := json.Unmarshal(body, &page); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, k := range page.Data {
		names = append(names, k.Name)
	}
	return strings.Join(names, ",")
}

// TestModelgateUsageShowsFreeModels: usage lists a free local model's
// requests by their count and tokens (not only priced models' spend), and
// --json on a gateway that served nothing prints [], not null.
func TestModelgateUsageShowsFreeModels(t *testing.T) {
	u := startUpstreams(t, fakes.Options{})
	g := startGateway(t, gatewayConfig{models: u.modelsYAML()})
	env := []string{"MODELGATE_ADMIN_KEY=" + adminKey}
	out, stderr, err := caddyCmd(t, env, "modelgate", "--gateway", g.base, "--json", "usage")
	if err != nil || strings.TrimSpace(out) != "[]" {
		t.Errorf("usage --json on an empty ledger: %v %q %s", err, out, stderr)
	}
	if got := chatStatus(t, g, aliceKey, "echo"); got != 200 {
		t.Fatalf("echo: %d", got)
	}
	var rows []struct {
		Key          string  `json:"api_key_id"`
		Model        string  `json:"model"`
		Requests     int64   `json:"requests"`
		InputTokens  int64   `json:"input_tokens"`
		OutputTokens int64   `json:"output_tokens"`
		Cents        float64 `json:"cents"`
	}
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end) && len(rows) == 0; time.Sleep(100 * time.Millisecond) {
		out, stderr, err = caddyCmd(t, env, "modelgate", "--gateway", g.base, "--json", "usage", "--days", "40")
		if err != nil {
			t.Fatalf("usage --json: %v %s", err, stderr)
		}
		if err := json.Unmarshal([]byte(out), &rows); err != nil {
			t.Fatalf("usage --json: %v %s", err, out)
		}
	}
	if len(rows) != 1 || rows[0].Key != "alice" || rows[0].Model != "echo" || rows[0].Requests != 1 || rows[0].InputTokens == 0 || rows[0].OutputTokens == 0 || rows[0].Cents != 0 {
		t.Fatalf("usage --json after one echo request: %s", out)
	}
	table, stderr, err := caddyCmd(t, env, "modelgate", "--gateway", g.base, "usage")
	if err != nil {
		t.Fatalf("usage: %v %s", err, stderr)
	}
	for _, want := range []string{"REQUESTS", "INPUT", "OUTPUT", "SPEND", "alice", "echo", "$0.0000"} {
		if !strings.Contains(table, want) {
			t.Errorf("usage table lacks %q:\n%s", want, table)
		}
	}
	// The echo row: day, key, model, then its one request.
	for _, line := range strings.Split(table, "\n") {
		if f := strings.Fields(line); len(f) > 3 && f[2] == "echo" && f[3] != "1" {
			t.Errorf("usage table's echo row counts %s requests, want 1:\n%s", f[3], table)
		}
	}
}
