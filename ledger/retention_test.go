package ledger

import (
	"context"
	"net/url"
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
