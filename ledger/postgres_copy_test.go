package ledger

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

// migrationCopyTypes are the types the migrations give usage_records'
// columns, in recordColumns order.
func migrationCopyTypes() [numRecordColumns]copyType {
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
		copyInt2, // report_only
		copyText, // downgraded_from
		copyInt2, // notional
	}
}

// The COPY encoder sends each column at the width the table has, read at
// open.
func TestRecordCopyTypesMatchTable(t *testing.T) {
	s := storeFactories()[1].open(t).(*sqlStore)
	if s.copyTypes != migrationCopyTypes() {
		t.Errorf("types read from the table %v, the migrations make %v", s.copyTypes, migrationCopyTypes())
	}
}

// A column widened after the migrations (by an operator, or by a later
// release sharing the database) still takes its values; one that cannot
// hold them stops the open, naming it.
func TestCopyFollowsTheTablesColumnTypes(t *testing.T) {
	ctx := context.Background()
	dsn := freshPostgresSchema(t)
	open := func() (*sqlStore, error) {
		s, err := OpenPostgres(ctx, dsn)
		if err != nil {
			return nil, err
		}
		t.Cleanup(func() { _ = s.Close() })
		return s.(*sqlStore), nil
	}
	s, err := open()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.Exec(`ALTER TABLE usage_records ALTER COLUMN status TYPE BIGINT, ALTER COLUMN stream TYPE INTEGER, ALTER COLUMN agent TYPE VARCHAR(300)`); err != nil {
		t.Fatal(err)
	}
	s, err = open()
	if err != nil {
		t.Fatal(err)
	}
	rec := sampleRecord(2)
	rec.Status, rec.Agent = 503, "codex"
	if err := s.Insert(ctx, []Record{rec}); err != nil {
		t.Fatalf("insert into widened columns: %v", err)
	}
	var status, stream int64
	var agent string
	if err := s.db.QueryRow(`SELECT status, stream, agent FROM usage_records`).Scan(&status, &stream, &agent); err != nil {
		t.Fatal(err)
	}
	if status != 503 || stream != 1 || agent != "codex" {
		t.Errorf("read back status %d, stream %d, agent %q", status, stream, agent)
	}
	if _, err := s.db.Exec(`ALTER TABLE usage_records ALTER COLUMN stream TYPE BOOLEAN USING stream <> 0`); err != nil {
		t.Fatal(err)
	}
	if _, err := open(); err == nil || !strings.Contains(err.Error(), "usage_records.stream is boolean") {
		t.Errorf("open with a boolean stream column: %v", err)
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
	_, err := appendCopyRows(nil, []Record{{Time: t0, Status: math.MaxInt32 + 1}}, migrationCopyTypes())
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
// names numRecordColumns columns, and the migrations' types take text
// exactly where recordRow gives text.
func TestRecordCopyTypesFitRecordRow(t *testing.T) {
	if n := len(strings.Split(recordColumns, ",")); n != numRecordColumns {
		t.Fatalf("recordColumns names %d columns, numRecordColumns is %d", n, numRecordColumns)
	}
	r := sampleRecord(0)
	types := migrationCopyTypes()
	for c, v := range recordRow(&r) {
		if types[c] < copyInt2 || types[c] > copyText || v.text != (types[c] == copyText) {
			t.Errorf("column %d: copy type %d for a value %+v", c+1, types[c], v)
		}
	}
}

// TestCopyTypeMissingIsNotTheRowsFault: an encoder type that does not
// fit the value fails every row alike; taken as the row's fault, the writer would set
// every record aside as refused.
func TestCopyTypeMissingIsNotTheRowsFault(t *testing.T) {
	recs := []Record{sampleRecord(0)}
	for _, c := range []int{numRecordColumns - 1, 1} {
		types := migrationCopyTypes()
		types[c] = 0
		if _, err := appendCopyRows(nil, recs, types); err == nil || postgresRowError(err) {
			t.Errorf("column %d with no copy type: err %v, row fault %v", c+1, err, err != nil && postgresRowError(err))
		}
		types = migrationCopyTypes()
		types[c] = copyInt8
		if migrationCopyTypes()[c] != copyText {
			types[c] = copyText
		}
		if _, err := appendCopyRows(nil, recs, types); err == nil || postgresRowError(err) {
			t.Errorf("column %d with the wrong kind: err %v, row fault %v", c+1, err, err != nil && postgresRowError(err))
		}
	}
}
