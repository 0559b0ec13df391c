package main

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// The gw-controls scenarios are the gateway as a team runs it with
// controls on: a PostgreSQL ledger, rate limits counted in Redis, 1,000
// runtime keys created through the admin API, and the load on one of
// them, which has a budget and rpm/tpm/max_parallel limits high enough
// never to refuse, so every request pays for the controls and none is
// turned away. They need -postgres and -redis (default
// $MODELGATE_TEST_POSTGRES and $MODELGATE_TEST_REDIS) and are skipped,
// saying so, without them.

// controlsKeys is how many runtime keys the controlled gateway holds.
const controlsKeys = 1000

// controlsEnv is the controlled gateway the gw-controls scenarios load.
type controlsEnv struct {
	gw    *child
	base  string
	admin string
	key   string // the loaded key's value
	drop  func() // drops the ledger schema
}

// controlsModelsYAML is the priced models file; with streamsUnscanned the
// stamped streams' entries turn the secret firewall off. A stamped
// stream is one word without whitespace (a Unix-nanosecond stamp per
// delta), which the firewall's stream redactor holds back whole, up to
// 256 bytes, as it would a secret's start: deltas would arrive merged
// and late, and the streams metric could no longer count them.
func controlsModelsYAML(up string, streamsUnscanned bool) string {
	var b strings.Builder
	b.WriteString(pricedModelsYAML(up))
	// Priced twins of the stamped streams and of the yardstick's mocks.
	for _, m := range []struct {
		name, model, path string
		stamped           bool
	}{
		{"priced-ts", "fake-stamped", "ts", true},
		{"priced-slow", "fake-gpt", "slow", false},
		{"priced-tf", "fake-stamped", "tf", true},
	} {
		fmt.Fprintf(&b, `  - model_name: %s
    proxy_params:
      model: openai/%s
      api_base: http://%s/%s/v1
      api_key: bench-upstream-openai
    model_info:
      input_cost_per_token: %s
      output_cost_per_token: %s
`, m.name, m.model, up, m.path, strconv.FormatFloat(pricedInputPico/1e12, 'f', -1, 64), strconv.FormatFloat(pricedOutputPico/1e12, 'f', -1, 64))
		if m.stamped && streamsUnscanned {
			b.WriteString("    secrets: {action: \"off\"}\n")
		}
	}
	return b.String()
}

// startControls starts the controlled gateway on a fresh schema of
// e.cfg.postgres and creates its keys; without PostgreSQL and Redis it
// says why the gw-controls scenarios are skipped and returns nil.
func (e *env) startControls(ctx context.Context, bin string) error {
	if e.cfg.postgres == "" || e.cfg.redis == "" {
		if e.cfg.selects("gw-controls") {
			fmt.Fprintln(os.Stderr, "bench: gw-controls skipped: it needs a PostgreSQL ledger and Redis limits (-postgres and -redis, or $MODELGATE_TEST_POSTGRES and $MODELGATE_TEST_REDIS; scripts/postgres.sh and scripts/redis.sh start both)")
		}
		return nil
	}
	if !e.cfg.selects("gw-controls") && !e.cfg.selects("s-gw-controls") {
		return nil
	}
	db, err := sql.Open("pgx", e.cfg.postgres)
	if err != nil {
		// The DSN may hold a password: never echo it.
		return fmt.Errorf("-postgres: invalid connection string")
	}
	dsn, drop, err := freshSchema(ctx, db, e.cfg.postgres, "controls")
	if err != nil {
		db.Close()
		return fmt.Errorf("gw-controls: %w", err)
	}
	ce := &controlsEnv{drop: func() { drop(); db.Close() }}
	dir := filepath.Join(e.workdir, "controls")
	models := filepath.Join(dir, "models.yaml")
	if err = os.MkdirAll(dir, 0o700); err == nil {
		err = os.WriteFile(models, []byte(controlsModelsYAML(e.upAddr, e.cfg.teamSteps)), 0o600)
	}
	if err != nil {
		ce.stop()
		return err
	}
	env := []string{"DATABASE_URL=" + dsn, "REDIS_URL=" + e.cfg.redis, "BENCH_KEY=" + benchKey, "BENCH_ADMIN_KEY=" + overshootAdminKey}
	for try := 0; ; try++ {
		port, admin, err := freePorts()
		if err != nil {
			ce.stop()
			return err
		}
		ce.base, ce.admin = fmt.Sprintf("http://127.0.0.1:%d", port), fmt.Sprintf("127.0.0.1:%d", admin)
		probe := probeHTTP(http.MethodGet, ce.base+"/health/readiness", nil, nil, `"deployments":15`)
		cf := budgetCaddyfile(port, admin, models, true)
		if e.cfg.teamSteps {
			cf = withSecretFirewall(cf)
		}
		ce.gw, err = startCaddy(ctx, "gateway-controls", bin, dir, cf, probe, env)
		if err == nil {
			break
		}
		if try == 2 || ctx.Err() != nil {
			ce.stop()
			return fmt.Errorf("gw-controls: %w", err)
		}
	}
	gs := []gatewayInstance{{c: ce.gw, base: ce.base}}
	client := newClient(8)
	defer client.CloseIdleConnections()
	// Set first: every instance reads spend limits each second, and the
	// keys below take longer than that to create.
	if e.cfg.teamSteps {
		if err := setOrganizationSpendLimit(ctx, client, ce.base); err != nil {
			ce.stop()
			return err
		}
	}
	// 999 keys with small budgets of their own, as a team's would be.
	if _, err := createKeys(ctx, client, gs[0], controlsKeys-1, 10); err != nil {
		ce.stop()
		return fmt.Errorf("gw-controls: %w", err)
	}
	// The loaded key: $1,000,000 a month and limits it never reaches.
	body := `{"name":"bench-loaded","budget":{"amount":"100000000","period":"monthly"},"rpm":100000000,"tpm":100000000000,"max_parallel":100000}`
	status, out, err := call(ctx, client, http.MethodPost, gs[0].base+"/v1/organizations/api_keys", overshootAdminKey, []byte(body))
	var k struct{ ID, Value string }
	if err == nil && (status != 200 || json.Unmarshal(out, &k) != nil || k.Value == "") {
		err = fmt.Errorf("creating the loaded key: status %d: %.200s", status, out)
	}
	if err != nil {
		ce.stop()
		return fmt.Errorf("gw-controls: %w", err)
	}
	if err := waitKeysKnown(ctx, client, gs, []benchKeyPair{{k.ID, k.Value}}); err != nil {
		ce.stop()
		return err
	}
	ce.key = k.Value
	e.controls = ce
	return nil
}

