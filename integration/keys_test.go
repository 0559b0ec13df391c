package integration

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/fakes"
)

// createdKey is the answer to a key create.
type createdKey struct {
	ID             string   `json:"id"`
	Type           string   `json:"type"`
	Name           string   `json:"name"`
	Status         string   `json:"status"`
	Value          string   `json:"value"`
	PartialKeyHint string   `json:"partial_key_hint"`
	Models         []string `json:"models"`
	CreatedBy      struct {
		Type string `json:"type"`
	} `json:"created_by"`
	Budget *struct {
		Amount string `json:"amount"`
		Period string `json:"period"`
	} `json:"budget"`
	RPM *int64 `json:"rpm"`
}

func createKey(t *testing.T, g *gateway, body string) createdKey {
	t.Helper()
	status, _, out := g.do(t, "POST", "/v1/organizations/api_keys", adminKey, body)
	var k createdKey
	if status != 200 || json.Unmarshal(out, &k) != nil || k.Value == "" {
		t.Fatalf("create key: %d %s", status, out)
	}
	return k
}

func chatStatus(t *testing.T, g *gateway, key, alias string) int {
	t.Helper()
	status, _, _ := g.do(t, "POST", "/v1/chat/completions", key, `{"model":"`+alias+`","messages":[{"role":"user","content":"hi"}]}`)
	return status
}

