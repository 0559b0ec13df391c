package spendlimit

import (
	"testing"

	"github.com/modelgate/modelgate/ledger"
)

func cents(n int64) *int64 { return &n }

// A person's own limit is the one set for them, else their first group's
// per-member default, else their group rule's budget; an explicit no-limit
// override exempts them. Pools, the organization and the key add limits
// of their own.
func TestPersonLimitPrecedence(t *testing.T) {
	set := NewSet([]ledger.SpendLimit{
		{ID: "spl_org", Scope: ledger.ScopeOrganization, ScopeID: ledger.OrganizationID, Period: "monthly", AmountCents: cents(100000)},
		{ID: "spl_eng", Scope: ledger.ScopeGroup, ScopeID: "eng", Period: "monthly", AmountCents: cents(5000)},
		{ID: "spl_ops", Scope: ledger.ScopeGroup, ScopeID: "ops", Period: "monthly", AmountCents: cents(7000)},
		{ID: "spl_pool", Scope: ledger.ScopeGroupPool, ScopeID: "eng", Period: "weekly", AmountCents: cents(20000)},
		{ID: "spl_bob", Scope: ledger.ScopeUser, ScopeID: "bob", Period: "monthly", AmountCents: cents(9000), Downgrade: "local"},
		{ID: "spl_vip", Scope: ledger.ScopeUser, ScopeID: "vip", Period: "monthly"},
		{ID: "spl_key", Scope: ledger.ScopeKey, ScopeID: "apikey_1", Period: "daily", AmountCents: cents(300)},
	})
	def := &ledger.PersonBudget{Cents: 200, Period: "daily"}
	for _, c := range []struct {
		name   string
		caller Caller
		want   map[string]Applied // by period+scope
	}{
		{"own limit", Caller{Person: "bob", Groups: "eng", KeyID: "apikey_1", Default: def}, map[string]Applied{
			"monthly organization": {Cents: 100000, SourceScope: ledger.ScopeOrganization, LimitID: "spl_org"},
			"monthly user":         {Cents: 9000, SourceScope: ledger.ScopeUser, LimitID: "spl_bob", Downgrade: "local"},
			"weekly rbac_group":    {Cents: 20000, SourceScope: ledger.ScopeGroupPool, LimitID: "spl_pool"},
			"daily api_key":        {Cents: 300, SourceScope: ledger.ScopeKey, LimitID: "spl_key"},
			"daily user":           {Cents: 200, SourceScope: ledger.ScopeGroup},
		}},
		{"first group's default", Caller{Person: "carol", Groups: "ops\neng"}, map[string]Applied{
			"monthly organization": {Cents: 100000, SourceScope: ledger.ScopeOrganization, LimitID: "spl_org"},
			"monthly user":         {Cents: 7000, SourceScope: ledger.ScopeGroup, LimitID: "spl_ops"},
			"weekly rbac_group":    {Cents: 20000, SourceScope: ledger.ScopeGroupPool, LimitID: "spl_pool"},
		}},
		{"exempt", Caller{Person: "vip", Groups: "eng"}, map[string]Applied{
			"monthly organization": {Cents: 100000, SourceScope: ledger.ScopeOrganization, LimitID: "spl_org"},
			"weekly rbac_group":    {Cents: 20000, SourceScope: ledger.ScopeGroupPool, LimitID: "spl_pool"},
		}},
		{"key of no one", Caller{KeyID: "apikey_2", Default: def}, map[string]Applied{
			"monthly organization": {Cents: 100000, SourceScope: ledger.ScopeOrganization, LimitID: "spl_org"},
		}},
	} {
		got := set.Append(nil, c.caller)
		if len(got) != len(c.want) {
			t.Errorf("%s: %d limits apply, want %d: %+v", c.name, len(got), len(c.want), got)
			continue
		}
		for _, a := range got {
			w, ok := c.want[a.Period+" "+a.Scope]
			if !ok || a.Cents != w.Cents || a.SourceScope != w.SourceScope || a.LimitID != w.LimitID || a.Downgrade != w.Downgrade {
				t.Errorf("%s: %+v; want %+v", c.name, a, w)
			}
		}
	}
	// With no stored limit, a group rule's budget still applies.
	var none *Set
	if got := none.Append(nil, Caller{Person: "dan", Groups: "eng", Default: &ledger.PersonBudget{Cents: 5}}); len(got) != 1 || got[0].Period != "total" || got[0].ScopeID != "dan" {
		t.Errorf("no stored limits, a total group budget: %+v", got)
	}
}

