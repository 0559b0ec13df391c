package ledger

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/stdlib"
)

// openPostgresOne opens a PostgreSQL store on a fresh schema with one
// connection at most, so every insert reuses the connection the last one
// left behind. Its connections carry an application_name of their own, so
// pgIdleInTx sees them and not the sessions of tests running beside it.
func openPostgresOne(t *testing.T, dsn string) *sqlStore {
	t.Helper()
	dsn += "&application_name=ledger_test_" + strconv.FormatUint(rand.Uint64(), 36)
	st, err := OpenPostgres(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	s := st.(*sqlStore)
	s.db.SetMaxOpenConns(1)
	return s
}

// pgInTx reports whether the pool's next connection is inside a
// transaction already, as the server last told pgx (ReadyForQuery).
func pgInTx(t *testing.T, s *sqlStore) bool {
	t.Helper()
	conn, err := s.db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var status byte
	if err := conn.Raw(func(dc any) error {
		status = dc.(*stdlib.Conn).Conn().PgConn().TxStatus()
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return status != 'I'
}

// pgIdleInTx counts the store's sessions left idle inside a transaction
// (a connection returned dirty to the pool).
func pgIdleInTx(t *testing.T, s *sqlStore) int {
	t.Helper()
	var n int
	if err := s.db.QueryRow(`SELECT count(*) FROM pg_stat_activity WHERE state LIKE 'idle in transaction%' AND pid <> pg_backend_pid()
		AND datname = current_database() AND application_name = current_setting('application_name')`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestCopyRefusedRowLeavesConnClean: a row PostgreSQL refuses
// inside COPY (NUL, invalid UTF-8: the writer's sanitize is bypassed here,
// as any Store caller may) is reported as a row error, nothing of the batch
// is kept, and the one pooled connection takes the next batch.
func TestCopyRefusedRowLeavesConnClean(t *testing.T) {
	s := openPostgresOne(t, freshPostgresSchema(t))
	ctx := context.Background()
	for _, bad := range []func(r *Record){
		func(r *Record) { r.KeyID = "ali\x00ce" },
		func(r *Record) { r.SessionID = "s\xff\xfe" },
		func(r *Record) { r.Agent = "\xc3" },
		func(r *Record) { r.Endpoint = "x\x00" },
	} {
		recs := make([]Record, 40)
		for i := range recs {
			recs[i] = sampleRecord(i)
		}
		bad(&recs[23])
		err := s.Insert(ctx, recs)
		if err == nil {
			t.Fatal("bad row accepted")
		}
		if !s.RejectsRow(err) {
			t.Fatalf("COPY error %v is not a row error: the writer would retry the batch for ever", err)
		}
		if pgInTx(t, s) {
			t.Fatal("connection returned inside a transaction")
		}
		if n := countRecords(t, s); n != 0 {
			t.Fatalf("%d records of the refused batch kept", n)
		}
		if err := s.Insert(ctx, recs[:1]); err != nil {
			t.Fatalf("connection after a refused COPY: %v", err)
		}
		if _, err := s.db.Exec(`DELETE FROM usage_records`); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCopyStatusOutOfRange: a status past int4 fails in pgx's
// encoder, client side, before PostgreSQL sees the row.
func TestCopyStatusOutOfRange(t *testing.T) {
	s := openPostgresOne(t, freshPostgresSchema(t))
	ctx := context.Background()
	recs := []Record{sampleRecord(0), sampleRecord(1)}
	recs[1].Status = 1 << 40
	err := s.Insert(ctx, recs)
	t.Logf("status 2^40: err=%v rowError=%v", err, err != nil && s.RejectsRow(err))
	if pgInTx(t, s) {
		t.Fatal("connection returned inside a transaction")
	}
	if err := s.Insert(ctx, recs[:1]); err != nil {
		t.Fatalf("connection after a failed COPY: %v", err)
	}
	if n := countRecords(t, s); n != 1 {
		t.Fatalf("%d records, want 1", n)
	}
}

// TestCopyCancelled: a deadline that passes in the middle of a big
// COPY fails the batch whole, and the pool's only connection still works.
func TestCopyCancelled(t *testing.T) {
	s := openPostgresOne(t, freshPostgresSchema(t))
	recs := make([]Record, 60000)
	for i := range recs {
		recs[i] = sampleRecord(i % 500)
	}
	for _, d := range []time.Duration{time.Millisecond, 5 * time.Millisecond, 20 * time.Millisecond, 60 * time.Millisecond, 150 * time.Millisecond} {
		ctx, cancel := context.WithTimeout(context.Background(), d)
		err := s.Insert(ctx, recs)
		cancel()
		t.Logf("deadline %v: %v", d, err)
		if err != nil && s.RejectsRow(err) {
			t.Fatalf("a cancelled COPY reads as a row error: the writer would split and drop a healthy batch: %v", err)
		}
		if pgInTx(t, s) {
			t.Fatal("connection returned inside a transaction")
		}
		n := countRecords(t, s)
		if err != nil && n != 0 {
			t.Fatalf("failed insert kept %d records", n)
		}
		if err := s.Insert(context.Background(), recs[:3]); err != nil {
			t.Fatalf("after a cancelled COPY: %v", err)
		}
		// A connection pgx closed on the cancel has a server session that
		// ends when it reads the close, later on a loaded machine: only one
		// that stays idle in its transaction is a leak.
		idle := pgIdleInTx(t, s)
		for wait := time.Now().Add(5 * time.Second); idle != 0 && time.Now().Before(wait); idle = pgIdleInTx(t, s) {
			time.Sleep(20 * time.Millisecond)
		}
		if idle != 0 {
			t.Fatalf("%d sessions left idle in transaction", idle)
		}
		if _, err := s.db.Exec(`DELETE FROM usage_records`); err != nil {
			t.Fatal(err)
		}
	}
}

// TestConcurrentWritersOverlappingKeys: two stores (two gateway
// instances) on one PostgreSQL insert batches touching the same spend and
// roll-up rows, in opposite record orders, at once. Locks taken in map or
// record order deadlock (40P01); every batch must go in at its first try.
func TestConcurrentWritersOverlappingKeys(t *testing.T) {
	dsn := freshPostgresSchema(t)
	var stores [2]Store
	for i := range stores {
		st, err := OpenPostgres(context.Background(), dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close() })
		stores[i] = st
	}
	now := time.Now().UTC()
	batch := func(seed uint64, reverse bool) []Record {
		rng := rand.New(rand.NewPCG(seed, 1))
		recs := make([]Record, 200)
		for i := range recs {
			k := i % 60
			recs[i] = Record{Time: now.Add(time.Duration(i%3) * time.Hour), RequestID: "r" + strconv.Itoa(i),
				KeyID: "key" + strconv.Itoa(k), Workspace: "ws" + strconv.Itoa(k%7), SessionID: "s" + strconv.Itoa(k%11),
				Alias: "a" + strconv.Itoa(k%5), UpstreamModel: "m", Provider: "p", ServiceTier: "standard", Endpoint: "messages",
				InputTokens: 10, OutputTokens: 5, CostPicoUSD: 1000, Status: 200, Outcome: "ok"}
		}
		rng.Shuffle(len(recs), func(i, j int) { recs[i], recs[j] = recs[j], recs[i] })
		if reverse {
			for i, j := 0, len(recs)-1; i < j; i, j = i+1, j-1 {
				recs[i], recs[j] = recs[j], recs[i]
			}
		}
		return recs
	}
	const rounds = 25
	var wg sync.WaitGroup
	errs := make(chan error, 2*rounds)
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range rounds {
				if err := stores[w].Insert(context.Background(), batch(uint64(r), w == 1)); err != nil {
					errs <- fmt.Errorf("writer %d round %d: %w", w, r, err)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	// Every batch charged key0 ... 4 records × 1000 pico (i%60 == 0 for
	// i in 0, 60, 120, 180) per batch.
	spend, err := stores[0].(SpendStore).CurrentSpend(context.Background(), now, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, sp := range spend {
		if sp.Scope == ScopeKey && sp.ScopeID == "key0" && sp.Period == "total" {
			if want := int64(2 * rounds * 4 * 1000); sp.SpentPico != want {
				t.Fatalf("key0 total spend %d, want %d", sp.SpentPico, want)
			}
			return
		}
	}
	if t.Failed() {
		return
	}
	t.Fatal("no total spend for key0")
}

// TestInsertBatchSizes: batches around the 16-row statement, each
// record stored exactly, none doubled or lost; a refused row in the middle
// leaves nothing behind.
func TestInsertBatchSizes(t *testing.T) {
	forEachStore(t, func(t *testing.T, s Store) {
		ctx := context.Background()
		total := 0
		for _, n := range []int{1, 15, 16, 17, 31, 32, 33, 47, 48, 49} {
			recs := make([]Record, n)
			for i := range recs {
				recs[i] = sampleRecord(total + i)
				recs[i].RequestID = "req-" + strconv.Itoa(total+i)
				recs[i].Status = 200 + i
				recs[i].Stream = i%3 == 0
				recs[i].Agent = "agent" + strconv.Itoa(i)
				recs[i].Bytes = int64(i * 7)
				recs[i].ContextWindow = ContextWindowSmall
			}
			if err := s.Insert(ctx, recs); err != nil {
				t.Fatalf("batch of %d: %v", n, err)
			}
			got, err := s.Query(ctx, Filter{From: recs[0].Time, To: recs[n-1].Time.Add(time.Second)})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != n {
				t.Fatalf("batch of %d: %d stored", n, len(got))
			}
			byID := map[string]Record{}
			for _, g := range got {
				byID[g.RequestID] = g
			}
			for _, want := range recs {
				g, ok := byID[want.RequestID]
				if !ok {
					t.Fatalf("batch of %d: %s missing", n, want.RequestID)
				}
				g.Time = want.Time
				if g != want {
					t.Fatalf("batch of %d:\n got %+v\nwant %+v", n, g, want)
				}
			}
			total += n
		}
	})
}

// TestSQLiteRefusedRowInSecondChunk: a bad row in the second
// 16-row statement rolls back the first.
func TestSQLiteRefusedRowInSecondChunk(t *testing.T) {
	forEachStore(t, func(t *testing.T, s Store) {
		poison(t, s)
		recs := make([]Record, 33)
		for i := range recs {
			recs[i] = sampleRecord(i)
		}
		recs[20].KeyID = "poison"
		err := s.Insert(context.Background(), recs)
		if err == nil || !s.(RowRejecter).RejectsRow(err) {
			t.Fatalf("err %v, want a row error", err)
		}
		if n := countRecords(t, s); n != 0 {
			t.Fatalf("%d records kept", n)
		}
		recs[32].KeyID = "poison"
		recs[20].KeyID = "alice"
		if err := s.Insert(context.Background(), recs); err == nil {
			t.Fatal("poison in the single-row tail accepted")
		}
		if n := countRecords(t, s); n != 0 {
			t.Fatalf("%d records kept", n)
		}
	})
}

// TestWriterStatusPastInt4: a status the integer column cannot hold
// fails PostgreSQL's COPY in pgx's encoder (SQLSTATE 57014 after the
// CopyFail), which is not a row error: the batch was retried until the
// retries ran out (for ever by default), wedging the writer behind it.
// The writer bounds the status as it bounds every other field.
func TestWriterStatusPastInt4(t *testing.T) {
	forEachStore(t, func(t *testing.T, s Store) {
		w := NewWriter(s, WriterOptions{BatchSize: 64, FlushInterval: time.Hour, Retries: 1, RetryBackoff: time.Millisecond})
		w.Start()
		for i := range 10 {
			r := sampleRecord(i)
			if i == 3 {
				r.Status = 1 << 40
			}
			if i == 4 {
				r.Status = -1 << 40
			}
			w.Enqueue(r)
		}
		if err := w.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		if st := w.Stats(); st.Written != 10 || st.WriteErrors != 0 {
			t.Fatalf("stats %+v, want 10 written", st)
		}
	})
}
