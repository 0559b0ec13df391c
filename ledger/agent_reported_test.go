package ledger

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/modelgate/modelgate/money"
)

// Agent-reported records are counted apart in the sessions report, and
// SessionServed sees only the gateway's own records, in its window.
func TestAgentReportedSessions(t *testing.T) {
	forEachStore(t, func(t *testing.T, s Store) {
		ctx := context.Background()
		served := sampleRecord(1) // sess-1, served by the gateway
		agent := sampleRecord(2)
		agent.SessionID, agent.Endpoint = "sess-agent", EndpointAgentReported
		mixed := sampleRecord(3)
		// Report-only, as agents' reports are by default: a counted
		// report of a session the gateway served is a double count, and
		// the insert drops it (agent_dedup.go).
		mixed.SessionID, mixed.Endpoint, mixed.ReportOnly = "sess-1", EndpointAgentReported, true
		seat := sampleRecord(4) // served on the caller's own subscription
		seat.SessionID, seat.Notional, seat.ReportOnly = "sess-seat", true, true
		if err := s.Insert(ctx, []Record{served, agent, mixed, seat}); err != nil {
			t.Fatal(err)
		}
		ss := s.(SessionServer)
		for _, c := range []struct {
			session string
			since   time.Time
			want    bool
		}{
			{"sess-1", t0, true},
			{"sess-agent", t0, false},            // only the agent's report
			{"sess-1", t0.Add(time.Hour), false}, // outside the window
			{"unknown", t0, false},
		} {
			got, err := ss.SessionServed(ctx, c.session, c.since)
			if err != nil || got != c.want {
				t.Errorf("SessionServed(%s, %v) = %v, %v; want %v", c.session, c.since, got, err, c.want)
			}
		}
		rows, _, err := s.(SessionLister).Sessions(ctx, Filter{From: t0, To: t0.Add(time.Hour)}, 10, 0)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string][3]int64{}
		for _, r := range rows {
			got[r.ID] = [3]int64{r.Requests, r.AgentReported, r.Seat}
		}
		if got["sess-1"] != [3]int64{2, 1, 0} || got["sess-agent"] != [3]int64{1, 1, 0} || got["sess-seat"] != [3]int64{1, 0, 1} {
			t.Fatalf("sessions (requests, agent-reported, seat): %v", got)
		}
		recs, err := s.Query(ctx, Filter{From: t0, To: t0.Add(time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if r.Notional != (r.SessionID == "sess-seat") {
				t.Errorf("record of %s read back with notional %v", r.SessionID, r.Notional)
			}
		}
	})
}

// spendOfScope is the current monthly spend of one scope, 0 when none.
func spendOfScope(t *testing.T, s Store, now time.Time, scope, id, period string) int64 {
	t.Helper()
	rows, err := s.(SpendStore).CurrentSpend(context.Background(), now, []string{SessionScopeID("alice", "sess-agent")})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if r.Scope == scope && r.ScopeID == id && r.Period == period {
			return r.SpentPico
		}
	}
	return 0
}

