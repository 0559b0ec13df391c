package ledger

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/jackc/pgx/v5/stdlib"
)

// copyRecords writes a batch into usage_records with COPY, on conn, inside
// the transaction the caller began on it. COPY skips the parse, plan and
// per-row executor work of an INSERT and fills heap pages several rows at
// a time: the PostgreSQL ledger's main cost on a busy gateway
// (BenchmarkPostgresInsertBatch in BENCHMARKS.md). The rows go in
// PostgreSQL's binary COPY format, encoded here: pgx's generic encoder
// looked up a plan and boxed every one of the 29 values of every row,
// about a third of the writer's CPU.
func copyRecords(ctx context.Context, conn *sql.Conn, recs []Record, types [numRecordColumns]copyType, copySQL string) error {
	data, err := appendCopyRows(make([]byte, 0, 64+len(recs)*400), recs, types)
	if err != nil {
		return fmt.Errorf("ledger insert: %w", err)
	}
	err = conn.Raw(func(dc any) error {
		c, ok := dc.(*stdlib.Conn)
		if !ok {
			return errors.New("not a pgx connection")
		}
		_, err := c.Conn().PgConn().CopyFrom(ctx, bytes.NewReader(data), copySQL)
		return err
	})
	if err != nil {
		return fmt.Errorf("ledger insert: %w", err)
	}
	return nil
}

// pgStatements are the PostgreSQL writer's statements, built once at open:
// every batch sends the same text, and concatenating it again for each
// batch allocated about two thirds of what encoding its COPY rows did.
type pgStatements struct {
	copy, spend string
	rollup      [2]string // in rollupTables' order
}

func newPGStatements() pgStatements {
	st := pgStatements{copy: buildCopySQL(), spend: spendArraysSQL()}
	for i, t := range rollupTables() {
		st.rollup[i] = rollupArraysSQL(t.name)
	}
	return st
}

// rollupSQL is the upsert of table's rows (one of rollupTables, the
// only tables the writer rolls up).
func (st *pgStatements) rollupSQL(table string) string {
	for i, t := range rollupTables() {
		if t.name == table {
			return st.rollup[i]
		}
	}
	panic("ledger: " + table + " is not a roll-up table")
}

// buildCopySQL is the COPY statement of recordColumns in binary format.
func buildCopySQL() string {
	return "COPY usage_records (" + strings.Join(recordColumnNames(), ", ") + ") FROM STDIN (FORMAT binary)"
}

// copyType is how a column of usage_records travels in binary COPY.
type copyType byte

const (
	copyInt2 copyType = iota + 1 // SMALLINT
	copyInt4                     // INTEGER
	copyInt8                     // BIGINT
	copyText                     // TEXT
)

// tableCopyTypes reads usage_records' column types, in recordColumns
// order: COPY sends each value at the width the table has (a column an
// operator or a later release widened still takes its values). A column
// whose type does not hold what the ledger writes there stops the open,
// naming it.
func tableCopyTypes(ctx context.Context, db *sql.DB) (types [numRecordColumns]copyType, err error) {
	rows, err := db.QueryContext(ctx, `SELECT attname, atttypid::int, format_type(atttypid, atttypmod) FROM pg_attribute
WHERE attrelid = 'usage_records'::regclass AND attnum > 0 AND NOT attisdropped`)
	if err != nil {
		return types, err
	}
	defer rows.Close()
	type column struct {
		oid  int
		name string
	}
	have := map[string]column{}
	for rows.Next() {
		var name string
		var c column
		if err := rows.Scan(&name, &c.oid, &c.name); err != nil {
			return types, err
		}
		have[name] = c
	}
	if err := rows.Err(); err != nil {
		return types, err
	}
	kinds := recordRow(&Record{})
	for i, col := range recordColumnNames() {
		c, ok := have[col]
		if !ok {
			return types, fmt.Errorf("usage_records has no column %s", col)
		}
		switch {
		case c.oid == 20: // bigint
			types[i] = copyInt8
		case c.oid == 23: // integer
			types[i] = copyInt4
		case c.oid == 21: // smallint
			types[i] = copyInt2
		case c.oid == 25 || c.oid == 1043: // text, varchar
			types[i] = copyText
		}
		if types[i] == 0 || (types[i] == copyText) != kinds[i].text {
			want := "bigint, integer or smallint"
			if kinds[i].text {
				want = "text"
			}
			return types, fmt.Errorf("usage_records.%s is %s, which cannot hold what the ledger writes there: make it %s again", col, c.name, want)
		}
	}
	return types, nil
}

// recordColumnNames are recordColumns one name each.
func recordColumnNames() []string {
	return strings.Fields(strings.ReplaceAll(recordColumns, ",", " "))
}

// copyValueError is a record value its column cannot hold: the row is at
// fault (RejectsRow), as PostgreSQL's own out-of-range error would say.
type copyValueError struct {
	column int
	value  any
}

func (e *copyValueError) Error() string {
	return fmt.Sprintf("usage_records column %d cannot hold %v", e.column+1, e.value)
}

