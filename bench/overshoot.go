package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// overshootConfig is `go run ./bench -overshoot`: several gateway
// instances on one PostgreSQL and Redis, many keys with a small budget
// each, many concurrent spenders until every budget refuses; then how far
// past its budget each key went, read from the ledger.
type overshootConfig struct {
	instances   []int
	keys        int
	spenders    int
	perKey      int
	budgetCents int
	postgres    string
	redis       string
	label       string
	caddyBin    string
	build       bool
	workdir     string
	// duration and conc: the throughput rows (budgeted keys against plain
	// Caddy); duration 0 skips them.
	duration, warmup time.Duration
	conc             int
}

// The priced alias: what one request costs and reserves is fixed by the
// fake upstream's usage (internal/fakes: 11 prompt tokens of which 3
// cached, unpriced here, and 7 completion tokens) and by the body the
// spenders send, so every budget overshoot can be counted in requests.
const (
	pricedInputPico  = 20_000_000    // $0.00002 per input token
	pricedOutputPico = 1_000_000_000 // $0.001 per output token
	pricedMaxTokens  = 8
	// overshootAdminKey is the admin key the harness creates keys with.
	overshootAdminKey = "sk-bench-admin-0123456789abcdef"
	picoPerCent       = 10_000_000_000
)

// pricedBody is what every spender sends.
func pricedBody() []byte {
	return []byte(`{"model":"priced","max_tokens":` + strconv.Itoa(pricedMaxTokens) + `,"messages":[{"role":"user","content":"hi"}]}`)
}

// reservationPico is what the gateway reserves for body before the
// upstream call: every byte of the body as an input token and max_tokens
// of output (handlers' estimate).
func reservationPico(body []byte, maxTokens int64) int64 {
	return int64(len(body))*pricedInputPico + maxTokens*pricedOutputPico
}

// requestCostPico is what one answer of the OpenAI fake costs at the
// priced alias: 8 uncached input tokens and 7 output tokens.
func requestCostPico() int64 { return 8*pricedInputPico + 7*pricedOutputPico }

