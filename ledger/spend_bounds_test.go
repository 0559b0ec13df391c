package ledger

import (
	"context"
	"testing"
	"time"
)

// TestSpendSaturatesAtTheBound: a period whose running sum is
// exactly maxSpend, and a batch adding maxSpend more, must saturate, not
// fail with bigint out of range.
func TestSpendSaturatesAtTheBound(t *testing.T) {
	forEachStore(t, func(t *testing.T, s Store) {
		ctx := context.Background()
		now := time.Now().UTC()
		// 4096 records at MaxCost = 2^12 · 2^50 = 2^62 = maxSpend.
		recs := make([]Record, maxSpend/MaxCost)
		for i := range recs {
			recs[i] = Record{Time: now, RequestID: "r", KeyID: "k", CostPicoUSD: MaxCost, Status: 200, Outcome: "ok"}
		}
		for round := range 3 {
			if err := s.Insert(ctx, recs); err != nil {
				t.Fatalf("round %d: %v (row error: %v)", round, err, s.(RowRejecter).RejectsRow(err))
			}
		}
		spend, err := s.(SpendStore).CurrentSpend(ctx, now, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, sp := range spend {
			if sp.SpentPico < maxSpend {
				t.Errorf("%+v below the bound", sp)
			}
		}
	})
}
