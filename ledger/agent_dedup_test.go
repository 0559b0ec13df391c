package ledger

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

// dedupPair is a gateway record of session and a counted agent report of
// the same request, both charged to bob (his key, person and group).
func dedupPair(session string, at time.Time) (gateway, report Record) {
	gateway = Record{Time: at, RequestID: "req-" + session, KeyID: "bob-key", Workspace: "ws", Alias: "claude", UpstreamModel: "claude-up",
		Provider: "anthropic", ServiceTier: "standard", Endpoint: "messages", Status: 200, Outcome: OutcomeOK, InputTokens: 100,
		OutputTokens: 10, CostPicoUSD: 3e10, SessionID: session, Person: "bob@example.com", Groups: "eng"}
	report = gateway
	report.Endpoint, report.RequestID, report.CostPicoUSD = EndpointAgentReported, "agent-"+session, 4e10
	return gateway, report
}

// spentBy is the spend of scope/id in the monthly period of at.
func spentBy(t *testing.T, s Store, scope, id string, at time.Time) int64 {
	t.Helper()
	rows, err := s.(SpendStore).CurrentSpend(context.Background(), at, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if r.Scope == scope && r.ScopeID == id && r.Period == "monthly" {
			return r.SpentPico
		}
	}
	return 0
}

// reportRows is how many agent-reported rows of session are stored.
func reportRows(t *testing.T, s Store, session string) int {
	t.Helper()
	var n int
	if err := s.(*sqlStore).db.QueryRow(`SELECT COUNT(*) FROM usage_records WHERE endpoint = 'agent_reported' AND session_id = `+
		s.(*sqlStore).d.placeholder(1), session).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// An agent's counted report of a request and the gateway's own record of
// it count once whichever is written first, and whichever instance
// writes it: the report written first is taken back (its row and its
// spend on the key, person, group and organization) when the gateway's
// record comes; the report written after is dropped. Before, a report
// that reached an instance before the gateway's record was written
// counted as well as the record.
func TestAgentReportAndGatewayRecordCountOnce(t *testing.T) {
	forEachStore(t, func(t *testing.T, s Store) {
		ctx := context.Background()
		now := time.Now().UTC()
		check := func(session string) {
			t.Helper()
			for _, sc := range []struct{ scope, id string }{{ScopeKey, "bob-key"}, {ScopeUser, "bob@example.com"}, {ScopeGroup, "eng"},
				{ScopeOrganization, OrganizationID}} {
				if got := spentBy(t, s, sc.scope, sc.id, now); got != 3e10 {
					t.Errorf("%s: %s %s spent %d pico; want the gateway record's 3e10 only", session, sc.scope, sc.id, got)
				}
			}
			if n := reportRows(t, s, session); n != 0 {
				t.Errorf("%s: %d agent-reported rows kept", session, n)
			}
		}
		gw, rep := dedupPair("report-first", now)
		if err := s.Insert(ctx, []Record{rep}); err != nil {
			t.Fatal(err)
		}
		if got := spentBy(t, s, ScopeUser, "bob@example.com", now); got != 4e10 {
			t.Fatalf("the report alone: bob spent %d pico, want its 4e10", got)
		}
		if err := s.Insert(ctx, []Record{gw}); err != nil {
			t.Fatal(err)
		}
		check("report-first")
		// Later sessions add to the same spend rows: compare from here.
		if _, err := s.(*sqlStore).db.Exec(`DELETE FROM budget_spend`); err != nil {
			t.Fatal(err)
		}
		gw, rep = dedupPair("gateway-first", now)
		if err := s.Insert(ctx, []Record{gw}); err != nil {
			t.Fatal(err)
		}
		if err := s.Insert(ctx, []Record{rep}); err != nil {
			t.Fatal(err)
		}
		check("gateway-first")
	})
}

// Two instances on one PostgreSQL ledger, one writing the gateway's
// records and the other the agent's reports of the same requests at the
// same moment: each request counts once.
func TestAgentReportAndGatewayRecordCountOnceAcrossInstances(t *testing.T) {
	_, first, other := openPostgresPair(t)
	stores := [2]Store{first, other.(Store)}
	now := time.Now().UTC()
	const n = 40
	var wg sync.WaitGroup
	for i := range n {
		gw, rep := dedupPair(fmt.Sprintf("s%02d", i), now)
		for j, rec := range []Record{gw, rep} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					err := stores[j].Insert(context.Background(), []Record{rec})
					if err == nil || !stores[j].(*sqlStore).d.conflict(err) {
						if err != nil {
							t.Error(err)
						}
						return
					}
				}
			}()
		}
	}
	wg.Wait()
	if got := spentBy(t, stores[0], ScopeUser, "bob@example.com", now); got != n*3e10 {
		t.Errorf("bob spent %d pico over %d requests; want %d (each once, at the gateway's cost)", got, n, int64(n*3e10))
	}
	if got := spentBy(t, stores[1], ScopeOrganization, OrganizationID, now); got != n*3e10 {
		t.Errorf("the organization spent %d pico; want %d", got, int64(n*3e10))
	}
}
