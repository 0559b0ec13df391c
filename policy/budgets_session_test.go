package policy

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/pgtest"
	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/spendlimit"
)

// A session-scoped spend limit caps one session's whole spend on every
// instance, through the same shared reservations: the limit for every
// session holds alice's session on two instances at once; bob's own
// sessions' limit is the tighter one that applies to his; an explicit
// no-limit for one session id exempts it; and beside a key's
// session_budget the tighter of the two holds, as one budget.
func TestSessionLimitHoldsAcrossInstances(t *testing.T) {
	dsn := pgtest.FreshSchema(t)
	a, b := openLeaseInstance(t, dsn, nil), openLeaseInstance(t, dsn, nil)
	ls := a.store.(ledger.SpendLimitStore)
	for _, l := range []ledger.SpendLimit{
		{Scope: ledger.ScopeSession, ScopeID: spendlimit.SessionScopeID("", "", "", ""), Period: spendlimit.SessionPeriod, AmountCents: cents(100)},
		{Scope: ledger.ScopeSession, ScopeID: spendlimit.SessionScopeID("bob@example.com", "", "", ""), Period: spendlimit.SessionPeriod, AmountCents: cents(40)},
		{Scope: ledger.ScopeSession, ScopeID: spendlimit.SessionScopeID("", "", "apikey_alice", "claude:exempt"), Period: spendlimit.SessionPeriod},
	} {
		if _, err := ls.PutSpendLimit(context.Background(), l); err != nil {
			t.Fatal(err)
		}
	}
	for _, in := range []*leaseInstance{a, b} {
		if err := in.b.Refresh(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	alice := &Identity{KeyID: "apikey_alice"}
	const cost = int64(3e11) // 30 cents
	if n := hammerIn(t, a, b, []*Identity{alice}, "claude:s1", cost); n*cost > 100*1e10 || n < 1 {
		t.Errorf("alice's session was admitted %d requests of 30 cents under a $1 session limit", n)
	}
	// hammer is through with a and b; two more instances for bob.
	a, b = openLeaseInstance(t, dsn, nil), openLeaseInstance(t, dsn, nil)
	for _, in := range []*leaseInstance{a, b} {
		if err := in.b.Refresh(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	bob := &Identity{KeyID: "apikey_bob", Owner: "bob@example.com", Groups: "eng", Runtime: true}
	if n := hammerIn(t, a, b, []*Identity{bob}, "claude:s2", cost); n*cost > 40*1e10 || n < 1 {
		t.Errorf("bob's session was admitted %d requests of 30 cents under his sessions' 40-cent limit", n)
	}
	a = openLeaseInstance(t, dsn, nil)
	if err := a.b.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	_, refusal := a.b.Admit(context.Background(), bob, ledger.Limits{}, "claude:s2", cost, time.Minute)
	if refusal == nil || !strings.Contains(refusal.Message, "session claude:s2 of key apikey_bob") {
		t.Errorf("the refusal past bob's session limit: %+v", refusal)
	}
	if !a.spendInSession(t, alice, "claude:exempt", 200*1e10) {
		t.Error("a session exempted by an explicit no-limit was refused")
	}
	// A key's session_budget of 20 cents beside the $1 limit for every
	// session: one budget, the tighter.
	capped := &Identity{KeyID: "apikey_capped", Limits: ledger.Limits{SessionBudgetCents: cents(20)}}
	if !a.spendInSession(t, capped, "claude:s3", 15*1e10) || a.spendInSession(t, capped, "claude:s3", 15*1e10) {
		t.Error("the key's tighter session_budget did not hold beside the session limit")
	}
	st := a.b.Status(alice, ledger.Limits{}, "claude:s4")
	if len(st) != 1 || st[0].Scope != ledger.ScopeSession || st[0].Amount != "100" || st[0].Source == nil || st[0].Source.Scope != ledger.ScopeSession {
		t.Errorf("/v1/me's budgets in a session: %+v", st)
	}
	a.flush()
}

func cents(n int64) *int64 { return &n }
