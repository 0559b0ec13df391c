package integration

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/modelgate/modelgate/adminapi"
	"github.com/modelgate/modelgate/internal/fakes"
	"github.com/modelgate/modelgate/internal/testlane"
	"github.com/modelgate/modelgate/internal/testwait"
)

// TestPersonSigningInThreeTimesOnTwoInstances: two gateway binaries on
// one PostgreSQL ledger and one Redis, signing people in with the real
// OpenID provider. bob signs in three times (`caddy modelgate login`:
// three keys, two minted by one instance, one by the other) under his
// group's $2 per-member limit set through the Spend Limits API; his
// agent reports a counted $0.50 with one key; then his requests go to
// both instances with all three keys at once until every one is refused.
// What the ledger charged him, served and reported, is at most $2 (each
// request is admitted only when its worst case fits: no overshoot), the
// effective report shows that spend and the limit's room as admission
// does, and a request past it is refused on both instances naming him;
// an admin taking the agent's report back takes it off his spend.
func TestPersonSigningInThreeTimesOnTwoInstances(t *testing.T) {
	redisURL := testlane.RedisURL(t)
	dsn, conn, schema := freshSchema(t)
	u := startUpstreams(t, fakes.Options{})
	models := "model_list:\n" + pricedEntry("echo", "openai/fake-gpt", u.openai.URL+"/v1", "upstream-openai-secret", "0.0005", "0.001")
	s := startIdentityWith(t, identityOptions{models: models, more: 1,
		ledgerLine: "ledger postgres {env.DATABASE_URL}\n\t\tlimits redis {env.REDIS_URL}",
		authExtra:  "workspace eng {\n\t\t\tcount_agent_reported\n\t\t}",
		env:        []string{"DATABASE_URL=" + dsn.String(), "REDIS_URL=" + redisURL}})
	a, b := s.g, s.more[0]
	var keys []string
	for _, g := range []*gateway{a, b, a} {
		home := t.TempDir()
		cliLogin(t, identitySetup{g: g, issuer: s.issuer}, home, "bob")
		keys = append(keys, printKey(t, home))
	}
	if st, _, body := a.do(t, http.MethodPost, adminapi.SpendLimitsPath, adminKey,
		`{"amount":"200","scope":{"type":"rbac_group","rbac_group_id":"engineering"},"period":"monthly"}`); st != http.StatusOK {
		t.Fatalf("setting engineering's per-member limit: %d %s", st, body)
	}
	// Both instances know every key and admit on the limit.
	for _, g := range []*gateway{a, b} {
		for _, k := range keys {
			if !testwait.Until(func() bool {
				_, _, me := g.do(t, http.MethodGet, "/v1/me", k, "")
				return strings.Contains(string(me), `"scope":"user","period":"monthly","amount":"200"`)
			}) {
				t.Fatal("an instance never held one of bob's keys to his limit")
			}
		}
	}
	// His agent reports a request the gateway did not serve: counted in
	// workspace eng, at most its tokens at list price (1,000 × $0.0005).
	if st, _, body := b.do(t, http.MethodPost, "/v1/logs", keys[2], apiRequestEvent("sess-bob-agent", "req-bob-1", "echo", 0.5, 1000, 0)); st != http.StatusOK {
		t.Fatalf("bob's agent's report: %d %s", st, body)
	}
	if !testwait.Until(func() bool { return effectiveSpend(t, a, "bob@example.com").spent >= 50 }) {
		t.Fatal("the agent-reported cost never reached bob's spend")
	}

	req := `{"model":"echo","max_tokens":20,"messages":[{"role":"user","content":"hi"}]}`
	var mu sync.Mutex
	admitted, other := 0, map[int]int{}
	var wg sync.WaitGroup
	for _, g := range []*gateway{a, b} {
		for _, k := range keys {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 400 {
					st, _, _ := g.do(t, http.MethodPost, "/v1/chat/completions", k, req)
					mu.Lock()
					if st == http.StatusOK {
						admitted++
					} else {
						other[st]++
					}
					mu.Unlock()
					if st != http.StatusOK {
						return
					}
				}
			}()
		}
	}
	wg.Wait()
	if other[http.StatusTooManyRequests] != 6 || len(other) != 1 || admitted == 0 {
		t.Fatalf("%d admitted, then %v; want every sender refused (429) in the end", admitted, other)
	}
	// What reservations held back for requests in flight when others
	// were refused is room again: use it up, then each instance refuses.
	var refusal string
	for _, g := range []*gateway{a, b} {
		for range 100 {
			st, _, body := g.do(t, http.MethodPost, "/v1/chat/completions", keys[0], req)
			if st == http.StatusOK {
				admitted++
				continue
			}
			if refusal = string(body); st != http.StatusTooManyRequests || !strings.Contains(refusal, "person bob@example.com (group engineering's limit for each member)") {
				t.Fatalf("the refusal past bob's limit: %d %s", st, body)
			}
			break
		}
	}
	// Every record is written (the served ones and the report), then the
	// report reads what the ledger charged.
	var n int
	var pico int64
	if !testwait.Until(func() bool {
		err := conn.QueryRow(context.Background(), "SELECT COUNT(*), COALESCE(SUM(cost_pico), 0) FROM "+schema+".usage_records WHERE status = 200 AND report_only = 0").Scan(&n, &pico)
		return err == nil && n == admitted+1
	}) {
		t.Fatalf("%d records of %d admitted requests and one report", n, admitted+1)
	}
	if limit := int64(200) * 1e10; pico > limit || pico < limit/2 {
		t.Errorf("bob was charged %d picodollars under a $2 limit across three keys and two instances", pico)
	}
	cents := float64(pico) / 1e10
	t.Logf("%d requests admitted and one report: %.3f cents charged of 200", admitted, cents)
	var eff effective
	if !testwait.Until(func() bool {
		eff = effectiveSpend(t, b, "bob@example.com")
		return math.Abs(eff.spent-cents) < 0.001
	}) {
		t.Fatalf("the effective report shows %v cents spent; the ledger charged %v", eff.spent, cents)
	}
	// The room the report shows is what admission refused on: less than
	// one request's worst case (its input, a token a byte, and 20 output
	// tokens: under 6 cents).
	if eff.amount != "200" || eff.source != "engineering" || math.Abs(eff.remaining-(200-cents)) > 0.001 || eff.remaining >= 6 {
		t.Errorf("effective row %+v after %v cents charged; refused with %s", eff, cents, refusal)
	}
	// An admin takes the agent's report back: it comes off bob's spend
	// too, and his keys have room again.
	var me struct {
		ID string `json:"id"`
	}
	if _, _, body := a.do(t, http.MethodGet, "/v1/me", keys[2], ""); json.Unmarshal(body, &me) != nil || me.ID == "" {
		t.Fatalf("/v1/me of bob's third key: %s", body)
	}
	if st, _, body := a.do(t, http.MethodDelete, "/v1/organizations/sessions/sess-bob-agent/agent_reported?api_key_id="+me.ID, adminKey, ""); st != http.StatusOK {
		t.Fatalf("deleting bob's agent's report: %d %s", st, body)
	}
	if !testwait.Until(func() bool { return math.Abs(effectiveSpend(t, b, "bob@example.com").spent-(cents-50)) < 0.001 }) {
		t.Errorf("the deleted report's 50 cents never came off bob's spend (%v cents before)", cents)
	}
	if !testwait.Until(func() bool {
		st, _, _ := b.do(t, http.MethodPost, "/v1/chat/completions", keys[1], req)
		return st == http.StatusOK
	}) {
		t.Error("bob's keys were not admitted again after the report came off his spend")
	}
}

// effective is the effective report's monthly row of one person.
type effective struct {
	amount, source   string
	spent, remaining float64
}

func effectiveSpend(t *testing.T, g *gateway, person string) effective {
	t.Helper()
	st, _, body := g.do(t, http.MethodGet, adminapi.EffectiveLimitsPath+"?period[]=monthly&user_ids[]="+person, adminKey, "")
	var page struct {
		Data []adminapi.SpendSummary `json:"data"`
	}
	if st != http.StatusOK || json.Unmarshal(body, &page) != nil || len(page.Data) != 1 {
		t.Fatalf("effective report: %d %s", st, body)
	}
	row := page.Data[0]
	var e effective
	if row.Amount != nil {
		e.amount = *row.Amount
	}
	e.source = row.Source.RBACGroupID
	e.spent, _ = strconv.ParseFloat(row.PeriodToDateSpend, 64)
	e.remaining, _ = strconv.ParseFloat(row.Remaining, 64)
	return e
}
