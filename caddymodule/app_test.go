package caddymodule

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/modelgate/modelgate/ledger"
)

// TestAppKeepsRecordsFromBeforeStart: Caddy may start the HTTP server
// before this app, so records enqueued before Start must reach the ledger,
// and Stop must flush them.
func TestAppKeepsRecordsFromBeforeStart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.db")
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	defer cancel()
	a := &App{Ledger: &LedgerConfig{Driver: "sqlite", DSN: path}, QueueSize: 2}
	if err := a.Provision(ctx); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	rec := ledger.Record{Time: now, KeyID: "alice", Alias: "echo", Status: 200, Outcome: "ok", ServiceTier: "standard"}
	for i := 0; i < 2; i++ {
		if !a.Enqueue(rec) {
			t.Fatalf("record %d before Start was refused", i+1)
		}
	}
	if a.Enqueue(rec) {
		t.Error("a third record before Start was accepted beyond queue_size 2")
	}
	if st := a.Stats(); st.QueueDepth != 2 {
		t.Errorf("queue depth before Start = %d, want 2", st.QueueDepth)
	}
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	// The writer's own queue is also 2 deep: let it take the early records.
	for i := 0; i < 200 && a.Stats().QueueDepth > 0; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	if !a.Enqueue(rec) {
		t.Fatal("record after Start refused")
	}
	if err := a.Stop(); err != nil {
		t.Fatal(err)
	}
	store, err := ledger.OpenSQLite(path)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	recs, err := store.Query(context.Background(), ledger.Filter{From: now.Add(-time.Minute), To: now.Add(time.Minute)})
	if err != nil || len(recs) != 3 {
		t.Fatalf("ledger holds %d records (%v), want 3", len(recs), err)
	}
}
