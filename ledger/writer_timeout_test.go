package ledger

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"
)

// TestWriterHungDatabaseIsUnhealthy: an insert that never returns (here a
// lock another PostgreSQL session holds on the ledger table) used to hold
// the writer forever: readiness said ok while nothing was written, and a
// durable request waited on its commit as long as the lock lasted.
func TestWriterHungDatabaseIsUnhealthy(t *testing.T) {
	dsn := freshPostgresSchema(t)
	s, err := OpenPostgres(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	locker, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer locker.Close()
	tx, err := locker.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback() }()
	if _, err := tx.Exec(`LOCK TABLE usage_records IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}

	w := NewWriter(s, WriterOptions{WriteTimeout: 50 * time.Millisecond, Retries: 1, RetryBackoff: time.Millisecond})
	w.Start()
	defer w.Close(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Commit(context.Background(), sampleRecord(0)) }()
	select {
	case err := <-done:
		if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, ErrHandedBack) {
			t.Fatalf("Commit = %v, want the write timeout, handed back", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Commit still waiting on a locked table")
	}
	probeCtx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := w.Health(probeCtx); !errors.Is(err, ErrLedgerUnhealthy) {
		t.Fatalf("Health = %v while the table is locked", err)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	if err := w.Health(context.Background()); err != nil {
		t.Fatalf("Health = %v after the lock went away", err)
	}
}
