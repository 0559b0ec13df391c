package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// copyColumns are recordColumns as COPY names them.
func copyColumns() []string {
	cols := strings.Split(recordColumns, ",")
	for i := range cols {
		cols[i] = strings.TrimSpace(cols[i])
	}
	return cols
}

// copyRecords writes a batch into usage_records with COPY, on conn, inside
// the transaction the caller began on it. COPY skips the parse, plan and
// per-row executor work of an INSERT and fills heap pages several rows at
// a time: the PostgreSQL ledger's main cost on a busy gateway
// (BenchmarkPostgresInsertBatch in BENCHMARKS.md).
func copyRecords(ctx context.Context, conn *sql.Conn, recs []Record) error {
	err := conn.Raw(func(dc any) error {
		c, ok := dc.(*stdlib.Conn)
		if !ok {
			return errors.New("not a pgx connection")
		}
		_, err := c.Conn().CopyFrom(ctx, pgx.Identifier{"usage_records"}, copyColumns(), &recordRows{recs: recs})
		return err
	})
	if err != nil {
		return fmt.Errorf("ledger insert: %w", err)
	}
	return nil
}

// recordRows feeds a batch to COPY a row at a time, reusing one row of
// values.
type recordRows struct {
	recs []Record
	next int
	row  []any
}

func (r *recordRows) Next() bool {
	r.next++
	return r.next <= len(r.recs)
}

func (r *recordRows) Values() ([]any, error) {
	r.row = appendRecordArgs(r.row[:0], &r.recs[r.next-1])
	return r.row, nil
}

func (r *recordRows) Err() error { return nil }
