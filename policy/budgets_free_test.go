package policy

import (
	"context"
	"testing"
	"time"

	"github.com/modelgate/modelgate/ledger"
)

// TestFreeRequestPassesSpentBudget: a request estimated at $0 (a local
// model) is admitted by a spent budget; a paid one is not.
func TestFreeRequestPassesSpentBudget(t *testing.T) {
	bud := NewBudgets(nil, nil)
	id := &Identity{KeyID: "k", Workspace: "w", Limits: ledger.Limits{BudgetCents: ledger.Cents(0)}}
	ws := ledger.Limits{BudgetCents: ledger.Cents(0)}
	if _, refusal := bud.Admit(context.Background(), id, ws, "s", 1, time.Minute); refusal == nil {
		t.Fatal("paid request admitted on a zero budget")
	}
	r, refusal := bud.Admit(context.Background(), id, ws, "s", 0, time.Minute)
	if refusal != nil {
		t.Fatalf("free request refused: %s", refusal.Message)
	}
	r.Settle(0)
}
