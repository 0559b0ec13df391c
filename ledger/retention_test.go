package ledger

import (
	"context"
	"net/url"
	"strconv"
	"testing"
	"time"
)

// TestPurgeRecords: records before the cutoff are deleted, in chunks
// (records sharing the chunk's last microsecond included), the rest kept,
// and the daily report over the purged days still answers from the
// roll-ups, on both stores.
func TestPurgeRecords(t *testing.T) {
	forEachStore(t, func(t *testing.T, s Store) {
		ctx := context.Background()
		p, ok := s.(RecordPurger)
		if !ok {
			t.Fatal("the store cannot purge records")
		}
		// Day 0 holds more than two chunks, five records of them at the
		// first chunk's last microsecond; day 3 holds two.
		old := make([]Record, 0, 2*purgeChunk+10)
		for i := range cap(old) {
			r := sampleRecord(0)
			r.Time = t0.Add(time.Duration(min(i, purgeChunk-1)+max(0, i-purgeChunk-4)) * time.Millisecond)
			r.OutputTokens = 1
			old = append(old, r)
		}
		for i := 0; i < len(old); i += 1000 {
			if err := s.Insert(ctx, old[i:min(i+1000, len(old))]); err != nil {
				t.Fatal(err)
			}
		}
		recent := []Record{sampleRecord(0), sampleRecord(1)}
		for i := range recent {
			recent[i].Time = recent[i].Time.AddDate(0, 0, 3)
		}
		if err := s.Insert(ctx, recent); err != nil {
			t.Fatal(err)
		}
		n, err := p.PurgeRecords(ctx, t0.AddDate(0, 0, 2))
		if err != nil || n != int64(len(old)) {
			t.Fatalf("purged %d (%v), want %d", n, err, len(old))
		}
		left, err := s.Query(ctx, Filter{From: t0.AddDate(-1, 0, 0), To: t0.AddDate(1, 0, 0)})
		if err != nil || len(left) != len(recent) {
			t.Fatalf("%d records left (%v), want the %d recent ones", len(left), err, len(recent))
		}
		if n, err := p.PurgeRecords(ctx, t0.AddDate(0, 0, 2)); err != nil || n != 0 {
			t.Errorf("a second purge: %d %v", n, err)
		}
		// The purged day's usage is still reported, from the roll-up.
		v := url.Values{"starting_at": {t0.Format(time.RFC3339)}, "ending_at": {t0.AddDate(0, 0, 4).Format(time.RFC3339)}}
		q, err := ParseUsageQuery(v, t0.AddDate(0, 0, 5))
		if err != nil {
			t.Fatal(err)
		}
		rep, err := UsageReport(ctx, s, q)
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Data) != 4 || len(rep.Data[0].Results) != 1 || rep.Data[0].Results[0].OutputTokens != int64(len(old)) {
			t.Fatalf("the purged day's report: %+v", rep.Data)
		}
		if got := rep.Data[3].Results[0].OutputTokens; got != 80 {
			t.Errorf("the kept day's output tokens: %d, want 80", got)
		}
	})
}

// Retention purges the budget spend of sessions idle past it, and only
// those: session ids are the client's choice, one per run, so their rows
// grew without bound (hostile review N10). Key and workspace spend stays.
func TestPurgeRecordsPurgesIdleSessionSpend(t *testing.T) {
	forEachStore(t, func(t *testing.T, s Store) {
		ctx := context.Background()
		db := s.(*sqlStore).db
		now := time.Now().UTC()
		var recs []Record
		for i := range purgeChunk + 3 { // more than one chunk of idle sessions
			r := sampleRecord(i)
			r.Time, r.CostPicoUSD, r.SessionID = now, 1, "idle-"+strconv.Itoa(i)
			recs = append(recs, r)
		}
		active := sampleRecord(0)
		active.Time, active.CostPicoUSD, active.SessionID = now, 1, "active"
		if err := s.Insert(ctx, append(recs, active)); err != nil {
			t.Fatal(err)
		}
		// The idle sessions were last spent in 40 days ago.
		old := now.AddDate(0, 0, -40).UnixMicro()
		if _, err := db.Exec(`UPDATE budget_spend SET updated_us = `+s.(*sqlStore).d.placeholder(1)+` WHERE scope_id LIKE 'alice idle-%'`, old); err != nil {
			t.Fatal(err)
		}
		count := func(scope string) int {
			var n int
			if err := db.QueryRow(`SELECT COUNT(*) FROM budget_spend WHERE scope = '` + scope + `'`).Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n
		}
		keys, workspaces := count(ScopeKey), count(ScopeWorkspace)
		if n := count(ScopeSession); n != len(recs)+1 {
			t.Fatalf("%d session rows before the purge, want %d", n, len(recs)+1)
		}
		if _, err := s.(RecordPurger).PurgeRecords(ctx, now.AddDate(0, 0, -30)); err != nil {
			t.Fatal(err)
		}
		if n := count(ScopeSession); n != 1 {
			t.Errorf("%d session rows after the purge, want only the active session's", n)
		}
		if count(ScopeKey) != keys || count(ScopeWorkspace) != workspaces {
			t.Errorf("the purge touched key or workspace spend")
		}
		spend, err := s.(SpendStore).CurrentSpend(ctx, now, []string{SessionScopeID("alice", "active")})
		if err != nil {
			t.Fatal(err)
		}
		var found bool
		for _, sp := range spend {
			found = found || (sp.Scope == ScopeSession && sp.SpentPico == 1)
		}
		if !found {
			t.Errorf("the active session's spend is gone: %+v", spend)
		}
	})
}
