package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver
)

// postgresConns bounds an instance's connections, all kept open between
// calls: several instances must stay within PostgreSQL's
// max_connections (100 by default), or the server refuses the next
// connection outright. Calls beyond it queue in database/sql.
const postgresConns = 16

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
	// Every admission with a budget makes one short call (its
	// reservation) beside the writer's batches and the reports: keep
	// connections open for them instead of dialing one per call, as
	// database/sql's default of two idle connections would.
	db.SetMaxIdleConns(postgresConns)
	db.SetMaxOpenConns(postgresConns)
	db.SetConnMaxIdleTime(5 * time.Minute)
	s := &sqlStore{db: db, d: dialect{
		name:        "postgres",
		placeholder: numberedPlaceholder,
		lockMigrations: func(ctx context.Context, tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(migrationLockKey))
			return err
		},
		least: "LEAST", greatest: "GREATEST",
		rowError:           postgresRowError,
		conflict:           postgresConflict,
		sharedReservations: true,
		arrays:             true,
	}, pg: newPGStatements()}
	if err := s.migrate(ctx); err != nil {
		_ = db.Close()
		return nil, err
	}
	if s.copyTypes, err = tableCopyTypes(ctx, db); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("ledger postgres: %w", err)
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
	var cv *copyValueError
	if errors.As(err, &cv) {
		return true
	}
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || len(pe.Code) < 2 {
		return false
	}
	// 22P03 (incorrect binary data format) and 22P04 (bad COPY file
	// format) say the binary COPY stream does not fit the table: a
	// column's type changed since this instance read it at open. Every row
	// would fail alike; setting them aside would discard every record.
	if pe.Code == "22P03" || pe.Code == "22P04" {
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

// Unreachable reports whether err says the database could not be reached
// (no connection, a connection lost, the server shutting down), rather
// than an error the server answered or a wait that ran out.
func Unreachable(err error) bool {
	if err == nil || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return false
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		// 08: connection exceptions; 57P: the server is shutting down.
		return strings.HasPrefix(pe.Code, "08") || strings.HasPrefix(pe.Code, "57P")
	}
	// No answer from the server at all: a dial, a reset, an EOF.
	return true
}
