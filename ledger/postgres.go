package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"
	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver
)

// migrationLockKey is the advisory lock that serializes migrations when
// several gateway instances start against one database at once.
const migrationLockKey = 0x6d6f64656c676174 // "modelgat"

// OpenPostgres connects to the PostgreSQL ledger at dsn (a postgres:// URL
// or key=value string) and migrates it.
func OpenPostgres(ctx context.Context, dsn string) (Store, error) {
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		// pgx's parse errors may quote the DSN, password included.
		return nil, fmt.Errorf("ledger postgres: invalid connection string")
	}
	if err := db.PingContext(ctx); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("ledger postgres: connect: %w", err)
	}
	s := &sqlStore{db: db, d: dialect{
		name:        "postgres",
		placeholder: numberedPlaceholder,
		lockMigrations: func(ctx context.Context, tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(migrationLockKey))
			return err
		},
		maxParams: 65535,
		least:     "LEAST", greatest: "GREATEST",
		rowError:           postgresRowError,
		conflict:           postgresConflict,
		sharedReservations: true,
	}}
	if err := s.migrate(ctx); err != nil {
		_ = db.Close()
		return nil, err
	}
	if err := s.installReserveFunction(ctx); err != nil {
		_ = db.Close()
		return nil, err
	}
	return s, nil
}

// postgresRowError is a data exception (class 22: bad encoding, out of
// range), an integrity violation (23) or a program limit (54, a value too
// large): the row is at fault, and another try would fail the same way.
func postgresRowError(err error) bool {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || len(pe.Code) < 2 {
		return false
	}
	switch pe.Code[:2] {
	case "22", "23", "54":
		return true
	}
	return false
}

// postgresConflict is a serialization failure (40001) or a deadlock
// (40P01): the transaction lost to another, and may simply run again.
func postgresConflict(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "40001" || pe.Code == "40P01")
}
