package policy

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/modelgate/modelgate/ledger"
)

// BenchmarkControlsPutKey: one more runtime key, made through the
// registry, on a table already holding 1,000 (run it with -benchtime 300x so
// the table stays near that size), as a script provisioning a
// team's keys one by one through the admin API does.
func BenchmarkControlsPutKey(b *testing.B) {
	for name, open := range controlStores() {
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			c := NewControls(nil)
			c.SetStore(open(b))
			t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
			put := func(i int) {
				at := t0.Add(time.Duration(i) * time.Microsecond)
				id := fmt.Sprintf("apikey_%07d", i)
				if err := c.PutKey(ctx, ledger.ControlKey{ID: id, Name: id, WorkspaceID: "wrkspc_a", SecretHash: secretHash(id), Status: "active",
					CreatedAt: at, UpdatedAt: at, Limits: ledger.Limits{RPM: 600, BudgetCents: ledger.Cents(1000), BudgetPeriod: "monthly"}}); err != nil {
					b.Fatal(err)
				}
			}
			for i := range 1000 {
				put(i)
			}
			b.ResetTimer()
			for i := range b.N {
				put(1000 + i)
			}
		})
	}
}
