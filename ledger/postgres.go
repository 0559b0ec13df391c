package ledger

import (
	"context"
	"database/sql"
	"fmt"

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
	}}
	if err := s.migrate(ctx); err != nil {
		_ = db.Close()
		return nil, err
	}
	return s, nil
}
