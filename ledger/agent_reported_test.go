package ledger

import (
	"context"
	"testing"
	"time"
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
		mixed.SessionID, mixed.Endpoint = "sess-1", EndpointAgentReported
		if err := s.Insert(ctx, []Record{served, agent, mixed}); err != nil {
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
		got := map[string][2]int64{}
		for _, r := range rows {
			got[r.ID] = [2]int64{r.Requests, r.AgentReported}
		}
		if got["sess-1"] != [2]int64{2, 1} || got["sess-agent"] != [2]int64{1, 1} {
			t.Fatalf("sessions (requests, agent-reported): %v", got)
		}
	})
}
