package ledger

import (
	"context"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"
)

// randomRecords are records spread over days, keys, models, tiers and
// sessions, with usage and prices of every size.
func randomRecords(rng *rand.Rand, n int, start time.Time) []Record {
	pick := func(list ...string) string { return list[rng.IntN(len(list))] }
	out := make([]Record, n)
	for i := range out {
		r := Record{
			Time:    start.Add(time.Duration(rng.Int64N(int64(10 * 24 * time.Hour)))).Truncate(time.Microsecond),
			KeyID:   pick("alice", "bob", "carol", "apikey_1"),
			Alias:   pick("claude", "coder", "local"),
			Status:  200,
			Outcome: "ok",
		}
		r.Workspace = pick("", "frontend", "backend")
		r.UpstreamModel = r.Alias + "-v" + pick("1", "2")
		r.ServiceTier = pick("standard", "batch", "priority")
		r.InputTokens, r.OutputTokens = rng.Int64N(200000), rng.Int64N(20000)
		r.CacheReadTokens, r.CacheCreation5m, r.CacheCreation1h = rng.Int64N(100000), rng.Int64N(5000), rng.Int64N(5000)
		r.Prices = Prices{Input: rng.Int64N(20_000_000), Output: rng.Int64N(80_000_000), CacheRead: rng.Int64N(2_000_000),
			CacheWrite5m: rng.Int64N(4_000_000), CacheWrite1h: rng.Int64N(6_000_000)}
		r.CostPicoUSD = r.Prices.Cost(&r)
		out[i] = r
	}
	return out
}

