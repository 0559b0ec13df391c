package ledger

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestMCPUpstreamTokens: a connection is stored, read and listed; of many
// instances claiming one refresh, one wins; a swap over a stale version is
// refused (so a rotated refresh token is never overwritten), and a lease
// that lapsed can be claimed again; a reconnect bumps the version under a
// refresh in flight; a link is used once.
func TestMCPUpstreamTokens(t *testing.T) {
	forEachStore(t, func(t *testing.T, s Store) {
		ts := s.(MCPUpstreamTokenStore)
		ctx := context.Background()
		now := time.Now().UTC().Truncate(time.Microsecond)
		row, err := ts.PutMCPUpstreamToken(ctx, MCPUpstreamToken{Server: "gh", Unit: "p:bob", Sealed: "c1", ExpiresAt: now.Add(time.Hour), UpdatedAt: now})
		if err != nil || row.Version != 1 || row.Sealed != "c1" || !row.ExpiresAt.Equal(now.Add(time.Hour)) {
			t.Fatalf("put: %+v %v", row, err)
		}
		if _, found, _ := ts.MCPUpstreamToken(ctx, "gh", "p:alice"); found {
			t.Fatal("alice has bob's token")
		}

		var won atomic.Int64
		var claimed MCPUpstreamToken
		var mu sync.Mutex
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				if c, err := ts.ClaimMCPUpstreamRefresh(ctx, "gh", "p:bob", 1, now, now.Add(20*time.Second)); err == nil {
					won.Add(1)
					mu.Lock()
					claimed = c
					mu.Unlock()
				} else if !errors.Is(err, ErrTokenChanged) {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		if won.Load() != 1 || claimed.Version != 2 {
			t.Fatalf("%d instances claimed one refresh; claimed %+v", won.Load(), claimed)
		}
		if _, err := ts.ClaimMCPUpstreamRefresh(ctx, "gh", "p:bob", 2, now, now.Add(20*time.Second)); !errors.Is(err, ErrTokenChanged) {
			t.Fatalf("a second claim under a running lease: %v", err)
		}
		if _, err := ts.SwapMCPUpstreamToken(ctx, MCPUpstreamToken{Server: "gh", Unit: "p:bob", Sealed: "stale", UpdatedAt: now}, 1); !errors.Is(err, ErrTokenChanged) {
			t.Fatalf("a swap over a stale version: %v", err)
		}
		row, err = ts.SwapMCPUpstreamToken(ctx, MCPUpstreamToken{Server: "gh", Unit: "p:bob", Sealed: "c2", ExpiresAt: now.Add(2 * time.Hour), UpdatedAt: now}, 2)
		if err != nil || row.Version != 3 || row.Sealed != "c2" || !row.RefreshUntil.IsZero() {
			t.Fatalf("swap: %+v %v", row, err)
		}
		// A lease whose instance died lapses.
		if _, err := ts.ClaimMCPUpstreamRefresh(ctx, "gh", "p:bob", 3, now, now.Add(-time.Second)); err != nil {
			t.Fatal(err)
		}
		if row, err = ts.ClaimMCPUpstreamRefresh(ctx, "gh", "p:bob", 4, now, now.Add(20*time.Second)); err != nil || row.Version != 5 {
			t.Fatalf("claim after a lapsed lease: %+v %v", row, err)
		}
		// The person connects again while that refresh runs: its swap loses.
		if row, err = ts.PutMCPUpstreamToken(ctx, MCPUpstreamToken{Server: "gh", Unit: "p:bob", Sealed: "c3", UpdatedAt: now}); err != nil || row.Version != 6 || !row.ExpiresAt.IsZero() {
			t.Fatalf("reconnect: %+v %v", row, err)
		}
		if _, err := ts.SwapMCPUpstreamToken(ctx, MCPUpstreamToken{Server: "gh", Unit: "p:bob", Sealed: "old", UpdatedAt: now}, 5); !errors.Is(err, ErrTokenChanged) {
			t.Fatalf("a refresh over a reconnect: %v", err)
		}
		if _, err := ts.PutMCPUpstreamToken(ctx, MCPUpstreamToken{Server: "linear", Unit: "p:bob", Sealed: "l1", UpdatedAt: now}); err != nil {
			t.Fatal(err)
		}
		if rows, err := ts.MCPUpstreamTokensOf(ctx, "p:bob"); err != nil || len(rows) != 2 || rows[0].Server != "gh" || rows[1].Server != "linear" {
			t.Fatalf("bob's rows %+v %v", rows, err)
		}
		if ok, err := ts.DeleteMCPUpstreamToken(ctx, "gh", "p:bob"); !ok || err != nil {
			t.Fatalf("delete %t %v", ok, err)
		}
		if _, found, _ := ts.MCPUpstreamToken(ctx, "gh", "p:bob"); found {
			t.Fatal("deleted row still read")
		}
		if _, err := ts.ClaimMCPUpstreamRefresh(ctx, "gh", "p:bob", 6, now, now.Add(time.Second)); !errors.Is(err, ErrTokenChanged) {
			t.Fatalf("claiming a deleted row: %v", err)
		}

		for i, want := range []bool{true, false} {
			if ok, err := ts.UseMCPUpstreamLink(ctx, "n1", now.Add(time.Minute), now); ok != want || err != nil {
				t.Fatalf("use %d: %t %v", i, ok, err)
			}
		}
	})
}
