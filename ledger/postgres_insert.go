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
func copyRecords(ctx context.Context, conn *sql.Conn, recs []Record) error {
	data, err := appendCopyData(make([]byte, 0, 64+len(recs)*400), recs)
	if err != nil {
		return fmt.Errorf("ledger insert: %w", err)
	}
	err = conn.Raw(func(dc any) error {
		c, ok := dc.(*stdlib.Conn)
		if !ok {
			return errors.New("not a pgx connection")
		}
		_, err := c.Conn().PgConn().CopyFrom(ctx, bytes.NewReader(data), copySQL())
		return err
	})
	if err != nil {
		return fmt.Errorf("ledger insert: %w", err)
	}
	return nil
}

// copySQL is the COPY statement of recordColumns in binary format.
func copySQL() string {
	return "COPY usage_records (" + strings.Join(strings.Fields(strings.ReplaceAll(recordColumns, ",", " ")), ", ") + ") FROM STDIN (FORMAT binary)"
}

// copyType is how a column of usage_records travels in binary COPY.
type copyType byte

const (
	copyInt2 copyType = iota + 1 // SMALLINT
	copyInt4                     // INTEGER
	copyInt8                     // BIGINT
	copyText                     // TEXT
)

// recordCopyTypes are the types of recordColumns, in order, as the
// migrations made them (TestRecordCopyTypesMatchTable reads them back
// from the table). The literal is [...]: one of [numRecordColumns] with
// an entry missing would compile, zero-filled, and fail every row.
func recordCopyTypes() [numRecordColumns]copyType {
	return [...]copyType{
		copyInt8,                                                                       // ts_us
		copyText, copyText, copyText, copyText, copyText, copyText, copyText, copyText, // request_id … endpoint
		copyInt2,                                         // stream
		copyInt8, copyInt8, copyInt8, copyInt8, copyInt8, // tokens
		copyInt4,                     // status
		copyText,                     // outcome
		copyInt8, copyInt8, copyInt8, // latency_us, ttft_us, cost_pico
		copyInt8, copyInt8, copyInt8, copyInt8, copyInt8, // prices
		copyText, copyText, copyText, // session_id, context_window, agent
		copyInt8, // bytes
	}
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

// appendCopyData appends recs to b as a binary COPY stream: the header,
// then per row the field count and each field's length and big-endian
// bytes, then the trailer.
func appendCopyData(b []byte, recs []Record) ([]byte, error) {
	return appendCopyRows(b, recs, recordCopyTypes())
}

// appendCopyRows is appendCopyData with the columns' types given.
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
				return nil, fmt.Errorf("usage_records column %d: a %v value for copy type %d", c+1, map[bool]string{true: "text", false: "integer"}[v.text], t)
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
