package ledger

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

// The binary COPY encoder's column types are the table's: a wrong width
// would be refused by PostgreSQL for every batch.
func TestRecordCopyTypesMatchTable(t *testing.T) {
	s := storeFactories()[1].open(t).(*sqlStore)
	oids := map[copyType]uint32{copyInt2: 21, copyInt4: 23, copyInt8: 20, copyText: 25}
	types := recordCopyTypes()
	for i, col := range strings.Split(recordColumns, ",") {
		col = strings.TrimSpace(col)
		var oid uint32
		if err := s.db.QueryRow(`SELECT atttypid FROM pg_attribute WHERE attrelid = 'usage_records'::regclass AND attname = $1`, col).Scan(&oid); err != nil {
			t.Fatalf("column %s: %v", col, err)
		}
		if oids[types[i]] != oid {
			t.Errorf("column %d (%s): the encoder sends type %d, the table has oid %d", i+1, col, types[i], oid)
		}
	}
}

// Records with the values at the edges of their columns go in through
// COPY and read back as they were written.
func TestPostgresCopyRoundTrip(t *testing.T) {
	s := storeFactories()[1].open(t)
	ctx := context.Background()
	long := strings.Repeat("ü", 5000)
	recs := []Record{
		{Time: t0, RequestID: "", KeyID: "k", Alias: "a", Outcome: OutcomeOK, Status: 200, Stream: true,
			InputTokens: math.MaxInt64, OutputTokens: 0, CostPicoUSD: math.MaxInt64, Latency: time.Duration(math.MaxInt64), Bytes: math.MaxInt64},
		{Time: t0.Add(time.Microsecond), RequestID: long, KeyID: "k", Alias: "a", Outcome: OutcomeError, Status: 599,
			SessionID: "séance ☕", Agent: "claude-code", Prices: Prices{Input: -1, Output: math.MinInt64 + 1}},
	}
	if err := s.Insert(ctx, recs); err != nil {
		t.Fatal(err)
	}
	type row struct {
		reqLen                          int
		stream                          int16
		status                          int32
		in, cost, lat, bytes, pIn, pOut int64
		session, agent, outcome         string
	}
	var got []row
	rows, err := s.(*sqlStore).db.Query(`SELECT length(request_id), stream, status, input_tokens, cost_pico, latency_us, bytes, price_input, price_output, session_id, agent, outcome FROM usage_records ORDER BY ts_us`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var r row
		if err := rows.Scan(&r.reqLen, &r.stream, &r.status, &r.in, &r.cost, &r.lat, &r.bytes, &r.pIn, &r.pOut, &r.session, &r.agent, &r.outcome); err != nil {
			t.Fatal(err)
		}
		got = append(got, r)
	}
	if len(got) != 2 {
		t.Fatalf("%d rows read back, want 2", len(got))
	}
	a, b := got[0], got[1]
	if a.reqLen != 0 || a.stream != 1 || a.status != 200 || a.in != math.MaxInt64 || a.cost != math.MaxInt64 ||
		a.lat != time.Duration(math.MaxInt64).Microseconds() || a.bytes != math.MaxInt64 || a.outcome != string(OutcomeOK) {
		t.Errorf("first record read back as %+v", a)
	}
	if b.reqLen != 5000 || b.stream != 0 || b.status != 599 || b.pIn != -1 || b.pOut != math.MinInt64+1 ||
		b.session != "séance ☕" || b.agent != "claude-code" || b.outcome != string(OutcomeError) {
		t.Errorf("second record read back as %+v", b)
	}
}

// A value its column cannot hold fails the encoding as a fault of the
// row, so the writer sets that row aside instead of retrying the batch.
func TestCopyValueOutOfRangeIsTheRowsFault(t *testing.T) {
	_, err := appendCopyData(nil, []Record{{Time: t0, Status: math.MaxInt32 + 1}})
	var cv *copyValueError
	if !errors.As(err, &cv) {
		t.Fatalf("status past int32: %v", err)
	}
	if !postgresRowError(err) {
		t.Error("the encoder's refusal is not taken as the row's fault")
	}
}

// TestWriterCopyTypeMismatchIsNotARowFault: when the table's column types
// are not the widths the binary COPY encoder sends (a column altered by a
// DBA or by a release sharing the database), PostgreSQL answers 22P03
// (incorrect binary data format) for whichever row comes first: every row
// alike, not one row's data. Taken as the row's fault, the writer set
// aside every record of every batch, logged them as "refused", and stayed
// ready; pgx's encoder, before, followed the table's types. The writer
// must instead see the database failing.
func TestWriterCopyTypeMismatchIsNotARowFault(t *testing.T) {
	for _, alter := range []string{
		`ALTER TABLE usage_records ALTER COLUMN status TYPE SMALLINT`,
		`ALTER TABLE usage_records ALTER COLUMN stream TYPE BOOLEAN USING stream <> 0`,
	} {
		s := storeFactories()[1].open(t).(*sqlStore)
		if _, err := s.db.Exec(alter); err != nil {
			t.Fatal(err)
		}
		var logged []string
		w := NewWriter(s, WriterOptions{BatchSize: 64, FlushInterval: time.Hour, Retries: 1, RetryBackoff: time.Millisecond,
			Logger: func(msg string, err error) { logged = append(logged, msg) }})
		w.Start()
		for i := range 8 {
			w.Enqueue(sampleRecord(i))
		}
		_ = w.Close(context.Background())
		for _, msg := range logged {
			if strings.Contains(msg, "set aside") {
				t.Errorf("%s: %q: a table/encoder mismatch taken as every row's fault", alter, msg)
			}
		}
		if !w.Failing() {
			t.Errorf("%s: the writer reports healthy while no record can be written", alter)
		}
	}
}

// TestRecordCopyTypesFitRecordRow, without a database: recordColumns
// names numRecordColumns columns, each has a copy type, and the type
// takes text exactly where recordRow gives text.
func TestRecordCopyTypesFitRecordRow(t *testing.T) {
	if n := len(strings.Split(recordColumns, ",")); n != numRecordColumns {
		t.Fatalf("recordColumns names %d columns, numRecordColumns is %d", n, numRecordColumns)
	}
	r := sampleRecord(0)
	types := recordCopyTypes()
	for c, v := range recordRow(&r) {
		if types[c] < copyInt2 || types[c] > copyText || v.text != (types[c] == copyText) {
			t.Errorf("column %d: copy type %d for a value %+v", c+1, types[c], v)
		}
	}
}

// TestCopyTypeMissingIsNotTheRowsFault: an encoder type that does not
// fit the value (a column added to recordRow and not to recordCopyTypes)
// fails every row alike; taken as the row's fault, the writer would set
// every record aside as refused.
func TestCopyTypeMissingIsNotTheRowsFault(t *testing.T) {
	recs := []Record{sampleRecord(0)}
	for _, c := range []int{numRecordColumns - 1, 1} {
		types := recordCopyTypes()
		types[c] = 0
		if _, err := appendCopyRows(nil, recs, types); err == nil || postgresRowError(err) {
			t.Errorf("column %d with no copy type: err %v, row fault %v", c+1, err, err != nil && postgresRowError(err))
		}
		types = recordCopyTypes()
		types[c] = copyInt8
		if c == numRecordColumns-1 {
			types[c] = copyText
		}
		if _, err := appendCopyRows(nil, recs, types); err == nil || postgresRowError(err) {
			t.Errorf("column %d with the wrong kind: err %v, row fault %v", c+1, err, err != nil && postgresRowError(err))
		}
	}
}