// TestRollupEqualsRecords: every report query the roll-up answers gives
// exactly what summing the records gives, on both databases, for records
// written live and for records stored before the roll-up existed.
func TestRollupEqualsRecords(t *testing.T) {
	forEachStore(t, func(t *testing.T, st Store) {
		s := st.(*sqlStore)
		ctx := context.Background()
		rng := rand.New(rand.NewPCG(7, 11))
		start := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
		recs := randomRecords(rng, 3000, start)
		// Every tenth request failed before using anything: not counted.
		used := int64(0)
		for i := range recs {
			if i%10 == 0 {
				r := &recs[i]
				r.InputTokens, r.OutputTokens, r.CacheReadTokens, r.CacheCreation5m, r.CacheCreation1h = 0, 0, 0, 0, 0
				r.CostPicoUSD, r.Status, r.Outcome = 0, 529, "upstream_error"
			} else {
				used++
			}
		}
		for i := 0; i < len(recs); i += 500 {
			if err := s.Insert(ctx, recs[i:min(i+500, len(recs))]); err != nil {
				t.Fatal(err)
			}
		}
		compare := func(t *testing.T) {
			t.Helper()
			// Every record that used tokens is one request, wherever it
			// is counted from.
			whole := Filter{From: start, To: start.Add(10 * 24 * time.Hour)}
			cols, groupBy := aggregateColumns(nil)
			for name, agg := range map[string]func(context.Context, Filter, int64, []string, string, bool) ([]AggregateRow, error){
				"roll-up": s.aggregateRollup, "records": s.aggregateRecords} {
				rows, err := agg(ctx, whole, (24 * time.Hour).Microseconds(), cols, groupBy, false)
				if err != nil {
					t.Fatal(err)
				}
				var n int64
				for _, r := range rows {
					n += r.Requests
				}
				if n != used {
					t.Fatalf("%s counts %d requests, want %d", name, n, used)
				}
			}
			dimsets := [][]Dimension{nil, {DimAlias}, {DimKeyID}, {DimAlias, DimKeyID}, {DimWorkspace, DimServiceTier},
				{DimAlias, DimUpstreamModel, DimServiceTier, DimContextWindow}}
			filters := []Filter{
				{From: start, To: start.Add(10 * 24 * time.Hour)},
				{From: start.Add(2 * 24 * time.Hour), To: start.Add(5 * 24 * time.Hour), APIKeyIDs: []string{"alice", "bob"}},
				{From: start, To: start.Add(10 * 24 * time.Hour), Models: []string{"coder"}, ExcludeServiceTiers: []string{"priority"}},
				{From: start.Add(3 * time.Hour), To: start.Add(77 * time.Hour), WorkspaceIDs: []string{"frontend"}},
			}
			for _, f := range filters {
				for _, w := range []time.Duration{time.Hour, 24 * time.Hour, 7 * 24 * time.Hour} {
					for _, dims := range dimsets {
						cols, groupBy := aggregateColumns(dims)
						got, err := s.aggregateRollup(ctx, f, w.Microseconds(), cols, groupBy, false)
						if err != nil {
							t.Fatal(err)
						}
						want, err := s.aggregateRecords(ctx, f, w.Microseconds(), cols, groupBy, false)
						if err != nil {
							t.Fatal(err)
						}
						sortRows(got)
						sortRows(want)
						if !reflect.DeepEqual(got, want) {
							t.Fatalf("filter %+v width %v dims %v: roll-up %d rows differs from records %d rows", f, w, dims, len(got), len(want))
						}
					}
				}
			}
		}
		compare(t)
		// Records stored before the roll-up existed: rebuilt on open.
		for _, table := range rollupTables() {
			if _, err := s.db.ExecContext(ctx, `DELETE FROM `+table.name); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.db.ExecContext(ctx, `UPDATE rollup_state SET backfilled = 0`); err != nil {
			t.Fatal(err)
		}
		if err := s.backfillRollup(ctx); err != nil {
			t.Fatal(err)
		}
		compare(t)
	})
}

// TestRollupRequestsBackfilled: a ledger whose roll-ups predate the
// request count (schema before migration 10) gets each row counted from
// its records on upgrade; a row whose records retention already purged
// keeps its sums and counts 0.
func TestRollupRequestsBackfilled(t *testing.T) {
	forEachStore(t, func(t *testing.T, st Store) {
		s := st.(*sqlStore)
		ctx := context.Background()
		start := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
		recs := randomRecords(rand.New(rand.NewPCG(3, 5)), 400, start)
		for i := 0; i < len(recs); i += 10 {
			r := &recs[i]
			r.InputTokens, r.OutputTokens, r.CacheReadTokens, r.CacheCreation5m, r.CacheCreation1h, r.CostPicoUSD = 0, 0, 0, 0, 0, 0
		}
		if err := s.Insert(ctx, recs); err != nil {
			t.Fatal(err)
		}
		// Back to the schema of migration 9, with one day's records purged.
		for _, q := range []string{`ALTER TABLE usage_rollup DROP COLUMN requests`, `ALTER TABLE usage_rollup_day DROP COLUMN requests`,
			`DELETE FROM schema_migrations WHERE version = 10`} {
			if _, err := s.db.ExecContext(ctx, q); err != nil {
				t.Fatal(err)
			}
		}
		purged := start.Add(24 * time.Hour)
		if _, err := s.db.ExecContext(ctx, `DELETE FROM usage_records WHERE ts_us < `+s.d.placeholder(1), purged.UnixMicro()); err != nil {
			t.Fatal(err)
		}
		if err := s.migrate(ctx); err != nil {
			t.Fatal(err)
		}
		cols, groupBy := aggregateColumns([]Dimension{DimAlias, DimKeyID})
		for _, w := range []time.Duration{time.Hour, 24 * time.Hour} {
			f := Filter{From: start, To: start.Add(10 * 24 * time.Hour)}
			got, err := s.aggregateRollup(ctx, f, w.Microseconds(), cols, groupBy, false)
			if err != nil {
				t.Fatal(err)
			}
			f.From = purged
			want, err := s.aggregateRecords(ctx, f, w.Microseconds(), cols, groupBy, false)
			if err != nil {
				t.Fatal(err)
			}
			var kept []AggregateRow
			var purgedInput int64
			for _, r := range got {
				if r.Bucket.Before(purged) {
					if r.Requests != 0 {
						t.Fatalf("width %v: purged bucket %v counts %d requests, want 0", w, r.Bucket, r.Requests)
					}
					purgedInput += r.InputTokens
					continue
				}
				kept = append(kept, r)
			}
			if purgedInput == 0 {
				t.Fatalf("width %v: the purged day's sums are gone", w)
			}
			sortRows(kept)
			sortRows(want)
			if !reflect.DeepEqual(kept, want) {
				t.Fatalf("width %v: back-filled roll-up (%d rows) differs from the records (%d rows)", w, len(kept), len(want))
			}
		}
	})
}

func sortRows(rows []AggregateRow) {
	slices.SortFunc(rows, func(a, b AggregateRow) int {
		if c := a.Bucket.Compare(b.Bucket); c != 0 {
			return c
		}
		for _, p := range [][2]string{{a.Alias, b.Alias}, {a.UpstreamModel, b.UpstreamModel}, {a.KeyID, b.KeyID},
			{a.Workspace, b.Workspace}, {a.ServiceTier, b.ServiceTier}, {a.ContextWindow, b.ContextWindow}} {
			if p[0] != p[1] {
				if p[0] < p[1] {
					return -1
				}
				return 1
			}
		}
		return 0
	})
}
