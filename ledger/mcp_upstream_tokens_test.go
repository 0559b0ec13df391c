package ledger

import (
	"context"
	"errors"
	"sort"
	"strings"
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
				if c, err := ts.ClaimMCPUpstreamRefresh(ctx, "gh", "p:bob", 1, 20*time.Second); err == nil {
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
		if _, err := ts.ClaimMCPUpstreamRefresh(ctx, "gh", "p:bob", 2, 20*time.Second); !errors.Is(err, ErrTokenChanged) {
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
		if _, err := ts.ClaimMCPUpstreamRefresh(ctx, "gh", "p:bob", 3, -time.Second); err != nil {
			t.Fatal(err)
		}
		if row, err = ts.ClaimMCPUpstreamRefresh(ctx, "gh", "p:bob", 4, 20*time.Second); err != nil || row.Version != 5 {
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
		if _, err := ts.ClaimMCPUpstreamRefresh(ctx, "gh", "p:bob", 6, time.Second); !errors.Is(err, ErrTokenChanged) {
			t.Fatalf("claiming a deleted row: %v", err)
		}

		for i, want := range []bool{true, false} {
			if ok, err := ts.UseMCPUpstreamLink(ctx, "n1", now.Add(time.Minute), now); ok != want || err != nil {
				t.Fatalf("use %d: %t %v", i, ok, err)
			}
		}
	})
}

// TestMCPUpstreamTokenVersionedDelete (hostile review H5, H6): a dead
// grant is deleted only at the version its refresh claimed, so a
// reconnect that landed meanwhile survives; the lease is set and judged
// on the database's clock (a running lease is refused to a second
// claim whatever the caller's clock says, and lies ahead of the
// database's now by about its length); the shared keys' rows are listed.
func TestMCPUpstreamTokenVersionedDelete(t *testing.T) {
	forEachStore(t, func(t *testing.T, s Store) {
		ts := s.(MCPUpstreamTokenStore)
		ctx := context.Background()
		now := time.Now().UTC()
		if _, err := ts.PutMCPUpstreamToken(ctx, MCPUpstreamToken{Server: "gh", Unit: "p:bob", Sealed: "c1", UpdatedAt: now}); err != nil {
			t.Fatal(err)
		}
		claimed, err := ts.ClaimMCPUpstreamRefresh(ctx, "gh", "p:bob", 1, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if d := time.Until(claimed.RefreshUntil); d < 50*time.Second || d > 70*time.Second {
			t.Fatalf("lease ends in %v; want about a minute on the database's clock", d)
		}
		if _, err := ts.ClaimMCPUpstreamRefresh(ctx, "gh", "p:bob", claimed.Version, time.Minute); !errors.Is(err, ErrTokenChanged) {
			t.Fatalf("a second claim under a running lease: %v", err)
		}
		// The person connects again while the refresh is in flight.
		if _, err := ts.PutMCPUpstreamToken(ctx, MCPUpstreamToken{Server: "gh", Unit: "p:bob", Sealed: "c2", UpdatedAt: now}); err != nil {
			t.Fatal(err)
		}
		if gone, err := ts.DeleteMCPUpstreamTokenAt(ctx, "gh", "p:bob", claimed.Version); gone || err != nil {
			t.Fatalf("the stale refresh deleted the new grant: %t %v", gone, err)
		}
		row, found, _ := ts.MCPUpstreamToken(ctx, "gh", "p:bob")
		if !found || row.Sealed != "c2" {
			t.Fatalf("after the stale delete: %+v %t", row, found)
		}
		if gone, err := ts.DeleteMCPUpstreamTokenAt(ctx, "gh", "p:bob", row.Version); !gone || err != nil {
			t.Fatalf("delete at the current version: %t %v", gone, err)
		}
		for _, u := range []string{"k:ci", "p:alice", "k:build"} {
			if _, err := ts.PutMCPUpstreamToken(ctx, MCPUpstreamToken{Server: "gh", Unit: u, Sealed: "x", UpdatedAt: now}); err != nil {
				t.Fatal(err)
			}
		}
		if rows, err := ts.MCPUpstreamKeyTokens(ctx); err != nil || len(rows) != 2 || rows[0].Unit != "k:build" || rows[1].Unit != "k:ci" {
			t.Fatalf("key rows %+v %v", rows, err)
		}
	})
}

// TestMCPUpstreamGrantsEndWithTheirHolder (hostile review H9): revoking
// a key (status no longer active) deletes its shared grants, in the same
// transaction; a deprovisioned person's grants are deleted by email
// (any case) or subject; nobody else's are touched.
func TestMCPUpstreamGrantsEndWithTheirHolder(t *testing.T) {
	forEachStore(t, func(t *testing.T, s Store) {
		ts, cs := s.(MCPUpstreamTokenStore), s.(ControlStore)
		ctx := context.Background()
		now := time.Now().UTC()
		// The watchers are told of every grant deleted with its holder,
		// so its tokens can be revoked where they were issued.
		var told []string
		stop := s.(MCPUpstreamGoneWatcher).WatchMCPUpstreamTokensGone(func(rows []MCPUpstreamToken) {
			for _, r := range rows {
				told = append(told, r.Server+"/"+r.Unit+"/"+r.Sealed)
			}
		})
		defer stop()
		for _, u := range []string{"k:ci", "k:other", "p:dana@example.com", "p:00u1", "p:erin@example.com",
			"s:https://idp.example 00u1", "s:https://idp.example 00u1x", "s:https://idp.example 0_u%",
			"s:https://idp.example frank 00u1", "s:https://idp.example 00U1"} {
			for _, server := range []string{"gh", "linear"} {
				if _, err := ts.PutMCPUpstreamToken(ctx, MCPUpstreamToken{Server: server, Unit: u, Sealed: "x", UpdatedAt: now}); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := cs.PutKey(ctx, ControlKey{ID: "ci", SecretHash: "h-ci", Status: "active", CreatedAt: now, UpdatedAt: now}); err != nil {
			t.Fatal(err)
		}
		if _, err := cs.UpdateKey(ctx, "ci", func(k *ControlKey) error { k.Name = "renamed"; return nil }); err != nil {
			t.Fatal(err)
		}
		if rows, _ := ts.MCPUpstreamKeyTokens(ctx); len(rows) != 4 {
			t.Fatalf("a change that is no revoke removed grants: %d rows", len(rows))
		}
		if _, err := cs.UpdateKey(ctx, "ci", func(k *ControlKey) error { k.Status = "inactive"; return nil }); err != nil {
			t.Fatal(err)
		}
		if rows, _ := ts.MCPUpstreamKeyTokens(ctx); len(rows) != 2 || rows[0].Unit != "k:other" {
			t.Fatalf("after revoking key ci: %+v", rows)
		}
		if sort.Strings(told); strings.Join(told, ",") != "gh/k:ci/x,linear/k:ci/x" {
			t.Fatalf("told of the revoked key's grants: %q", told)
		}
		told = nil
		// Dana's grants by email, by subject and by (issuer, subject):
		// not those of a subject that merely starts like hers.
		if n, err := ts.DeleteMCPUpstreamTokensOfPerson(ctx, "Dana@Example.com", "00u1"); n != 6 || err != nil || len(told) != 6 {
			t.Fatalf("deprovisioning dana: %d %v, told of %q", n, err, told)
		}
		// Nor those of a subject that ends like hers, or differs in case.
		for _, other := range []string{"s:https://idp.example 00u1x", "s:https://idp.example frank 00u1", "s:https://idp.example 00U1"} {
			if rows, _ := ts.MCPUpstreamTokensOf(ctx, other); len(rows) != 2 {
				t.Fatalf("another subject's grants (%s): %+v", other, rows)
			}
		}
		if rows, _ := ts.MCPUpstreamTokensOf(ctx, "s:https://idp.example 00U1"); len(rows) != 2 {
			t.Fatalf("a subject differing only in case: %+v", rows)
		}
		// LIKE's wildcards in a subject match only themselves.
		if n, err := ts.DeleteMCPUpstreamTokensOfPerson(ctx, "", "0%"); n != 0 || err != nil {
			t.Fatalf("a subject with a wildcard: %d %v", n, err)
		}
		if n, err := ts.DeleteMCPUpstreamTokensOfPerson(ctx, "", "0_u%"); n != 2 || err != nil {
			t.Fatalf("a subject with wildcards, itself: %d %v", n, err)
		}
		if rows, _ := ts.MCPUpstreamTokensOf(ctx, "p:erin@example.com"); len(rows) != 2 {
			t.Fatalf("erin's grants: %+v", rows)
		}
		if n, err := ts.DeleteMCPUpstreamTokensOfPerson(ctx, "", ""); n != 0 || err != nil {
			t.Fatalf("an empty person: %d %v", n, err)
		}
	})
}
