package ledger

import (
	"context"
	"fmt"
	"testing"
	"time"
)

func TestPeriodBounds(t *testing.T) {
	at := time.Date(2026, 11, 26, 15, 4, 5, 0, time.UTC) // a Thursday
	for period, want := range map[string][2]time.Time{
		"daily":   {time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC), time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)},
		"weekly":  {time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC), time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)},
		"monthly": {time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)},
	} {
		if s, e := PeriodStart(period, at), periodEnd(period, at); !s.Equal(want[0]) || !e.Equal(want[1]) {
			t.Errorf("%s: %v–%v, want %v–%v", period, s, e, want[0], want[1])
		}
	}
	if s := PeriodStart("weekly", time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)); s.Day() != 23 {
		t.Errorf("a Monday starts its own week: %v", s)
	}
	if s := PeriodStart("weekly", time.Date(2026, 11, 29, 23, 0, 0, 0, time.UTC)); s.Day() != 23 {
		t.Errorf("a Sunday belongs to the week before: %v", s)
	}
}

// TestSpendFollowsInserts: the insert that stores records adds their cost
// to every scope and period they count for, on both databases.
func TestSpendFollowsInserts(t *testing.T) {
	forEachStore(t, func(t *testing.T, s Store) {
		ctx := context.Background()
		now := time.Now().UTC()
		recs := []Record{
			{Time: now, KeyID: "alice", Workspace: "frontend", SessionID: "s1", CostPicoUSD: 3e9, Status: 200, Outcome: "ok"},
			{Time: now, KeyID: "alice", Workspace: "frontend", SessionID: "s2", CostPicoUSD: 2e9, Status: 200, Outcome: "ok"},
			{Time: now, KeyID: "bob", CostPicoUSD: 1e9, Status: 200, Outcome: "ok"},
			{Time: now, KeyID: "bob", CostPicoUSD: 0, Status: 429, Outcome: "error"},
		}
		if err := s.Insert(ctx, recs[:2]); err != nil {
			t.Fatal(err)
		}
		if err := s.Insert(ctx, recs[2:]); err != nil {
			t.Fatal(err)
		}
		if err := s.Insert(ctx, recs[:1]); err != nil {
			t.Fatal(err)
		}
		spend, err := s.(SpendStore).CurrentSpend(ctx, now, []string{SessionScopeID("alice", "s1"), SessionScopeID("alice", "s2")})
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]int64{}
		for _, sp := range spend {
			got[sp.Scope+"/"+sp.ScopeID+"/"+sp.Period] = sp.SpentPico
		}
		for k, want := range map[string]int64{
			"api_key/alice/daily": 8e9, "api_key/alice/weekly": 8e9, "api_key/alice/monthly": 8e9, "api_key/alice/total": 8e9,
			"workspace/frontend/monthly": 8e9, "api_key/bob/daily": 1e9,
			"session/alice s1/total": 6e9, "session/alice s2/total": 2e9,
		} {
			if got[k] != want {
				t.Errorf("%s = %d, want %d (all: %v)", k, got[k], want, got)
			}
		}
	})
}

// Sessions are read only when named (hostile review §12): a client that
// invents a session id per request must not grow every instance's
// per-second spend read.
func TestCurrentSpendReadsOnlyNamedSessions(t *testing.T) {
	forEachStore(t, func(t *testing.T, s Store) {
		ctx := context.Background()
		now := time.Now().UTC()
		var recs []Record
		for i := range 300 {
			recs = append(recs, Record{Time: now, KeyID: "bob", SessionID: fmt.Sprint("s", i), CostPicoUSD: 1e9, Status: 200, Outcome: "ok"})
		}
		if err := s.Insert(ctx, recs); err != nil {
			t.Fatal(err)
		}
		named := []string{SessionScopeID("bob", "s7")}
		for i := range 600 {
			named = append(named, SessionScopeID("nobody", fmt.Sprint(i))) // more than one query's worth
		}
		spend, err := s.(SpendStore).CurrentSpend(ctx, now, named)
		if err != nil {
			t.Fatal(err)
		}
		sessions := 0
		for _, sp := range spend {
			if sp.Scope == ScopeSession {
				sessions++
				if sp.ScopeID != SessionScopeID("bob", "s7") || sp.SpentPico != 1e9 {
					t.Errorf("read session %q = %d", sp.ScopeID, sp.SpentPico)
				}
			}
		}
		if sessions != 1 {
			t.Fatalf("read %d session rows of 300 spent, want the 1 named", sessions)
		}
	})
}