// parseInstances reads "1,2,4".
func parseInstances(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > 32 {
			return nil, fmt.Errorf("-instances: %q is not a count from 1 to 32", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// withSearchPath points a PostgreSQL DSN (URL or key=value form) at one
// schema.
func withSearchPath(dsn, schema string) (string, error) {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return "", fmt.Errorf("-postgres: not a valid URL")
		}
		q := u.Query()
		q.Set("search_path", schema)
		u.RawQuery = q.Encode()
		return u.String(), nil
	}
	if strings.Contains(dsn, "search_path=") {
		return "", fmt.Errorf("-postgres: the DSN already sets search_path; the harness needs its own schema")
	}
	return strings.TrimSpace(dsn) + " search_path=" + schema, nil
}

// overshootStats sums how far past its budget each key spent.
type overshootStats struct {
	keys      int
	over      int     // keys that spent more than their budget
	maxOver   int64   // picodollars past the budget, the worst key
	totalOver int64   // picodollars past budgets, all keys
	maxRatio  float64 // the worst key's spend ÷ its budget
	under     int     // keys refused with more than one reservation of room left
}

// overshoot compares each key's spend with limit; keys absent from spend
// spent nothing.
func overshoot(spend map[string]int64, keys []string, limit, reservation int64) overshootStats {
	st := overshootStats{keys: len(keys)}
	for _, k := range keys {
		s := spend[k]
		if limit > 0 {
			st.maxRatio = max(st.maxRatio, float64(s)/float64(limit))
		}
		if s <= limit {
			if limit-s > reservation {
				st.under++
			}
			continue
		}
		st.over++
		st.maxOver = max(st.maxOver, s-limit)
		st.totalOver += s - limit
	}
	return st
}

// isBudgetRefusal tells a budget's 429 from anything else.
func isBudgetRefusal(status int, body []byte) bool {
	return status == http.StatusTooManyRequests && bytes.Contains(body, []byte("budget_exceeded"))
}

func usd(pico int64) string {
	return "$" + strconv.FormatFloat(float64(pico)/1e12, 'f', 4, 64)
}

// overshootRow is one instance count's result.
type overshootRow struct {
	instances               int
	stats                   overshootStats
	admitted, refused, errs int64
	firstErr                string
	elapsed                 time.Duration
	unflushed               int64 // answers the ledger still lacked when read
}

// gatewayInstance is one running gateway.
type gatewayInstance struct {
	c    *child
	base string
}

func runOvershoot(ctx context.Context, c overshootConfig) (err error) {
	if c.postgres == "" {
		return fmt.Errorf("-overshoot needs PostgreSQL: -postgres DSN or $MODELGATE_TEST_POSTGRES (scripts/postgres.sh starts one)")
	}
	if c.keys < 1 || c.spenders < 1 || c.perKey < 1 || c.budgetCents < 1 {
		return fmt.Errorf("-keys, -spenders, -spenders-per-key and -budget-cents must be positive")
	}
	raiseNoFile()
	dir := c.workdir
	if dir != "" {
		if dir, err = filepath.Abs(dir); err == nil {
			err = os.MkdirAll(dir, 0o700)
		}
	} else {
		dir, err = os.MkdirTemp("", "modelgate-overshoot-")
		defer os.RemoveAll(dir)
	}
	if err != nil {
		return err
	}
	if c.build {
		if err := buildCaddy(ctx, c.caddyBin); err != nil {
			return err
		}
	}
	bin, err := filepath.Abs(c.caddyBin)
	if err != nil {
		return err
	}
	up, upAddr, err := startUpstream(1, 0)
	if err != nil {
		return err
	}
	defer up.stop()
	models := filepath.Join(dir, "models.yaml")
	if err := os.WriteFile(models, []byte(pricedModelsYAML(upAddr)), 0o600); err != nil {
		return err
	}
	db, err := sql.Open("pgx", c.postgres)
	if err != nil {
		return fmt.Errorf("-postgres: invalid connection string")
	}
	defer db.Close()
	if err := db.PingContext(ctx); err != nil {
		return fmt.Errorf("-postgres: %w", err)
	}
	body := pricedBody()
	reserve := reservationPico(body, pricedMaxTokens)
	limit := int64(c.budgetCents) * picoPerCent
	var rows []overshootRow
	for _, n := range c.instances {
		fmt.Fprintf(os.Stderr, "overshoot: %d instance(s), %d keys …\n", n, c.keys)
		row, err := overshootOnce(ctx, c, db, bin, dir, models, n, body, limit, reserve)
		if err != nil {
			return fmt.Errorf("%d instances: %w", n, err)
		}
		rows = append(rows, row)
	}
	var tput []throughputRow
	if c.duration > 0 {
		fmt.Fprintln(os.Stderr, "overshoot: throughput rows …")
		if tput, err = budgetThroughput(ctx, c, db, bin, dir, models, upAddr); err != nil {
			return fmt.Errorf("throughput: %w", err)
		}
	}
	printOvershoot(os.Stdout, c, rows, tput, body, limit, reserve)
	return nil
}

// pricedModelsYAML is the bench models file plus the priced alias.
func pricedModelsYAML(up string) string {
	return modelsYAML(up) + fmt.Sprintf(`  - model_name: priced
    proxy_params:
      model: openai/fake-gpt
      api_base: http://%s/openai/v1
      api_key: bench-upstream-openai
    model_info:
      input_cost_per_token: %s
      output_cost_per_token: %s
`, up, strconv.FormatFloat(pricedInputPico/1e12, 'f', -1, 64), strconv.FormatFloat(pricedOutputPico/1e12, 'f', -1, 64))
}

// budgetCaddyfile is one of several instances sharing a PostgreSQL ledger
// and Redis limits; keys are created through its admin API.
func budgetCaddyfile(port, adminPort int, models string, redis bool) string {
	limits := ""
	if redis {
		limits = "\n\t\tlimits redis {env.REDIS_URL}"
	}
	return fmt.Sprintf(`{
	admin 127.0.0.1:%d
	persist_config off
	modelgate {
		ledger postgres {env.DATABASE_URL}%s
	}
}

http://127.0.0.1:%d {
	llm_auth {
		key {env.BENCH_KEY} {
			id bench
		}
		admin_key {env.BENCH_ADMIN_KEY}
	}
	llm_admin
	llm_gateway {
		models %s
	}
}
`, adminPort, limits, port, models)
}

// startInstances starts n gateways on the schema's DSN.
func startInstances(ctx context.Context, c overshootConfig, bin, dir, models, dsn string, n int) ([]gatewayInstance, error) {
	var out []gatewayInstance
	env := []string{"DATABASE_URL=" + dsn, "REDIS_URL=" + c.redis, "BENCH_KEY=" + benchKey, "BENCH_ADMIN_KEY=" + overshootAdminKey}
	for i := range n {
		var g gatewayInstance
		for try := 0; ; try++ {
			port, admin, err := freePorts()
			if err != nil {
				stopInstances(out)
				return nil, err
			}
			g.base = fmt.Sprintf("http://127.0.0.1:%d", port)
			probe := probeHTTP(http.MethodGet, g.base+"/health/readiness", nil, nil, `"deployments":12`)
			g.c, err = startCaddy(ctx, fmt.Sprintf("gateway-%d", i), bin, filepath.Join(dir, fmt.Sprintf("gw%d", i)),
				budgetCaddyfile(port, admin, models, c.redis != ""), probe, env)
			if err == nil {
				break
			}
			if try == 2 || ctx.Err() != nil {
				stopInstances(out)
				return nil, err
			}
		}
		out = append(out, g)
	}
	return out, nil
}

func stopInstances(gs []gatewayInstance) {
	var wg sync.WaitGroup
	for _, g := range gs {
		wg.Add(1)
		go func() { defer wg.Done(); g.c.stop() }()
	}
	wg.Wait()
}

// freshSchema creates an empty schema for one measurement and returns
// the DSN that uses it and a function that drops it.
func freshSchema(ctx context.Context, db *sql.DB, dsn, what string) (string, func(), error) {
	schema := fmt.Sprintf("bench_%s_%d", what, time.Now().UnixNano())
	if _, err := db.ExecContext(ctx, "CREATE SCHEMA "+schema); err != nil {
		return "", nil, err
	}
	drop := func() { _, _ = db.ExecContext(context.Background(), "DROP SCHEMA "+schema+" CASCADE") }
	scoped, err := withSearchPath(dsn, schema)
	if err != nil {
		drop()
		return "", nil, err
	}
	return scoped, drop, nil
}

type benchKeyPair struct{ id, value string }

// createKeys creates n keys, each with budget (in cents, monthly), through
// g's admin API.
func createKeys(ctx context.Context, client *http.Client, g gatewayInstance, n int, cents int64) ([]benchKeyPair, error) {
	keys := make([]benchKeyPair, n)
	var next atomic.Int64
	errs := make(chan error, 8)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n || ctx.Err() != nil {
					return
				}
				body := fmt.Sprintf(`{"name":"bench-%d","budget":{"amount":"%d","period":"monthly"}}`, i, cents)
				status, out, err := call(ctx, client, http.MethodPost, g.base+"/v1/organizations/api_keys", overshootAdminKey, []byte(body))
				var k struct{ ID, Value string }
				if err == nil && (status != 200 || json.Unmarshal(out, &k) != nil || k.Value == "") {
					err = fmt.Errorf("creating a key: status %d: %.200s", status, out)
				}
				if err != nil {
					errs <- err
					return
				}
				keys[i] = benchKeyPair{k.ID, k.Value}
			}
		}()
	}
	wg.Wait()
	select {
	case err := <-errs:
		return nil, err
	default:
	}
	return keys, ctx.Err()
}