// pgcopyHeader is binary COPY's signature, flags and (empty) header
// extension.
const pgcopyHeader = "PGCOPY\n\xff\r\n\x00" + "\x00\x00\x00\x00" + "\x00\x00\x00\x00"

// appendCopyRows appends recs to b as a binary COPY stream of columns of
// the types given: the header, then per row the field count and each
// field's length and big-endian bytes, then the trailer.
func appendCopyRows(b []byte, recs []Record, types [numRecordColumns]copyType) ([]byte, error) {
	b = append(b, pgcopyHeader...)
	be := binary.BigEndian
	for i := range recs {
		b = be.AppendUint16(b, numRecordColumns)
		for c, v := range recordRow(&recs[i]) {
			switch t := types[c]; {
			case t < copyInt2 || t > copyText || v.text != (t == copyText):
				// The encoder's types do not fit recordRow: every row
				// would fail alike, so this is not the row's fault.
				return nil, fmt.Errorf("usage_records column %d: copy type %d does not take a value of text %v", c+1, t, v.text)
			case t == copyText:
				if len(v.s) > math.MaxInt32 {
					return nil, &copyValueError{c, len(v.s)}
				}
				b = be.AppendUint32(b, uint32(len(v.s)))
				b = append(b, v.s...)
			case t == copyInt8:
				b = be.AppendUint64(be.AppendUint32(b, 8), uint64(v.n))
			case t == copyInt4 && v.n >= math.MinInt32 && v.n <= math.MaxInt32:
				b = be.AppendUint32(be.AppendUint32(b, 4), uint32(int32(v.n)))
			case t == copyInt2 && v.n >= math.MinInt16 && v.n <= math.MaxInt16:
				b = be.AppendUint16(be.AppendUint32(b, 2), uint16(int16(v.n)))
			default:
				return nil, &copyValueError{c, v.n}
			}
		}
	}
	return be.AppendUint16(b, 0xffff), nil // the trailer: a field count of -1
}

// addSpendArrays upserts a batch's spend rows, keys in lock order, in
// one statement.
func addSpendArrays(ctx context.Context, tx *sql.Tx, query string, keys []spendKey, m map[spendKey]int64, now int64) error {
	n := len(keys)
	scopes, ids, periods := make([]string, n), make([]string, n), make([]string, n)
	starts, picos := make([]int64, n), make([]int64, n)
	for i, k := range keys {
		scopes[i], ids[i], periods[i], starts[i], picos[i] = k.scope, k.id, k.period, k.start, min(m[k], maxSpend)
	}
	// ORDER BY the array position: rows are locked in the order given.
	if _, err := tx.ExecContext(ctx, query, scopes, ids, periods, starts, picos, now); err != nil {
		return fmt.Errorf("ledger insert: budget spend: %w", err)
	}
	return nil
}

// spendArraysSQL is addSpendArrays' statement; rows are locked in the
// order of the arrays.
func spendArraysSQL() string {
	return `INSERT INTO budget_spend (scope, scope_id, period, period_start_us, spent_pico, updated_us)
SELECT s, i, p, t, v, $6 FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::bigint[]) WITH ORDINALITY AS u(s, i, p, t, v, n)
ORDER BY n
` + spendConflictSQL()
}

// upsertRollupArrays upserts a batch's rows of one roll-up table, keys in
// lock order, in one statement.
func upsertRollupArrays(ctx context.Context, tx *sql.Tx, query string, keys []rollupKey, m map[rollupKey]*rollupSums) error {
	n := len(keys)
	buckets := make([]int64, n)
	var texts [rollupArrayTexts][]string
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
	if _, err := tx.ExecContext(ctx, query, args...); err != nil {
		return fmt.Errorf("ledger insert: report roll-up: %w", err)
	}
	return nil
}

// rollupArrays are the columns upsertRollupArrays sends as arrays: the
// bucket, the key's texts, the sums.
const rollupArrayTexts, rollupArrays = 6, 1 + rollupArrayTexts + len(rollupSums{})

// rollupArraysSQL is upsertRollupArrays' statement for table.
func rollupArraysSQL(table string) string {
	var q strings.Builder
	q.WriteString(`INSERT INTO ` + table + ` (` + rollupColumns + `) SELECT `)
	for c := range rollupArrays {
		if c > 0 {
			q.WriteString(", ")
		}
		fmt.Fprintf(&q, "c%d", c)
	}
	q.WriteString(` FROM unnest($1::bigint[]`)
	for c := 2; c <= rollupArrays; c++ {
		typ := "bigint"
		if c <= 1+rollupArrayTexts {
			typ = "text"
		}
		fmt.Fprintf(&q, ", $%d::%s[]", c, typ)
	}
	q.WriteString(`) WITH ORDINALITY AS u(`)
	for c := range rollupArrays {
		fmt.Fprintf(&q, "c%d, ", c)
	}
	// ORDER BY the array position: rows are locked in the order given.
	q.WriteString(`n) ORDER BY n ` + rollupConflictSQL(table))
	return q.String()
}
