package policy

import (
	"context"
	"database/sql"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/pgtest"
	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/spendlimit"
)

// spendInSession admits one request of est for id in session ("" for
// none) on in and, when admitted, records it as the gateway does:
// charged to the key, the person and their groups, and the session.
func (in *leaseInstance) spendInSession(t testing.TB, id *Identity, session string, est int64) bool {
	r, refusal := in.b.Admit(context.Background(), id, ledger.Limits{}, session, est, time.Minute)
	if refusal != nil {
		if refusal.Status != 429 {
			t.Errorf("refusal %d %s", refusal.Status, refusal.Message)
		}
		return false
	}
	rec := ledger.Record{Time: time.Now(), RequestID: "r", KeyID: id.KeyID, Person: id.PersonID(), Groups: id.Groups, Alias: "m",
		Status: 200, Outcome: ledger.OutcomeOK, CostPicoUSD: est, Ticket: r.Ticket(), SessionID: session}
	rec.Lease, rec.LeasePico = r.Lease()
	r.Settle(est)
	in.recs <- rec
	return true
}

// spendOfScope is what budget_spend holds for a scope this month.
func spendOfScope(t *testing.T, dsn, scope, id string) int64 {
	t.Helper()
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int64
	if err := db.QueryRow(`SELECT coalesce(sum(spent_pico), 0) FROM budget_spend WHERE scope = $1 AND scope_id = $2 AND period = 'monthly' AND period_start_us = $3`,
		scope, id, ledger.PeriodStart("monthly", time.Now()).UnixMicro()).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// hammer spends est from every caller on both instances until each has
// been refused three times, and returns how many were admitted.
func hammer(t *testing.T, a, b *leaseInstance, callers []*Identity, est int64) int64 {
	return hammerIn(t, a, b, callers, "", est)
}

// hammerIn is hammer in session.
func hammerIn(t *testing.T, a, b *leaseInstance, callers []*Identity, session string, est int64) int64 {
	var admitted atomic.Int64
	var wg sync.WaitGroup
	for i := range 4 * len(callers) {
		in, id := []*leaseInstance{a, b}[i%2], callers[i%len(callers)]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for refusals := 0; refusals < 3; {
				if in.spendInSession(t, id, session, est) {
					admitted.Add(1)
				} else {
					refusals++
					time.Sleep(20 * time.Millisecond)
				}
			}
		}()
	}
	wg.Wait()
	a.flush()
	b.flush()
	return admitted.Load()
}

// Hostile review N3: bob signs in three times (three keys, each carrying
// his group's $2 monthly budget as his default) and spends on two
// instances sharing PostgreSQL: he gets $2 in all, not $2 a key.
func TestPersonLimitHoldsOverThreeSignInsAndTwoInstances(t *testing.T) {
	dsn := pgtest.FreshSchema(t)
	a, b := openLeaseInstance(t, dsn, nil), openLeaseInstance(t, dsn, nil)
	budget := &ledger.PersonBudget{Cents: 200, Period: "monthly"}
	var keys []*Identity
	for _, k := range []string{"apikey_signin1", "apikey_signin2", "apikey_signin3"} {
		keys = append(keys, &Identity{KeyID: k, Owner: "bob@example.com", Groups: "engineering", PersonBudget: budget, Runtime: true})
	}
	const cost = int64(3e11) // 30 cents
	admitted := hammer(t, a, b, keys, cost)
	if admitted*cost > 200*1e10 || admitted < 1 {
		t.Fatalf("bob was admitted %d requests of 30 cents over three keys under a $2 limit of his own", admitted)
	}
	if got := spendOfScope(t, dsn, ledger.ScopeUser, "bob@example.com"); got != admitted*cost {
		t.Errorf("bob's recorded spend is %d pico; admitted %d requests of %d", got, admitted, cost)
	}
	// The refusal names him, his group's limit, and how to ask for more.
	c := openLeaseInstance(t, dsn, nil)
	if err := c.b.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	_, refusal := c.b.Admit(context.Background(), keys[0], ledger.Limits{}, "", 3e11, time.Minute)
	if refusal == nil || refusal.Status != 429 || !strings.Contains(refusal.Message, "person bob@example.com (group engineering's limit for each member)") ||
		!strings.Contains(refusal.Message, "caddy modelgate request-increase") {
		t.Errorf("refusal past bob's limit: %+v", refusal)
	}
	st := c.b.Status(keys[2], ledger.Limits{}, "")
	if len(st) != 1 || st[0].Scope != ledger.ScopeUser || st[0].ScopeID != "bob@example.com" || st[0].Amount != "200" || st[0].Source == nil || st[0].Source.Scope != ledger.ScopeGroup {
		t.Errorf("/v1/me's budgets for bob's third key: %+v", st)
	}
}