// waitKeysKnown waits until every instance knows every key (instances
// read runtime keys from the ledger every second).
func waitKeysKnown(ctx context.Context, client *http.Client, gs []gatewayInstance, keys []benchKeyPair) error {
	deadline := time.Now().Add(15 * time.Second)
	for _, g := range gs {
		for i := len(keys) - 1; i >= 0; i-- {
			for {
				status, out, err := call(ctx, client, http.MethodGet, g.base+"/v1/me", keys[i].value, nil)
				if err == nil && status == 200 {
					break
				}
				if time.Now().After(deadline) || ctx.Err() != nil {
					return fmt.Errorf("%s never learned key %s: %d %.200s %v", g.base, keys[i].id, status, out, err)
				}
				time.Sleep(100 * time.Millisecond)
			}
		}
	}
	return nil
}

// call sends one request with a bearer key and reads the answer.
func call(ctx context.Context, client *http.Client, method, url, key string, body []byte) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	return resp.StatusCode, out, err
}

// spendCounts are the spenders' tallies.
type spendCounts struct {
	admitted, refused, errs atomic.Int64
	mu                      sync.Mutex
	firstErr                string
}

func (s *spendCounts) send(ctx context.Context, client *http.Client, g gatewayInstance, key string, body []byte) (admitted, refused bool) {
	status, out, err := call(ctx, client, http.MethodPost, g.base+"/v1/chat/completions", key, body)
	switch {
	case err == nil && status == 200:
		s.admitted.Add(1)
		return true, false
	case err == nil && isBudgetRefusal(status, out):
		s.refused.Add(1)
		return false, true
	case ctx.Err() != nil:
		return false, false
	}
	s.errs.Add(1)
	s.mu.Lock()
	if s.firstErr == "" {
		if err != nil {
			s.firstErr = err.Error()
		} else {
			s.firstErr = fmt.Sprintf("status %d: %.200s", status, out)
		}
	}
	s.mu.Unlock()
	return false, false
}

