package ledger

import (
	"context"
	"testing"
	"time"
)

// TestBreakerTrips: a trip is kept with what it knew, and read back with
// what its session spent after it (records of the same key and session,
// later than the trip), on both databases.
func TestBreakerTrips(t *testing.T) {
	forEachStore(t, func(t *testing.T, s Store) {
		ctx := context.Background()
		bs := s.(BreakerStore)
		trip := BreakerTrip{Time: t0.Add(90 * time.Second), KeyID: "alice", Workspace: "frontend", Person: "alice@example.com", SessionID: "sess-1",
			Agent: "claude-code", Pattern: "repeat", Action: "pause", Turns: 42, SpentPico: 7e11, VelocityPico: 2e10, EstimatePico: 12e11}
		if err := bs.RecordTrip(ctx, trip); err != nil {
			t.Fatal(err)
		}
		recs := []Record{sampleRecord(0), sampleRecord(1), sampleRecord(2), sampleRecord(3)}
		recs[3].SessionID = "other"
		if err := s.Insert(ctx, recs); err != nil {
			t.Fatal(err)
		}
		got, err := bs.BreakerTrips(ctx, t0, t0.Add(time.Hour))
		if err != nil || len(got) != 1 {
			t.Fatalf("trips %+v, %v", got, err)
		}
		// Records 2 (at 2 min) is after the trip; 0 and 1 are before it, 3
		// is another session.
		want := trip
		want.Time = trip.Time.UTC()
		want.AfterPico = recs[2].CostPicoUSD
		if got[0] != want {
			t.Fatalf("trip = %+v\nwant %+v", got[0], want)
		}
		if got, _ := bs.BreakerTrips(ctx, t0.Add(time.Hour), t0.Add(2*time.Hour)); len(got) != 0 {
			t.Fatalf("a trip outside the range: %+v", got)
		}
	})
}

// TestPurgeRecordsPurgesBreakerTrips: the ledger's retention takes the
// breaker's trips older than its cutoff with the records (a trip's report
// reads its session's records, gone too), and keeps the newer ones.
func TestPurgeRecordsPurgesBreakerTrips(t *testing.T) {
	forEachStore(t, func(t *testing.T, s Store) {
		ctx := context.Background()
		bs := s.(BreakerStore)
		for _, at := range []time.Time{t0, t0.AddDate(0, 0, 3)} {
			if err := bs.RecordTrip(ctx, BreakerTrip{Time: at, KeyID: "alice", SessionID: "s", Pattern: "repeat", Action: "warn"}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.(RecordPurger).PurgeRecords(ctx, t0.AddDate(0, 0, 2)); err != nil {
			t.Fatal(err)
		}
		got, err := bs.BreakerTrips(ctx, t0.AddDate(-1, 0, 0), t0.AddDate(1, 0, 0))
		if err != nil || len(got) != 1 || !got[0].Time.Equal(t0.AddDate(0, 0, 3)) {
			t.Fatalf("trips after the purge %+v (%v); want only the one after the cutoff", got, err)
		}
	})
}