// rollupTotals are the roll-ups' cost and request sums.
func rollupTotals(t *testing.T, s Store) [2][2]int64 {
	t.Helper()
	var out [2][2]int64
	for i, table := range rollupTables() {
		if err := s.(*sqlStore).db.QueryRow(`SELECT COALESCE(SUM(cost_pico), 0), COALESCE(SUM(requests), 0) FROM `+table.name).Scan(&out[i][0], &out[i][1]); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// A report-only agent record adds nothing to budget spend; a counted one
// does; deleting them takes back the records, their roll-up sums and the
// counted spend, and leaves the gateway's own records alone (N5).
func TestAgentReportedReportOnlyAndDelete(t *testing.T) {
	forEachStore(t, func(t *testing.T, s Store) {
		ctx := context.Background()
		now := time.Now().UTC().Truncate(time.Second)
		served := sampleRecord(1)
		served.Time, served.CostPicoUSD = now, 1_000
		reported := sampleRecord(2)
		reported.Time, reported.SessionID, reported.Endpoint, reported.RequestID = now, "sess-agent", EndpointAgentReported, "req_reported"
		reported.CostPicoUSD, reported.ReportOnly = 50_000_000_000_000, true
		counted := reported
		counted.RequestID, counted.CostPicoUSD, counted.ReportOnly = "req_counted", 7_000, false
		counted.Person, counted.Groups = "alice@example.com", "eng"
		if err := s.Insert(ctx, []Record{served, reported, counted}); err != nil {
			t.Fatal(err)
		}
		if got := spendOfScope(t, s, now, ScopeWorkspace, "frontend", "monthly"); got != 8_000 {
			t.Fatalf("workspace spend %d, want 8000: the gateway's 1000 and the counted report's 7000, not the report-only $50", got)
		}
		if got := spendOfScope(t, s, now, ScopeSession, SessionScopeID("alice", "sess-agent"), "total"); got != 7_000 {
			t.Fatalf("session spend %d, want 7000", got)
		}
		before := rollupTotals(t, s)
		if before[0] != [2]int64{50_000_000_008_000, 3} {
			t.Fatalf("roll-up before the delete: %v", before)
		}

		del := s.(AgentReportedDeleter)
		if got := spendOfScope(t, s, now, ScopeUser, "alice@example.com", "monthly"); got != 7_000 {
			t.Fatalf("the person's spend %d, want the counted report's 7000", got)
		}
		got, err := del.DeleteAgentReported(ctx, AgentReportedSelector{KeyID: "alice", SessionID: "sess-agent", RequestID: "req_counted",
			Person: "alice@example.com", Groups: "eng"})
		if err != nil || got != (AgentReportedDeleted{Records: 1, CostPico: 7_000, CountedPico: 7_000}) {
			t.Fatalf("delete one: %+v, %v", got, err)
		}
		for _, sc := range [][2]string{{ScopeUser, "alice@example.com"}, {ScopeGroup, "eng"}} {
			if got := spendOfScope(t, s, now, sc[0], sc[1], "monthly"); got != 0 {
				t.Fatalf("%s %s spend after the delete %d, want 0", sc[0], sc[1], got)
			}
		}
		if got := spendOfScope(t, s, now, ScopeWorkspace, "frontend", "monthly"); got != 1_000 {
			t.Fatalf("workspace spend after the delete %d, want 1000", got)
		}
		if got := spendOfScope(t, s, now, ScopeKey, "alice", "daily"); got != 1_000 {
			t.Fatalf("key spend after the delete %d, want 1000", got)
		}
		got, err = del.DeleteAgentReported(ctx, AgentReportedSelector{KeyID: "alice", SessionID: "sess-agent"})
		if err != nil || got != (AgentReportedDeleted{Records: 1, CostPico: 50_000_000_000_000}) {
			t.Fatalf("delete the session's rest: %+v, %v", got, err)
		}
		if after := rollupTotals(t, s); after != [2][2]int64{{1_000, 1}, {1_000, 1}} {
			t.Fatalf("roll-ups after the deletes: %v, want only the gateway's record", after)
		}
		recs, err := s.Query(ctx, Filter{From: now.Add(-time.Hour), To: now.Add(time.Hour)})
		if err != nil || len(recs) != 1 || recs[0].Endpoint != "messages" {
			t.Fatalf("records left: %+v, %v", recs, err)
		}
		// The gateway's own records are never an agent's to take back.
		if got, err := del.DeleteAgentReported(ctx, AgentReportedSelector{KeyID: "alice", SessionID: "sess-1"}); err != nil || got.Records != 0 {
			t.Fatalf("delete of a served session: %+v, %v", got, err)
		}
	})
}

// The cost report shows an agent's reported cost as reported: in the
// description view its own line, cost_type agent_reported, beside the
// priced lines of the same model, never lost for want of prices.
func TestCostReportShowsAgentReportedCost(t *testing.T) {
	forEachStore(t, func(t *testing.T, s Store) {
		served := sampleRecord(1)
		served.Prices = Prices{Input: 1_000_000}
		served.InputTokens, served.CacheCreation5m, served.CacheCreation1h, served.CacheReadTokens, served.OutputTokens = 100, 0, 0, 0, 0
		served.CostPicoUSD = served.Prices.Cost(&served)
		reported := sampleRecord(2)
		reported.Endpoint, reported.ReportOnly, reported.CostPicoUSD, reported.Prices = EndpointAgentReported, true, 3*money.PicoPerCent, Prices{}
		if err := s.Insert(context.Background(), []Record{served, reported}); err != nil {
			t.Fatal(err)
		}
		p := cost(t, s, "starting_at=2025-09-01T00:00:00Z&ending_at=2025-09-02T00:00:00Z&group_by[]=description")
		var lines []string
		for _, r := range p.Data[0].Results {
			tt := "-"
			if r.TokenType != nil {
				tt = *r.TokenType
			}
			lines = append(lines, r.Amount+" "+*r.CostType+" "+tt+" "+*r.Description)
		}
		want := "0.01 tokens uncached_input_tokens Claude Sonnet 4.5 Usage - Input Tokens\n3.0 agent_reported - Claude Sonnet 4.5 Usage - Agent-Reported Cost"
		if got := strings.Join(lines, "\n"); got != want {
			t.Fatalf("cost report by description:\n got %s\nwant %s", got, want)
		}
	})
}

// A session id is the client's choice, so two keys may report under the
// same one: a delete names the key, and takes back only that key's
// records, not another key's that share the session id or request id.
func TestAgentReportedDeleteStaysWithinItsKey(t *testing.T) {
	forEachStore(t, func(t *testing.T, s Store) {
		ctx := context.Background()
		now := time.Now().UTC().Truncate(time.Second)
		alice := sampleRecord(1)
		alice.Time, alice.SessionID, alice.Endpoint, alice.RequestID = now, "shared", EndpointAgentReported, "req_same"
		alice.CostPicoUSD, alice.ReportOnly = 3_000, false
		bob := alice
		bob.KeyID, bob.CostPicoUSD = "bob", 5_000
		if err := s.Insert(ctx, []Record{alice, bob}); err != nil {
			t.Fatal(err)
		}
		del := s.(AgentReportedDeleter)
		if got, err := del.DeleteAgentReported(ctx, AgentReportedSelector{KeyID: "carol", SessionID: "shared", RequestID: "req_same"}); err != nil || got.Records != 0 {
			t.Fatalf("delete under a key that reported nothing: %+v, %v", got, err)
		}
		got, err := del.DeleteAgentReported(ctx, AgentReportedSelector{KeyID: "alice", SessionID: "shared"})
		if err != nil || got != (AgentReportedDeleted{Records: 1, CostPico: 3_000, CountedPico: 3_000}) {
			t.Fatalf("delete alice's: %+v, %v", got, err)
		}
		recs, err := s.Query(ctx, Filter{From: now.Add(-time.Hour), To: now.Add(time.Hour)})
		if err != nil || len(recs) != 1 || recs[0].KeyID != "bob" {
			t.Fatalf("records left: %+v, %v; want bob's only", recs, err)
		}
		if got := spendOfScope(t, s, now, ScopeKey, "bob", "daily"); got != 5_000 {
			t.Fatalf("bob's key spend %d after alice's delete, want 5000", got)
		}
	})
}
