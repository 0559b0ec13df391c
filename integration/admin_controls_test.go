package integration

import (
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/modelgate/modelgate/internal/fakes"
)

// TestArchivedWorkspaceAcrossInstances: on one PostgreSQL, archiving a
// spent workspace on one instance refuses its keys on the other within 2
// seconds (it used to lift the workspace's limits instead, so its keys ran
// unlimited), naming the workspace; nothing reactivates it or its keys.
func TestArchivedWorkspaceAcrossInstances(t *testing.T) {
	dsn, _, _ := freshSchema(t)
	up := startUpstreams(t, fakes.Options{})
	cfg := gatewayConfig{models: up.pricedModels(), ledgerLine: "ledger postgres {env.DATABASE_URL}", env: []string{"DATABASE_URL=" + dsn.String()}}
	a, b := startGateway(t, cfg), startGateway(t, cfg)
	status, _, out := a.do(t, "POST", "/v1/organizations/workspaces", adminKey, `{"name":"tight","budget":{"amount":"1","period":"monthly"},"rpm":1000}`)
	var ws struct {
		ID string `json:"id"`
	}
	if status != 200 || json.Unmarshal(out, &ws) != nil {
		t.Fatalf("create workspace: %d %s", status, out)
	}
	k := createKey(t, a, `{"name":"in-tight","workspace_id":"`+ws.ID+`"}`)
	waitStatus(t, b, k.Value, "oa", 200)
	if status, _, out := a.do(t, "POST", "/v1/organizations/workspaces/"+ws.ID+"/archive", adminKey, ""); status != 200 {
		t.Fatalf("archive: %d %s", status, out)
	}
	took := waitStatus(t, b, k.Value, "oa", 403)
	t.Logf("an archive on one instance refused the workspace's key on the other after %v", took)
	for _, g := range []*gateway{a, b} {
		for _, p := range []struct{ path, body string }{
			{"/v1/chat/completions", `{"model":"echo","messages":[{"role":"user","content":"hi"}]}`},
			{"/v1/messages", `{"model":"echo","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`},
		} {
			status, _, out := g.do(t, "POST", p.path, k.Value, p.body)
			if status != 403 || !strings.Contains(string(out), ws.ID) || !strings.Contains(string(out), "archived") {
				t.Errorf("%s after archive: %d %s", p.path, status, out)
			}
		}
	}
	if status, _, out := b.do(t, "POST", "/v1/organizations/workspaces/"+ws.ID, adminKey, `{"status":"active"}`); status != 400 || !strings.Contains(string(out), "status") {
		t.Errorf("reactivate workspace: %d %s", status, out)
	}
	// An archived key stays archived.
	k2 := createKey(t, a, `{"name":"gone"}`)
	a.do(t, "POST", "/v1/organizations/api_keys/"+k2.ID, adminKey, `{"status":"archived"}`)
	if status, _, out := b.do(t, "POST", "/v1/organizations/api_keys/"+k2.ID, adminKey, `{"status":"active"}`); status != 400 || !strings.Contains(string(out), "status:") {
		t.Errorf("reactivate archived key: %d %s", status, out)
	}
	waitStatus(t, b, k2.Value, "echo", 401)
}

