package ledger

import (
	"context"
	"slices"
	"testing"
	"time"
)

// TestSignOutKeepsOnlyLiveSessions: a sign-out moves the control
// version and is read back with the controls, a partial read included;
// a session past its expiry is neither read nor kept (the next sign-out
// deletes its row).
func TestSignOutKeepsOnlyLiveSessions(t *testing.T) {
	forEachStore(t, func(t *testing.T, s Store) {
		cs := s.(ControlStore)
		ctx := context.Background()
		v0, err := cs.ControlVersion(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := cs.SignOut(ctx, "old-session", time.Now().Add(-time.Minute)); err != nil {
			t.Fatal(err)
		}
		if v, _ := cs.ControlVersion(ctx); v != v0+1 {
			t.Fatalf("control version %d after a sign-out, want %d", v, v0+1)
		}
		for _, id := range []string{"live-session", "live-session"} {
			if err := cs.SignOut(ctx, id, time.Now().Add(time.Hour)); err != nil {
				t.Fatalf("sign-out of %s (twice is fine): %v", id, err)
			}
		}
		want := []string{SessionDigest("live-session")}
		if c, err := cs.LoadControls(ctx); err != nil || !slices.Equal(c.SignedOut, want) {
			t.Fatalf("full read: %v %v, want %v", c.SignedOut, err, want)
		}
		if c, err := cs.ReadControls(ctx, nil, nil); err != nil || !slices.Equal(c.SignedOut, want) {
			t.Fatalf("partial read: %v %v, want %v", c.SignedOut, err, want)
		}
		var rows int
		if err := s.(*sqlStore).db.QueryRow(`SELECT COUNT(*) FROM signed_out_sessions`).Scan(&rows); err != nil || rows != 1 {
			t.Fatalf("%d rows kept (%v), want 1: the expired one is purged", rows, err)
		}
	})
}
