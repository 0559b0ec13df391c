package ledger

import (
	"context"
	"math"
	"testing"
)

// atTheBounds is a record as the writer stores an upstream's absurd usage:
// every count, price and cost clamped to its bound.
func atTheBounds(i int) Record {
	r := sampleRecord(i % 60)
	r.InputTokens, r.CacheCreation5m, r.CacheCreation1h, r.CacheReadTokens, r.OutputTokens =
		MaxTokens, MaxTokens, MaxTokens, MaxTokens, MaxTokens
	r.Prices = Prices{MaxPrice, MaxPrice, MaxPrice, MaxPrice, MaxPrice}
	r.CostPicoUSD = MaxCost
	return r
}

// TestReportsSurviveManyRowsAtTheBounds: the bounds keep one record's
// cost at MaxCost (2^50), but a day of records from an upstream that
// always reports absurd usage sums past int64 after 8,192 of them, and
// SQLite's SUM then fails with "integer overflow": the cost report
// answered 500 for every range holding that day.
func TestReportsSurviveManyRowsAtTheBounds(t *testing.T) {
	forEachStore(t, func(t *testing.T, s Store) {
		const n = 9000
		recs := make([]Record, n)
		for i := range recs {
			recs[i] = atTheBounds(i)
		}
		if err := s.Insert(context.Background(), recs); err != nil {
			t.Fatal(err)
		}
		day := "starting_at=2025-09-01T00:00:00Z&ending_at=2025-09-02T00:00:00Z"
		for _, q := range []string{"", "&group_by[]=description", "&group_by[]=workspace_id"} {
			c := cost(t, s, day+q)
			if len(c.Data) != 1 || len(c.Data[0].Results) == 0 {
				t.Fatalf("%s: %+v", q, c)
			}
			for _, r := range c.Data[0].Results {
				if r.Amount != formatCents(math.MaxInt64) {
					t.Errorf("%s: amount %s, want the saturated %s", q, r.Amount, formatCents(math.MaxInt64))
				}
			}
		}
		u := usage(t, s, day)
		if got, want := u.Data[0].Results[0].OutputTokens, int64(n)*MaxTokens; got != want {
			t.Errorf("output tokens %d, want %d", got, want)
		}
	})
}

func TestSplitSumValue(t *testing.T) {
	split := func(v int64) splitSum { return splitSum{v >> splitShift, v & (1<<splitShift - 1)} }
	for _, v := range []int64{0, 1, -1, MaxCost, 1 << 40, math.MaxInt64, math.MinInt64, -(1 << 50) + 7} {
		if got := split(v).value(); got != v {
			t.Errorf("split(%d).value() = %d", v, got)
		}
	}
	if got := (splitSum{hi: math.MaxInt64, lo: 5}).value(); got != math.MaxInt64 {
		t.Errorf("huge sum = %d, want saturated", got)
	}
	if got := (splitSum{hi: math.MinInt64, lo: 5}).value(); got != math.MinInt64 {
		t.Errorf("huge negative sum = %d, want saturated", got)
	}
}