// waitStatus polls until the chat answers want, for at most 2 seconds:
// the time a key change may take to reach an instance.
func waitStatus(t *testing.T, g *gateway, key, alias string, want int) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		got := chatStatus(t, g, key, alias)
		if got == want {
			return time.Since(start)
		}
		if time.Since(start) > 2*time.Second {
			t.Fatalf("after 2s the key still gets %d, want %d", got, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestRuntimeKeys: an admin creates a key through the admin API, its
// secret works at once with the models it was given, it is listed next to
// the Caddyfile's keys, and revoking it takes effect.
func TestRuntimeKeys(t *testing.T) {
	u := startUpstreams(t, fakes.Options{})
	g := startGateway(t, gatewayConfig{models: u.modelsYAML()})

	k := createKey(t, g, `{"name":"alice-laptop","models":["echo"],"budget":{"amount":"5000","period":"monthly"},"rpm":60}`)
	if !strings.HasPrefix(k.ID, "apikey_") || !strings.HasPrefix(k.Value, "sk-mg-") || k.Status != "active" || k.Type != "api_key" ||
		k.CreatedBy.Type != "admin_api" || k.Budget == nil || k.Budget.Amount != "5000" || k.RPM == nil || *k.RPM != 60 ||
		strings.Contains(k.PartialKeyHint, k.Value[10:30]) {
		t.Fatalf("created %+v", k)
	}
	if got := chatStatus(t, g, k.Value, "echo"); got != 200 {
		t.Fatalf("new key on its model: %d", got)
	}
	if got := chatStatus(t, g, k.Value, "oa"); got != 403 {
		t.Errorf("new key on a model it was not given: %d", got)
	}

	// The secret is answered once: never in a get or a list.
	status, _, out := g.do(t, "GET", "/v1/organizations/api_keys/"+k.ID, adminKey, "")
	if status != 200 || strings.Contains(string(out), k.Value) || strings.Contains(string(out), `"value"`) {
		t.Errorf("get: %d %s", status, out)
	}
	status, _, out = g.do(t, "GET", "/v1/organizations/api_keys?limit=2", adminKey, "")
	var page struct {
		Data []struct {
			ID        string `json:"id"`
			CreatedBy struct {
				Type string `json:"type"`
			} `json:"created_by"`
		} `json:"data"`
		HasMore bool   `json:"has_more"`
		LastID  string `json:"last_id"`
	}
	if status != 200 || json.Unmarshal(out, &page) != nil || len(page.Data) != 2 || !page.HasMore || page.Data[0].CreatedBy.Type != "config" {
		t.Fatalf("list: %d %s", status, out)
	}
	_, _, out = g.do(t, "GET", "/v1/organizations/api_keys?after_id="+page.LastID, adminKey, "")
	if !strings.Contains(string(out), k.ID) {
		t.Errorf("second page lacks the runtime key: %s", out)
	}

	// Caddyfile keys are edited in the Caddyfile.
	if status, _, out := g.do(t, "POST", "/v1/organizations/api_keys/alice", adminKey, `{"status":"inactive"}`); status != 400 || !strings.Contains(string(out), "Caddyfile") {
		t.Errorf("update of a static key: %d %s", status, out)
	}
	// Bad input names the field.
	for body, field := range map[string]string{
		`{"name":"x","colour":"red"}`:                              "colour: unknown field",
		`{"name":"x","rpm":-1}`:                                    "rpm",
		`{"name":"x","budget":{"amount":"12.5","period":"daily"}}`: "budget.amount",
		`{"name":"x","budget":{"amount":"100","period":"hourly"}}`: "budget.period",
		`{"name":"x","workspace_id":"nowhere"}`:                    "workspace_id",
		`{"models":["echo"]}`:                                      "name",
	} {
		if status, _, out := g.do(t, "POST", "/v1/organizations/api_keys", adminKey, body); status != 400 || !strings.Contains(string(out), field) {
			t.Errorf("%s: %d %s, want a 400 naming %s", body, status, out, field)
		}
	}
	// Only the admin key manages keys.
	if status, _, _ := g.do(t, "POST", "/v1/organizations/api_keys", aliceKey, `{"name":"mine"}`); status != 403 {
		t.Errorf("a user key created a key: %d", status)
	}

	// Revoking takes effect; reactivating too.
	if status, _, out := g.do(t, "POST", "/v1/organizations/api_keys/"+k.ID, adminKey, `{"status":"inactive"}`); status != 200 || !strings.Contains(string(out), `"status":"inactive"`) {
		t.Fatalf("revoke: %d %s", status, out)
	}
	status, _, out = g.do(t, "POST", "/v1/chat/completions", k.Value, `{"model":"echo","messages":[{"role":"user","content":"hi"}]}`)
	if status != 401 || !strings.Contains(string(out), "inactive") {
		t.Errorf("revoked key: %d %s", status, out)
	}
	g.do(t, "POST", "/v1/organizations/api_keys/"+k.ID, adminKey, `{"status":"active","models":["echo","oa"]}`)
	if got := chatStatus(t, g, k.Value, "oa"); got != 200 {
		t.Errorf("reactivated key with a new model: %d", got)
	}

	// A key past its expiry is refused, saying so, and listed as expired.
	old := createKey(t, g, `{"name":"temp","expires_at":"2020-01-01T00:00:00Z"}`)
	if status, _, body := g.do(t, "POST", "/v1/chat/completions", old.Value, `{"model":"echo","messages":[{"role":"user","content":"hi"}]}`); status != 401 || !strings.Contains(string(body), "expired") {
		t.Errorf("expired key: %d %s", status, body)
	}
	if _, _, body := g.do(t, "GET", "/v1/organizations/api_keys/"+old.ID, adminKey, ""); !strings.Contains(string(body), `"status":"expired"`) {
		t.Errorf("expired key's status: %s", body)
	}

	// Workspaces: created, named by keys, archived.
	status, _, out = g.do(t, "POST", "/v1/organizations/workspaces", adminKey, `{"name":"data-team","budget":{"amount":"10000","period":"weekly"}}`)
	var ws struct {
		ID   string `json:"id"`
		Type string `json:"type"`
	}
	if status != 200 || json.Unmarshal(out, &ws) != nil || !strings.HasPrefix(ws.ID, "wrkspc_") || ws.Type != "workspace" {
		t.Fatalf("create workspace: %d %s", status, out)
	}
	k2 := createKey(t, g, `{"name":"etl","workspace_id":"`+ws.ID+`"}`)
	if got := chatStatus(t, g, k2.Value, "echo"); got != 200 {
		t.Errorf("key of a runtime workspace: %d", got)
	}
	if status, _, out := g.do(t, "POST", "/v1/organizations/workspaces/"+ws.ID+"/archive", adminKey, ""); status != 200 || !strings.Contains(string(out), `"archived_at":"`) {
		t.Errorf("archive: %d %s", status, out)
	}
	if _, _, out := g.do(t, "GET", "/v1/organizations/workspaces", adminKey, ""); strings.Contains(string(out), ws.ID) {
		t.Errorf("archived workspace listed: %s", out)
	}

	// Requests are recorded under the key's id.
	g.stop(t)
	n := 0
	for _, rec := range g.ledgerRecords(t) {
		if rec.KeyID == k.ID {
			n++
		}
	}
	if n < 2 {
		t.Errorf("%d records under %s", n, k.ID)
	}
}

// TestRuntimeKeysAcrossInstances: on one PostgreSQL, a key created on one
// instance works on the other, and a revoke on either reaches the other
// within 2 seconds.
func TestRuntimeKeysAcrossInstances(t *testing.T) {
	dsn, _, _ := freshSchema(t)
	up := startUpstreams(t, fakes.Options{})
	cfg := gatewayConfig{models: up.modelsYAML(), ledgerLine: "ledger postgres {env.DATABASE_URL}", env: []string{"DATABASE_URL=" + dsn.String()}}
	a, b := startGateway(t, cfg), startGateway(t, cfg)
	k := createKey(t, a, `{"name":"shared"}`)
	took := waitStatus(t, b, k.Value, "echo", 200)
	t.Logf("a key created on one instance worked on the other after %v", took)
	if status, _, out := b.do(t, "POST", "/v1/organizations/api_keys/"+k.ID, adminKey, `{"status":"archived"}`); status != 200 {
		t.Fatalf("revoke on b: %d %s", status, out)
	}
	took = waitStatus(t, a, k.Value, "echo", 401)
	t.Logf("a revoke on one instance reached the other after %v", took)
}

// TestKeysCommand drives `caddy modelgate keys` against a running gateway
// as an admin would from a terminal and from a script.
func TestKeysCommand(t *testing.T) {
	u := startUpstreams(t, fakes.Options{})
	g := startGateway(t, gatewayConfig{models: u.pricedModels()})
	env := []string{"MODELGATE_ADMIN_KEY=" + adminKey}
	run := func(args ...string) string {
		t.Helper()
		out, stderr, err := caddyCmd(t, env, append([]string{"modelgate", "--gateway", g.base}, args...)...)
		if err != nil {
			t.Fatalf("caddy modelgate %v: %v\n%s%s", args, err, out, stderr)
		}
		return out
	}
	out := run("keys", "create", "--name", "ci-runner", "--models", "echo", "--budget", "50:monthly", "--rpm", "30")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	secret := lines[len(lines)-1]
	if !strings.HasPrefix(secret, "sk-mg-") || !strings.Contains(out, "$50.00 monthly") || !strings.Contains(out, "shown once") {
		t.Fatalf("create printed:\n%s", out)
	}
	if got := chatStatus(t, g, secret, "echo"); got != 200 {
		t.Fatalf("the printed secret: %d", got)
	}
	var id string
	for _, l := range lines {
		if f := strings.Fields(l); len(f) == 2 && f[0] == "id" {
			id = f[1]
		}
	}
	list := run("keys", "list")
	for _, want := range []string{"ID", "alice", "Caddyfile", id, "ci-runner", "$50.00/monthly"} {
		if !strings.Contains(list, want) {
			t.Errorf("list lacks %q:\n%s", want, list)
		}
	}
	var keys []struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal([]byte(run("keys", "list", "--json")), &keys); err != nil || len(keys) < 4 {
		t.Errorf("list --json: %v %v", err, keys)
	}
	if out := run("keys", "update", id, "--models", "echo,oa"); !strings.Contains(out, "echo, oa") {
		t.Errorf("update printed:\n%s", out)
	}
	if got := chatStatus(t, g, secret, "oa"); got != 200 {
		t.Fatalf("a priced request: %d", got)
	}
	var usage string
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		// The key's earlier free echo requests show too now: wait for
		// the priced one's row, not the key's first.
		if usage = run("usage", "--days", "1"); strings.Contains(usage, id) && strings.Contains(usage, " oa ") {
			break
		}
	}
	if !strings.Contains(usage, "SPEND") || !strings.Contains(usage, id) || !strings.Contains(usage, "oa") || !strings.Contains(usage, "total") {
		t.Errorf("usage printed:\n%s", usage)
	}
	run("keys", "revoke", id)
	if got := chatStatus(t, g, secret, "echo"); got != 401 {
		t.Errorf("a revoked key: %d", got)
	}
	// Mistakes are the user's to fix, and say how.
	_, stderr, err := caddyCmd(t, []string{"MODELGATE_ADMIN_KEY="}, "modelgate", "--gateway", g.base, "keys", "list")
	if err == nil || !strings.Contains(stderr, "MODELGATE_ADMIN_KEY") {
		t.Errorf("no admin key: %v %s", err, stderr)
	}
	_, stderr, err = caddyCmd(t, env, "modelgate", "--gateway", g.base, "keys", "create", "--name", "x", "--budget", "lots")
	if err == nil || !strings.Contains(stderr, "--budget") {
		t.Errorf("bad budget: %v %s", err, stderr)
	}
}