// overshootOnce measures one instance count on a fresh schema.
func overshootOnce(ctx context.Context, c overshootConfig, db *sql.DB, bin, dir, models string, n int, body []byte, limit, reserve int64) (overshootRow, error) {
	row := overshootRow{instances: n}
	dsn, drop, err := freshSchema(ctx, db, c.postgres, fmt.Sprintf("overshoot_n%d", n))
	if err != nil {
		return row, err
	}
	defer drop()
	gs, err := startInstances(ctx, c, bin, filepath.Join(dir, fmt.Sprintf("n%d", n)), models, dsn, n)
	if err != nil {
		return row, err
	}
	defer stopInstances(gs)
	client := newClient(c.spenders)
	defer client.CloseIdleConnections()
	keys, err := createKeys(ctx, client, gs[0], c.keys, int64(c.budgetCents))
	if err != nil {
		return row, err
	}
	if err := waitKeysKnown(ctx, client, gs, keys); err != nil {
		return row, err
	}

	// Spenders work in groups of perKey on one key at a time, each member
	// on its own instance in turn, so every budget sees perKey concurrent
	// requests spread over the instances; a member moves to its group's
	// next key when its instance refuses this one.
	var counts spendCounts
	groups := max(1, c.spenders/c.perKey)
	start := time.Now()
	var wg sync.WaitGroup
	for w := range groups * c.perKey {
		g, m := w/c.perKey, w%c.perKey
		inst := gs[(g+m)%n]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := g; k < len(keys) && ctx.Err() == nil; k += groups {
				// Bounded whatever the gateway does: a budget that never
				// refuses is reported, not waited on forever.
				for tries, fails := 0, 0; tries < 1000 && fails < 5 && ctx.Err() == nil; tries++ {
					ok, refused := counts.send(ctx, client, inst, keys[k].value, body)
					if refused {
						break
					}
					if !ok {
						fails++
					}
				}
			}
		}()
	}
	wg.Wait()
	row.elapsed = time.Since(start)
	// A refusal can come from reservations still held by requests in
	// flight, which then settle below their reservation and leave room;
	// and per-process counts learn other instances' spend at the next
	// refresh. Sweep every key on every instance, after the refresh, until
	// a sweep is all refusals: then every budget refuses everywhere.
	for sweep := 0; sweep < 5 && ctx.Err() == nil; sweep++ {
		time.Sleep(1500 * time.Millisecond)
		before := counts.admitted.Load()
		var next atomic.Int64
		var swg sync.WaitGroup
		for range c.spenders {
			swg.Add(1)
			go func() {
				defer swg.Done()
				for {
					i := int(next.Add(1)) - 1
					if i >= len(keys)*n || ctx.Err() != nil {
						return
					}
					counts.send(ctx, client, gs[i%n], keys[i/n].value, body)
				}
			}()
		}
		swg.Wait()
		if counts.admitted.Load() == before {
			break
		}
	}
	if err := ctx.Err(); err != nil {
		return row, err
	}
	row.admitted, row.refused, row.errs = counts.admitted.Load(), counts.refused.Load(), counts.errs.Load()
	row.firstErr = counts.firstErr

	// Every answer, admitted or refused, is a record: wait for the
	// writers' batches, then stop the instances (which flushes the rest).
	want := row.admitted + row.refused
	var have int64
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if err := db.QueryRowContext(ctx, "SELECT count(*) FROM "+schemaOf(dsn)+".usage_records").Scan(&have); err != nil {
			return row, err
		}
		if have >= want {
			break
		}
	}
	stopInstances(gs)
	gs = nil
	spend, recorded, err := spendByKey(ctx, db, schemaOf(dsn))
	if err != nil {
		return row, err
	}
	row.unflushed = max(0, want-recorded)
	ids := make([]string, len(keys))
	for i, k := range keys {
		ids[i] = k.id
	}
	row.stats = overshoot(spend, ids, limit, reserve)
	return row, nil
}

