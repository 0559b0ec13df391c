package ledger

import (
	"context"
	"testing"
	"time"
)

// Spend limits upsert on scope and period (keeping id and creation time),
// keep an explicit no-limit override apart from no limit, and an
// increase request is resolved once: a second approval, from any
// instance, finds it resolved and writes nothing.
func TestSpendLimitsAndIncreaseRequests(t *testing.T) {
	for name, open := range sqlStores() {
		t.Run(name, func(t *testing.T) {
			s := open(t)
			ctx := context.Background()
			amount := int64(5000)
			first, err := s.PutSpendLimit(ctx, SpendLimit{Scope: ScopeUser, ScopeID: "bob", Period: "monthly", AmountCents: &amount, UpdatedAt: time.Now().Add(-time.Hour)})
			if err != nil {
				t.Fatal(err)
			}
			again, err := s.PutSpendLimit(ctx, SpendLimit{Scope: ScopeUser, ScopeID: "bob", Period: "monthly", Downgrade: "local"})
			if err != nil {
				t.Fatal(err)
			}
			if again.ID != first.ID || !again.CreatedAt.Equal(first.CreatedAt) || again.AmountCents != nil || again.Downgrade != "local" || !again.UpdatedAt.After(first.UpdatedAt) {
				t.Errorf("upsert: first %+v, then %+v", first, again)
			}
			if _, err := s.PutSpendLimit(ctx, SpendLimit{Scope: ScopeUser, ScopeID: "bob", Period: "daily", AmountCents: &amount}); err != nil {
				t.Fatal(err)
			}
			all, err := s.SpendLimits(ctx)
			if err != nil || len(all) != 2 {
				t.Fatalf("limits %+v, %v", all, err)
			}
			if ok, err := s.DeleteSpendLimit(ctx, all[1].ID); !ok || err != nil {
				t.Errorf("delete: %v %v", ok, err)
			}
			if ok, _ := s.DeleteSpendLimit(ctx, all[1].ID); ok {
				t.Error("deleted twice")
			}

			r, err := s.CreateIncreaseRequest(ctx, IncreaseRequest{Person: "bob", Email: "bob@example.com", Groups: []string{"eng"}, Period: "monthly", AmountCents: 9000, Reason: "release week"})
			if err != nil {
				t.Fatal(err)
			}
			raised := int64(9000)
			ok, l, err := s.ResolveIncreaseRequest(ctx, r.ID, RequestApproved, "alice", time.Now(), &SpendLimit{Scope: ScopeUser, ScopeID: "bob", Period: "monthly", AmountCents: &raised})
			if !ok || err != nil || l.ID != first.ID || l.AmountCents == nil || *l.AmountCents != 9000 {
				t.Fatalf("approve: %v %+v %v", ok, l, err)
			}
			lower := int64(1)
			if ok, _, err := s.ResolveIncreaseRequest(ctx, r.ID, RequestApproved, "mallory", time.Now(), &SpendLimit{Scope: ScopeUser, ScopeID: "bob", Period: "monthly", AmountCents: &lower}); ok || err != nil {
				t.Errorf("approved twice: %v %v", ok, err)
			}
			got, found, err := s.IncreaseRequest(ctx, r.ID)
			if !found || err != nil || got.Status != RequestApproved || got.ResolvedBy != "alice" || got.SpendLimitID != first.ID || got.Reason != "release week" || len(got.Groups) != 1 {
				t.Errorf("resolved request %+v %v %v", got, found, err)
			}
			all, _ = s.SpendLimits(ctx)
			if len(all) != 1 || *all[0].AmountCents != 9000 {
				t.Errorf("after a replayed approval the limit is %+v", all)
			}
			list, err := s.IncreaseRequests(ctx, 10)
			if err != nil || len(list) != 1 {
				t.Errorf("list %+v %v", list, err)
			}
		})
	}
}