// TestConcurrentKeyUpdates: a revoke and an rpm edit of one key, sent at
// once, 20 times to one instance and 20 times across two on one
// PostgreSQL: the archive applies every time, the rpm edit applies when
// it lands first and is refused (400, archived is final) after, and the
// key never ends active (a whole-row write of a stale copy undid 5
// revokes in 20).
func TestConcurrentKeyUpdates(t *testing.T) {
	dsn, _, _ := freshSchema(t)
	up := startUpstreams(t, fakes.Options{})
	cfg := gatewayConfig{models: up.modelsYAML(), ledgerLine: "ledger postgres {env.DATABASE_URL}", env: []string{"DATABASE_URL=" + dsn.String()}}
	a, b := startGateway(t, cfg), startGateway(t, cfg)
	for _, pair := range []struct {
		name       string
		first, sec *gateway
	}{{"one instance", a, a}, {"two instances", a, b}} {
		for trial := range 20 {
			k := createKey(t, a, `{"name":"race"}`)
			var wg sync.WaitGroup
			var rpmApplied atomic.Bool
			for i, g := range []*gateway{pair.first, pair.sec} {
				body := []string{`{"status":"archived"}`, `{"rpm":5}`}[i]
				wg.Add(1)
				go func() {
					defer wg.Done()
					status, _, out := g.do(t, "POST", "/v1/organizations/api_keys/"+k.ID, adminKey, body)
					refusedAfterArchive := status == 400 && i == 1 && strings.Contains(string(out), "archived, which is final")
					if status != 200 && !refusedAfterArchive {
						t.Errorf("%s: %d %s", body, status, out)
					}
					if i == 1 {
						rpmApplied.Store(status == 200)
					}
				}()
			}
			wg.Wait()
			_, _, out := b.do(t, "GET", "/v1/organizations/api_keys/"+k.ID, adminKey, "")
			var got struct {
				Status string `json:"status"`
				RPM    *int64 `json:"rpm"`
			}
			if json.Unmarshal(out, &got) != nil || got.Status != "archived" {
				t.Fatalf("%s, trial %d: %s, want archived", pair.name, trial, out)
			}
			if hasRPM := got.RPM != nil && *got.RPM == 5; hasRPM != rpmApplied.Load() {
				t.Fatalf("%s, trial %d: %s: the rpm edit answered 200 = %v, but the key has rpm 5 = %v", pair.name, trial, out, rpmApplied.Load(), hasRPM)
			}
		}
	}
}

// TestBudgetZeroThroughTheBinary: a budget of $0 refuses paid use at once
// (it used to mean no budget), /v1/me shows it, and a free local model
// is still served under it.
func TestBudgetZeroThroughTheBinary(t *testing.T) {
	up := startUpstreams(t, fakes.Options{})
	g := startGateway(t, gatewayConfig{models: up.pricedModels()})
	k := createKey(t, g, `{"name":"stopped","budget":{"amount":"0","period":"monthly"}}`)
	if k.Budget == nil || k.Budget.Amount != "0" {
		t.Fatalf("budget 0 answered as %+v", k.Budget)
	}
	status, _, out := g.do(t, "POST", "/v1/chat/completions", k.Value, `{"model":"oa","messages":[{"role":"user","content":"hi"}]}`)
	if status != 429 || !strings.Contains(string(out), "budget_exceeded") {
		t.Errorf("paid model on a $0 budget: %d %s", status, out)
	}
	if got := chatStatus(t, g, k.Value, "echo"); got != 200 {
		t.Errorf("free model on a $0 budget: %d", got)
	}
	_, _, out = g.do(t, "GET", "/v1/me", k.Value, "")
	if !strings.Contains(string(out), `"amount":"0"`) {
		t.Errorf("/v1/me: %s", out)
	}
	// null removes it.
	if status, _, out := g.do(t, "POST", "/v1/organizations/api_keys/"+k.ID, adminKey, `{"budget":null}`); status != 200 || !strings.Contains(string(out), `"budget":null`) {
		t.Fatalf("budget null: %d %s", status, out)
	}
	if got := chatStatus(t, g, k.Value, "oa"); got != 200 {
		t.Errorf("paid model without a budget: %d", got)
	}
	// Past the largest amount is a 400 naming the field, not a lock-out.
	if status, _, out := g.do(t, "POST", "/v1/organizations/api_keys", adminKey, `{"name":"big","budget":{"amount":"1000000000","period":"monthly"}}`); status != 400 || !strings.Contains(string(out), "budget.amount") {
		t.Errorf("$10M budget: %d %s", status, out)
	}
	// NUL in a name, or in a Responses id, is the client's error.
	if status, _, out := g.do(t, "POST", "/v1/organizations/api_keys", adminKey, `{"name":"a\u0000b"}`); status != 400 || !strings.Contains(string(out), "name:") {
		t.Errorf("NUL name: %d %s", status, out)
	}
}
