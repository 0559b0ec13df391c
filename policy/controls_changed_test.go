package policy

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/modelgate/modelgate/ledger"
)

// TestControlsChanged: Changed is closed by this instance's own write at
// once, and by the refresh that sees another instance's write; a refresh
// that finds nothing new leaves it open. What an open connection watches
// to look at its key again.
func TestControlsChanged(t *testing.T) {
	p := filepath.Join(t.TempDir(), "ledger.db")
	var insts [2]*Controls
	for i := range insts {
		s, err := ledger.OpenSQLite(p)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		insts[i] = NewControls(nil)
		insts[i].SetStore(s.(ledger.ControlStore))
	}
	a, b := insts[0], insts[1]
	ctx := context.Background()
	closed := func(ch <-chan struct{}) bool {
		select {
		case <-ch:
			return true
		default:
			return false
		}
	}
	if err := b.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	onA, onB := a.Changed(), b.Changed()
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	if err := a.PutKey(ctx, ledger.ControlKey{ID: "apikey_1", Name: "k", SecretHash: secretHash("s-1"), Status: "active", CreatedAt: t0, UpdatedAt: t0}); err != nil {
		t.Fatal(err)
	}
	if !closed(onA) {
		t.Error("a write left its own instance's Changed open")
	}
	if closed(onB) {
		t.Error("the other instance's Changed closed before it refreshed")
	}
	if err := b.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if !closed(onB) {
		t.Error("the refresh that saw the write left Changed open")
	}
	again := b.Changed()
	if err := b.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if closed(again) {
		t.Error("a refresh that found nothing new closed Changed")
	}
	var none *Controls
	if none.Changed() != nil {
		t.Error("no registry has a Changed channel")
	}
}