// A session's limit is the one set for its id (an explicit no-limit
// exempts it), else its person's sessions', else their first group's
// with one, else every session's; counted on the session's spend, per
// key, for its whole life.
func TestSessionLimitPrecedence(t *testing.T) {
	set := NewSet([]ledger.SpendLimit{
		{ID: "spl_all", Scope: ledger.ScopeSession, ScopeID: SessionScopeID("", "", "", ""), Period: SessionPeriod, AmountCents: cents(500)},
		{ID: "spl_ops", Scope: ledger.ScopeSession, ScopeID: SessionScopeID("", "ops", "", ""), Period: SessionPeriod, AmountCents: cents(300)},
		{ID: "spl_bob", Scope: ledger.ScopeSession, ScopeID: SessionScopeID("bob", "", "", ""), Period: SessionPeriod, AmountCents: cents(200)},
		{ID: "spl_one", Scope: ledger.ScopeSession, ScopeID: SessionScopeID("bob", "", "", "claude:one"), Period: SessionPeriod, AmountCents: cents(900)},
		{ID: "spl_free", Scope: ledger.ScopeSession, ScopeID: SessionScopeID("", "", "k", "claude:free"), Period: SessionPeriod},
		{ID: "spl_legacy", Scope: ledger.ScopeSession, ScopeID: "session:claude:legacy", Period: SessionPeriod},
	})
	for _, c := range []struct {
		caller Caller
		want   string // limit id, "" for none
	}{
		{Caller{KeyID: "k", Session: "claude:x"}, "spl_all"},
		{Caller{KeyID: "k", Person: "carol", Groups: "eng\nops", Session: "claude:x"}, "spl_ops"},
		{Caller{KeyID: "k", Person: "bob", Groups: "ops", Session: "claude:x"}, "spl_bob"},
		{Caller{KeyID: "k", Person: "bob", Session: "claude:one"}, "spl_one"},
		{Caller{KeyID: "k", Person: "bob", Session: "claude:free"}, ""},
		{Caller{KeyID: "k", Person: "bob"}, ""},
		// Another person's, or another key's, copy of the id is theirs.
		{Caller{KeyID: "k2", Person: "mallory", Session: "claude:one"}, "spl_all"},
		{Caller{KeyID: "k2", Person: "mallory", Session: "claude:free"}, "spl_all"},
		{Caller{KeyID: "k2", Session: "claude:free"}, "spl_all"},
		// Stored before the person or key went with the id: it matches
		// no request.
		{Caller{KeyID: "k", Person: "bob", Session: "claude:legacy"}, "spl_bob"},
	} {
		got := ""
		for _, a := range set.Append(nil, c.caller) {
			if a.Scope == ledger.ScopeSession {
				if a.ScopeID != ledger.SessionScopeID(c.caller.KeyID, c.caller.Session) || a.Period != SessionPeriod {
					t.Errorf("%+v: counted on %s %s", c.caller, a.ScopeID, a.Period)
				}
				got = a.LimitID
			}
		}
		if got != c.want {
			t.Errorf("%+v: session limit %q, want %q", c.caller, got, c.want)
		}
	}
	for _, id := range []string{SessionScopeID("", "", "", ""), SessionScopeID("u", "", "", ""), SessionScopeID("", "g", "", ""),
		SessionScopeID("u", "", "", "user:x"), SessionScopeID("", "", "k", "user:x"), "session:legacy"} {
		u, g, k, s := SessionSelector(id)
		if back := SessionScopeID(u, g, k, s); back != id {
			t.Errorf("SessionScopeID(SessionSelector(%q)) = %q", id, back)
		}
	}
}

// TestDefaultNamesItsGroup (hostile pass 10, H10-8): a member of
// [gateway-admins, engineering] whose default comes from engineering's
// rule (the only one with a budget) is told engineering is the source,
// for a period and for a total; a default that names no group (a key
// minted before defaults did) still names the first.
func TestDefaultNamesItsGroup(t *testing.T) {
	c := Caller{Person: "alice", Groups: "gateway-admins\nengineering", Default: &ledger.PersonBudget{Cents: 100, Period: "monthly", Group: "engineering"}}
	if a, ok := (*Set)(nil).Person(c, "monthly"); !ok || a.SourceScope != ledger.ScopeGroup || a.SourceID != "engineering" {
		t.Fatalf("monthly default: %+v %v", a, ok)
	}
	c.Default = &ledger.PersonBudget{Cents: 100, Period: "total", Group: "engineering"}
	all := NewSet(nil).Append(nil, c)
	if len(all) != 1 || all[0].SourceID != "engineering" {
		t.Fatalf("total default: %+v", all)
	}
	c.Default.Group = ""
	if all = NewSet(nil).Append(nil, c); len(all) != 1 || all[0].SourceID != "gateway-admins" {
		t.Fatalf("a default of no group: %+v", all)
	}
}