// schemaOf is the search_path withSearchPath put in dsn.
func schemaOf(dsn string) string {
	if u, err := url.Parse(dsn); err == nil && u.Query().Get("search_path") != "" {
		return u.Query().Get("search_path")
	}
	_, s, _ := strings.Cut(dsn, "search_path=")
	return strings.Fields(s + " ")[0]
}

// spendByKey is what the ledger recorded for each key, and how many
// records it holds.
func spendByKey(ctx context.Context, db *sql.DB, schema string) (map[string]int64, int64, error) {
	rows, err := db.QueryContext(ctx, "SELECT key_id, sum(cost_pico)::bigint, count(*) FROM "+schema+".usage_records GROUP BY key_id")
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	spend := map[string]int64{}
	var total int64
	for rows.Next() {
		var id string
		var pico, n int64
		if err := rows.Scan(&id, &pico, &n); err != nil {
			return nil, 0, err
		}
		spend[id] = pico
		total += n
	}
	return spend, total, rows.Err()
}

// throughputRow is one closed-loop run of the throughput comparison.
type throughputRow struct {
	name string
	res  *loadResult
}

// budgetThroughput measures what budgets cost per request: one gateway
// instance with each worker on its own key with a budget it never
// reaches (a shared reservation per request), the same gateway on a key
// without budget, and plain Caddy to the same upstream.
func budgetThroughput(ctx context.Context, c overshootConfig, db *sql.DB, bin, dir, models, upAddr string) ([]throughputRow, error) {
	dsn, drop, err := freshSchema(ctx, db, c.postgres, "throughput")
	if err != nil {
		return nil, err
	}
	defer drop()
	gs, err := startInstances(ctx, c, bin, filepath.Join(dir, "tput"), models, dsn, 1)
	if err != nil {
		return nil, err
	}
	defer stopInstances(gs)
	var plain *child
	var plainBase string
	for try := 0; ; try++ {
		port, admin, err := freePorts()
		if err != nil {
			return nil, err
		}
		plainBase = fmt.Sprintf("http://127.0.0.1:%d", port)
		probe := probeHTTP(http.MethodPost, plainBase+"/openai/v1/chat/completions", http2json(), chatBody("fake-gpt", false), "chatcmpl-fake")
		plain, err = startCaddy(ctx, "caddy", bin, filepath.Join(dir, "caddy"), caddyfilePlain(upAddr, port, admin), probe, nil)
		if err == nil {
			break
		}
		if try == 2 || ctx.Err() != nil {
			return nil, err
		}
	}
	defer plain.stop()
	client := newClient(c.conc)
	defer client.CloseIdleConnections()
	// $1,000,000 a month: never reached, so every request is admitted
	// after its reservation.
	keys, err := createKeys(ctx, client, gs[0], c.conc, 100_000_000)
	if err != nil {
		return nil, err
	}
	if err := waitKeysKnown(ctx, client, gs, keys); err != nil {
		return nil, err
	}
	body := pricedBody()
	plainBody := bytes.Replace(body, []byte(`"priced"`), []byte(`"fake-gpt"`), 1)
	runs := []struct {
		name   string
		target func(w int) target
	}{
		{"plain Caddy reverse_proxy", func(int) target {
			return target{url: plainBase + "/openai/v1/chat/completions", header: http2json(), body: plainBody}
		}},
		{"gateway, key without budget", func(int) target {
			return target{url: gs[0].base + "/v1/chat/completions", header: bearer(benchKey), body: body}
		}},
		{"gateway, a budget per key (shared reservation per request)", func(w int) target {
			return target{url: gs[0].base + "/v1/chat/completions", header: bearer(keys[w%len(keys)].value), body: body}
		}},
	}
	var out []throughputRow
	for _, r := range runs {
		if c.warmup > 0 {
			driveEach(ctx, client, r.target, c.conc, c.warmup)
		}
		res := driveEach(ctx, client, r.target, c.conc, c.duration)
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		out = append(out, throughputRow{r.name, res})
	}
	return out, nil
}

