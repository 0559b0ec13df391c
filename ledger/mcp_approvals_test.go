package ledger

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestMCPApprovalStates: a pending approval is decided once; an approved
// one is consumed once, by one of many racing consumers, and not after
// its expiry; an expired wait cannot be approved afterwards.
func TestMCPApprovalStates(t *testing.T) {
	forEachStore(t, func(t *testing.T, s Store) {
		as := s.(MCPApprovalStore)
		ctx := context.Background()
		now := time.Now()
		mk := func(id string, ttl time.Duration) {
			t.Helper()
			a := MCPApproval{ID: id, CreatedAt: now, ExpiresAt: now.Add(ttl), KeyID: "k", Server: "prod", Tool: "deploy", ArgsHash: "h", Args: "{}", Binding: "b", Secret: "00"}
			if err := as.CreateMCPApproval(ctx, a); err != nil {
				t.Fatal(err)
			}
		}
		mk("apr_a", time.Minute)
		if _, err := as.DecideMCPApproval(ctx, "apr_a", ApprovalApproved, "bob", "admin", now); err != nil {
			t.Fatal(err)
		}
		if got, err := as.DecideMCPApproval(ctx, "apr_a", ApprovalDenied, "eve", "link", now); !errors.Is(err, ErrApprovalDecided) || got.State != ApprovalApproved || got.DecidedBy != "bob" {
			t.Fatalf("second decision: %+v %v", got, err)
		}
		var won atomic.Int64
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				if ok, err := as.ConsumeMCPApproval(ctx, "apr_a", time.Now()); err == nil && ok {
					won.Add(1)
				}
			})
		}
		wg.Wait()
		if won.Load() != 1 {
			t.Fatalf("%d consumers used one approval", won.Load())
		}

		mk("apr_b", time.Minute)
		if _, err := as.DecideMCPApproval(ctx, "apr_b", ApprovalApproved, "bob", "admin", now); err != nil {
			t.Fatal(err)
		}
		if ok, _ := as.ConsumeMCPApproval(ctx, "apr_b", now.Add(2*time.Minute)); ok {
			t.Fatal("an approval was used after its expiry")
		}

		mk("apr_c", time.Minute)
		if _, err := as.DecideMCPApproval(ctx, "apr_c", ApprovalExpired, "", "timeout", now); err != nil {
			t.Fatal(err)
		}
		if _, err := as.DecideMCPApproval(ctx, "apr_c", ApprovalApproved, "bob", "link", now); !errors.Is(err, ErrApprovalDecided) {
			t.Fatalf("approving an expired wait: %v", err)
		}
		mk("apr_d", -time.Second)
		if _, err := as.DecideMCPApproval(ctx, "apr_d", ApprovalApproved, "bob", "link", now); !errors.Is(err, ErrApprovalDecided) {
			t.Fatalf("approving past the expiry: %v", err)
		}
		if _, err := as.DecideMCPApproval(ctx, "apr_none", ApprovalApproved, "bob", "link", now); !errors.Is(err, ErrApprovalDecided) {
			t.Fatalf("an unknown id: %v", err)
		}
		pending, err := as.MCPApprovals(ctx, ApprovalPending, 10)
		if err != nil || len(pending) != 1 || pending[0].ID != "apr_d" {
			t.Fatalf("pending %+v %v", pending, err)
		}
		if n, err := s.(MCPApprovalPurger).PurgeMCPApprovals(ctx, now.Add(time.Second)); err != nil || n != 4 {
			t.Fatalf("purged %d, %v", n, err)
		}
	})
}