// A group's pool set through the Spend Limits API is shared by its
// members: alice and carol, on two instances, spend $1 between them.
func TestGroupPoolSharedByTwoPeopleHolds(t *testing.T) {
	dsn := pgtest.FreshSchema(t)
	a, b := openLeaseInstance(t, dsn, nil), openLeaseInstance(t, dsn, nil)
	cents := int64(100)
	if _, err := a.store.(ledger.SpendLimitStore).PutSpendLimit(context.Background(), ledger.SpendLimit{Scope: ledger.ScopeGroupPool,
		ScopeID: "eng", Period: "monthly", AmountCents: &cents}); err != nil {
		t.Fatal(err)
	}
	for _, in := range []*leaseInstance{a, b} {
		if err := in.b.Refresh(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	people := []*Identity{
		{KeyID: "apikey_alice", Owner: "alice@example.com", Groups: "eng", Runtime: true},
		{KeyID: "apikey_carol", Owner: "carol@example.com", Groups: "ops\neng", Runtime: true},
	}
	const cost = int64(7e10) // 7 cents
	admitted := hammer(t, a, b, people, cost)
	if admitted*cost > 100*1e10 || admitted < 1 {
		t.Fatalf("admitted %d requests of 7 cents from two people under their group's $1 pool", admitted)
	}
	if got := spendOfScope(t, dsn, ledger.ScopeGroup, "eng"); got != admitted*cost {
		t.Errorf("the group's recorded spend is %d pico; admitted %d of %d", got, admitted, cost)
	}
	alice := spendOfScope(t, dsn, ledger.ScopeUser, "alice@example.com")
	carol := spendOfScope(t, dsn, ledger.ScopeUser, "carol@example.com")
	if alice+carol != admitted*cost {
		t.Errorf("alice spent %d and carol %d pico; want them to sum to %d", alice, carol, admitted*cost)
	}
	// Whoever spent it, the pool is spent for both.
	c := openLeaseInstance(t, dsn, nil)
	if err := c.b.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, p := range people {
		_, refusal := c.b.Admit(context.Background(), p, ledger.Limits{}, "", cost, time.Minute)
		if refusal == nil || !strings.Contains(refusal.Message, "group eng (shared by its members)") || !strings.Contains(refusal.Message, "ask a gateway admin") {
			t.Errorf("%s past the pool: %+v", p.Owner, refusal)
		}
	}
	if got := spendOfScope(t, dsn, ledger.ScopeGroup, "ops"); got != carol {
		t.Errorf("carol's other group counted %d pico; want her %d", got, carol)
	}
}

// A person's limit warns like any budget, naming them and their group:
// one 80 % and one 100 % message, though they spend through two keys on
// two instances.
func TestPersonLimitAlertsOnceAcrossKeysAndInstances(t *testing.T) {
	a, b, _, sink := alertingInstances(t, "unused", 1000)
	budget := &ledger.PersonBudget{Cents: 10, Period: "monthly"}
	keys := []*Identity{
		{KeyID: "apikey_laptop", Owner: "dana@example.com", Groups: "eng", PersonBudget: budget, Runtime: true},
		{KeyID: "apikey_desktop", Owner: "dana@example.com", Groups: "eng", PersonBudget: budget, Runtime: true},
	}
	cent := Estimate{InputPico: 1e10}
	wa, wb := &heldWriter{}, &heldWriter{}
	for i := range 10 {
		in, w := []*leaseInstance{a, b}[i%2], []*heldWriter{wa, wb}[i%2]
		if ok, msg := serve(t, in, w, keys[i%2], cent, cent.InputPico); !ok {
			t.Fatalf("cent %d refused: %s", i+1, msg)
		}
		w.write(t, in)
		refresh(t, a, b)
	}
	for _, in := range []*leaseInstance{a, b} {
		if ok, _ := serve(t, in, &heldWriter{}, keys[0], cent, cent.InputPico); ok {
			t.Fatal("admitted past dana's limit")
		}
	}
	label := "person dana@example.com (group eng's limit for each member)"
	if n := sink.count("80% of budget — " + label + ": $0.0"); n != 1 {
		t.Errorf("%d 80%% messages; want 1: %q", n, sink.all())
	}
	if n := sink.count("Budget reached — " + label + ": $0.10 of $0.10 monthly"); n != 1 {
		t.Errorf("%d 100%% messages; want 1: %q", n, sink.all())
	}
}

// BenchmarkBudgetAdmitPersonLimits: admission of a person's key under the
// organization's limit, their group's pool and their own, besides the
// key's budget (the spend limits' path; BenchmarkBudgetAdmitWithBacklog
// is the key budget's alone).
func BenchmarkBudgetAdmitPersonLimits(b *testing.B) {
	bud := NewBudgets(nil, nil)
	big := int64(1 << 40)
	bud.limits.Store(spendlimit.NewSet([]ledger.SpendLimit{
		{ID: "spl_org", Scope: ledger.ScopeOrganization, ScopeID: ledger.OrganizationID, Period: "monthly", AmountCents: &big},
		{ID: "spl_pool", Scope: ledger.ScopeGroupPool, ScopeID: "eng", Period: "monthly", AmountCents: &big},
	}))
	id := &Identity{KeyID: "k1", Owner: "bob@example.com", Groups: "eng", Limits: ledger.Limits{BudgetCents: ledger.Cents(1 << 40)},
		PersonBudget: &ledger.PersonBudget{Cents: big, Period: "monthly"}}
	b.ReportAllocs()
	for range b.N {
		hold, refusal := bud.Admit(context.Background(), id, ledger.Limits{}, "", 1, time.Minute)
		if refusal != nil {
			b.Fatal(refusal.Message)
		}
		hold.Settle(0)
	}
}