func printOvershoot(w io.Writer, c overshootConfig, rows []overshootRow, tput []throughputRow, body []byte, limit, reserve int64) {
	fmt.Fprintf(w, "## Budget overshoot (%s)\n\n", c.label)
	fmt.Fprintf(w, "%s. %d keys with a %s monthly budget each; %d spenders, %d on a key at a time, spread over the instances, until every budget refuses on every instance. One request costs %s and reserves %s (its %d-byte body as input tokens, max_tokens %d). Spend is read from the ledger afterwards.\n\n",
		machine(), c.keys, usd(limit), max(1, c.spenders/c.perKey)*c.perKey, c.perKey, usd(requestCostPico()), usd(reserve), len(body), pricedMaxTokens)
	fmt.Fprintln(w, "| reservations | instances | keys over budget | max overshoot | max overshoot ÷ one reservation | $ past budgets (all keys) | worst spend ÷ budget | keys left > 1 reservation short | admitted | refused | errors | req/s | goal: ≤ 1 reservation |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
	for _, r := range rows {
		goal := "met"
		if r.stats.maxOver > reserve {
			goal = "**missed**"
		}
		fmt.Fprintf(w, "| %s | %d | %d of %d | %s | %.2f | %s | %.2f× | %d | %d | %d | %d | %.0f | %s |\n",
			c.label, r.instances, r.stats.over, r.stats.keys, usd(r.stats.maxOver), float64(r.stats.maxOver)/float64(reserve),
			usd(r.stats.totalOver), r.stats.maxRatio, r.stats.under, r.admitted, r.refused, r.errs,
			float64(r.admitted+r.refused)/r.elapsed.Seconds(), goal)
	}
	for _, r := range rows {
		if r.errs > 0 {
			fmt.Fprintf(w, "\n%d instances: first error: %s\n", r.instances, r.firstErr)
		}
		if r.unflushed > 0 {
			fmt.Fprintf(w, "\n%d instances: %d answers had no record when the ledger was read\n", r.instances, r.unflushed)
		}
	}
	if len(tput) == 0 {
		return
	}
	fmt.Fprintf(w, "\n### What shared reservations cost (1 instance, %d workers, %s each)\n\n", c.conc, c.duration)
	fmt.Fprintln(w, "| scenario | req/s | req/s ÷ Caddy | p50 | p99 | errors |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|")
	base := tput[0].res.rps()
	for _, t := range tput {
		ratio := "—"
		if base > 0 {
			ratio = fmt.Sprintf("%.2f×", t.res.rps()/base)
		}
		fmt.Fprintf(w, "| %s | %.0f | %s | %s | %s | %d |\n", t.name, t.res.rps(), ratio,
			ms(pct(t.res.latency, .5)), ms(pct(t.res.latency, .99)), t.res.errors)
	}
	for _, t := range tput {
		if t.res.errors > 0 {
			fmt.Fprintf(w, "\n%s: first error: %s\n", t.name, t.res.firstErr)
		}
	}
}