func (c *controlsEnv) stop() {
	if c == nil {
		return
	}
	if c.gw != nil {
		c.reportFallbacks()
		c.gw.stop()
		c.gw = nil
	}
	if c.drop == nil {
		return
	}
	c.drop()
	c.drop = nil
}

// controlsScenarios are listed whether or not PostgreSQL and Redis were
// given; scenarios skips them when the controlled gateway did not start.
func (e *env) controlsScenarios() []scenario {
	var gw *child
	var base, admin, key string
	if c := e.controls; c != nil {
		gw, base, admin, key = c.gw, c.base, c.admin, c.key
	}
	h := bearer(key)
	return []scenario{
		{key: "gw-controls", label: "gateway openai/ (pass-through), PostgreSQL budget + Redis limits", proc: gw, admin: admin,
			target: target{url: base + "/v1/chat/completions", header: h, body: chatBody("priced", false)}},
		{key: "s-gw-controls", label: "gateway openai/ (pass-through), PostgreSQL budget + Redis limits", kind: streaming, proc: gw, admin: admin,
			target: target{url: base + "/v1/chat/completions", header: h, body: chatBody("priced-ts", true), stream: true, stamped: true}},
	}
}

// isControls says a scenario needs the controlled gateway.
func isControls(key string) bool { return key == "gw-controls" || key == "s-gw-controls" }

// reportFallbacks says how many requests were counted in the process
// rather than in Redis or PostgreSQL (the shared store failed or was too
// slow): rows that fell back measured less than the controls.
func (c *controlsEnv) reportFallbacks() {
	for _, line := range c.fallbacks() {
		fmt.Fprintln(os.Stderr, "gw-controls:", line)
	}
	// The gateway's warnings say why (the first of each outage).
	for _, line := range strings.Split(c.gw.log.String(), "\n") {
		if strings.Contains(line, "rate-limit") || strings.Contains(line, "redis") || strings.Contains(line, "budget") {
			fmt.Fprintln(os.Stderr, "gw-controls log:", line)
		}
	}
}

// fallbacks are the gateway's metric lines counting requests admitted in
// the process because Redis or PostgreSQL failed or was too slow.
func (c *controlsEnv) fallbacks() []string {
	resp, err := http.Get("http://" + c.admin + "/metrics")
	if err != nil {
		return []string{"metrics unreadable: " + err.Error()}
	}
	defer resp.Body.Close()
	var out []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "modelgate_rate_limit_local_fallbacks_total") || strings.HasPrefix(line, "modelgate_budget_local_fallbacks_total") ||
			strings.HasPrefix(line, "modelgate_ledger_") {
			out = append(out, line)
		}
	}
	return out
}
