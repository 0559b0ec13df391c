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

// addSpendArrays upserts a batch's spend rows, keys in lock order, in
// one statement.
func addSpendArrays(ctx context.Context, tx *sql.Tx, keys []spendKey, m map[spendKey]int64, now int64) error {
	n := len(keys)
	scopes, ids, periods := make([]string, n), make([]string, n), make([]string, n)
	starts, picos := make([]int64, n), make([]int64, n)
	for i, k := range keys {
		scopes[i], ids[i], periods[i], starts[i], picos[i] = k.scope, k.id, k.period, k.start, min(m[k], maxSpend)
	}
	// ORDER BY the array position: rows are locked in the order given.
	if _, err := tx.ExecContext(ctx, `INSERT INTO budget_spend (scope, scope_id, period, period_start_us, spent_pico, updated_us)
SELECT s, i, p, t, v, $6 FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::bigint[]) WITH ORDINALITY AS u(s, i, p, t, v, n)
ORDER BY n
`+spendConflictSQL(), scopes, ids, periods, starts, picos, now); err != nil {
		return fmt.Errorf("ledger insert: budget spend: %w", err)
	}
	return nil
}

// upsertRollupArrays upserts a batch's rows of one roll-up table, keys in
// lock order, in one statement.
func upsertRollupArrays(ctx context.Context, tx *sql.Tx, table string, keys []rollupKey, m map[rollupKey]*rollupSums) error {
	n := len(keys)
	buckets := make([]int64, n)
	var texts [6][]string
	for c := range texts {
		texts[c] = make([]string, n)
	}
	var sums [len(rollupSums{})][]int64
	for c := range sums {
		sums[c] = make([]int64, n)
	}
	for i, k := range keys {
		buckets[i] = k.bucket
		texts[0][i], texts[1][i], texts[2][i], texts[3][i], texts[4][i], texts[5][i] = k.alias, k.upstream, k.key, k.workspace, k.tier, k.cwind
		for c, v := range m[k] {
			sums[c][i] = v
		}
	}
	args := make([]any, 0, 1+len(texts)+len(sums))
	args = append(args, buckets)
	for _, t := range texts {
		args = append(args, t)
	}
	for _, s := range sums {
		args = append(args, s)
	}
	var q strings.Builder
	q.WriteString(`INSERT INTO ` + table + ` (` + rollupColumns + `) SELECT `)
	for c := range args {
		if c > 0 {
			q.WriteString(", ")
		}
		fmt.Fprintf(&q, "c%d", c)
	}
	q.WriteString(` FROM unnest($1::bigint[]`)
	for c := 2; c <= len(args); c++ {
		typ := "bigint"
		if c <= 1+len(texts) {
			typ = "text"
		}
		fmt.Fprintf(&q, ", $%d::%s[]", c, typ)
	}
	q.WriteString(`) WITH ORDINALITY AS u(`)
	for c := range args {
		fmt.Fprintf(&q, "c%d, ", c)
	}
	// ORDER BY the array position: rows are locked in the order given.
	q.WriteString(`n) ORDER BY n ` + rollupConflictSQL(table))
	if _, err := tx.ExecContext(ctx, q.String(), args...); err != nil {
		return fmt.Errorf("ledger insert: report roll-up: %w", err)
	}
	return nil
}
