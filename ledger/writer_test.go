package ledger

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// flakyStore wraps a real SQLite store, failing the first failures inserts
// and recording batch sizes.
type flakyStore struct {
	Store
	mu       sync.Mutex
	failures int
	batches  []int
	block    bool // block inserts until their context ends
}

func (f *flakyStore) Insert(ctx context.Context, recs []Record) error {
	f.mu.Lock()
	f.batches = append(f.batches, len(recs))
	fail := f.failures > 0
	if fail {
		f.failures--
	}
	block := f.block
	f.mu.Unlock()
	if block {
		<-ctx.Done()
		return ctx.Err()
	}
	if fail {
		return errors.New("database is locked")
	}
	return f.Store.Insert(ctx, recs)
}

func newFlaky(t *testing.T) *flakyStore {
	s, err := OpenSQLite(filepath.Join(t.TempDir(), "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return &flakyStore{Store: s}
}

func countRecords(t *testing.T, s Store) int {
	got, err := s.Query(context.Background(), Filter{From: t0.Add(-time.Hour), To: t0.Add(1000 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	return len(got)
}

func TestWriterCloseFlushesEverything(t *testing.T) {
	s := newFlaky(t)
	w := NewWriter(s, WriterOptions{BatchSize: 10, FlushInterval: time.Hour})
	w.Start()
	for i := range 25 {
		if !w.Enqueue(sampleRecord(i)) {
			t.Fatalf("enqueue %d refused", i)
		}
	}
	if err := w.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	st := w.Stats()
	if st != (WriterStats{Written: 25}) {
		t.Fatalf("stats = %+v, want 25 written", st)
	}
	if n := countRecords(t, s); n != 25 {
		t.Fatalf("store holds %d records, want 25", n)
	}
	total := 0
	for _, b := range s.batches {
		if b > 10 {
			t.Errorf("batch of %d exceeds BatchSize 10", b)
		}
		total += b
	}
	if total != 25 {
		t.Errorf("batches %v sum to %d", s.batches, total)
	}
	if w.Enqueue(sampleRecord(0)) {
		t.Fatal("enqueue after Close accepted")
	}
	if st := w.Stats(); st.Dropped != 1 {
		t.Fatalf("dropped after close = %d, want 1", st.Dropped)
	}
}

func TestWriterFullQueueDropsAndCounts(t *testing.T) {
	s := newFlaky(t)
	w := NewWriter(s, WriterOptions{QueueSize: 3})
	// Not started: nothing drains, so the fourth record finds the queue full.
	var accepted int
	for i := range 5 {
		if w.Enqueue(sampleRecord(i)) {
			accepted++
		}
	}
	if accepted != 3 {
		t.Fatalf("accepted %d, want 3", accepted)
	}
	if st := w.Stats(); st.QueueDepth != 3 || st.Dropped != 2 {
		t.Fatalf("stats = %+v, want depth 3 dropped 2", st)
	}
	// Close without Start still writes what was queued.
	if err := w.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st := w.Stats(); st.Written != 3 || st.QueueDepth != 0 {
		t.Fatalf("stats after close = %+v", st)
	}
}

func TestWriterFlushesOnInterval(t *testing.T) {
	s := newFlaky(t)
	w := NewWriter(s, WriterOptions{FlushInterval: 5 * time.Millisecond})
	w.Start()
	defer w.Close(context.Background())
	w.Enqueue(sampleRecord(0))
	deadline := time.Now().Add(5 * time.Second)
	for w.Stats().Written != 1 {
		if time.Now().After(deadline) {
			t.Fatal("partial batch not flushed by the interval")
		}
		time.Sleep(time.Millisecond)
	}
	if n := countRecords(t, s); n != 1 {
		t.Fatalf("store holds %d records", n)
	}
}

// TestWriterWaitsOutAnOutage: by default a batch the database fails is
// retried until it answers: an outage loses nothing.
func TestWriterWaitsOutAnOutage(t *testing.T) {
	s := newFlaky(t)
	s.failures = 8
	var logs []string
	w := NewWriter(s, WriterOptions{BatchSize: 4, RetryBackoff: time.Millisecond,
		Logger: func(msg string, err error) { logs = append(logs, msg) }})
	w.Start()
	for i := range 4 {
		w.Enqueue(sampleRecord(i))
	}
	if err := w.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st := w.Stats(); st.Written != 4 || st.WriteErrors != 0 {
		t.Fatalf("stats = %+v after an outage of 8 failed inserts", st)
	}
	if len(logs) != 1 || !strings.Contains(logs[0], "retrying until the database answers") {
		t.Errorf("logs = %q, want one line saying the writer waits", logs)
	}
}

func TestWriterRetries(t *testing.T) {
	tests := []struct {
		name        string
		failures    int
		wantWritten int64
		wantErrors  int64
		wantLogs    int
	}{
		{"transient failure retried", 2, 4, 0, 0},
		{"persistent failure counted and logged", 100, 0, 4, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newFlaky(t)
			s.failures = tt.failures
			var logs []string
			w := NewWriter(s, WriterOptions{
				BatchSize: 4, RetryBackoff: time.Millisecond, Retries: 3,
				Logger: func(msg string, err error) { logs = append(logs, msg+": "+err.Error()) },
			})
			w.Start()
			for i := range 4 {
				w.Enqueue(sampleRecord(i))
			}
			if err := w.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			st := w.Stats()
			if st.Written != tt.wantWritten || st.WriteErrors != tt.wantErrors {
				t.Fatalf("stats = %+v", st)
			}
			if len(logs) != tt.wantLogs {
				t.Fatalf("logs = %q", logs)
			}
			for _, l := range logs {
				if !strings.Contains(l, "4 usage records") || strings.Contains(l, "alice") || strings.Contains(l, "sess-1") {
					t.Errorf("log %q: want a count and no record contents", l)
				}
			}
			if tt.wantErrors > 0 && len(s.batches) != 4 {
				t.Errorf("insert attempts = %d, want 1 + 3 retries", len(s.batches))
			}
		})
	}
}

func TestWriterCloseDeadline(t *testing.T) {
	s := newFlaky(t)
	s.block = true
	w := NewWriter(s, WriterOptions{BatchSize: 2})
	w.Start()
	for i := range 5 {
		w.Enqueue(sampleRecord(i))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := w.Close(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Close = %v, want deadline exceeded", err)
	}
	if st := w.Stats(); st.WriteErrors != 5 || st.Written != 0 {
		t.Fatalf("stats = %+v, want all 5 counted as write errors", st)
	}
}

// Every record Enqueue accepted is written, even when Close races with
// concurrent producers.
func TestWriterConcurrentEnqueueAndClose(t *testing.T) {
	s := newFlaky(t)
	w := NewWriter(s, WriterOptions{QueueSize: 100000, BatchSize: 64})
	w.Start()
	var accepted atomic.Int64
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 500 {
				if w.Enqueue(sampleRecord(g*500 + i)) {
					accepted.Add(1)
				}
			}
		})
	}
	time.Sleep(time.Millisecond)
	if err := w.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	st := w.Stats()
	if st.Written != accepted.Load() || st.Written+st.Dropped != 4000 {
		t.Fatalf("stats = %+v, accepted %d", st, accepted.Load())
	}
	if n := countRecords(t, s); int64(n) != st.Written {
		t.Fatalf("store holds %d, writer wrote %d", n, st.Written)
	}
}

func BenchmarkWriterEnqueue(b *testing.B) {
	s, err := OpenSQLite(filepath.Join(b.TempDir(), "ledger.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	w := NewWriter(s, WriterOptions{QueueSize: 1 << 20})
	w.Start()
	r := sampleRecord(0)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		w.Enqueue(r)
	}
	b.StopTimer()
	_ = w.Close(context.Background())
}

// gatedStore holds its first insert until open is closed, so a test can
// pile records up behind it.
type gatedStore struct {
	*flakyStore
	open    chan struct{}
	once    sync.Once
	entered chan struct{}
}

func (g *gatedStore) Insert(ctx context.Context, recs []Record) error {
	g.once.Do(func() { close(g.entered); <-g.open })
	return g.flakyStore.Insert(ctx, recs)
}

// TestWriterCommitWaitsForTheDatabase: under durability sync a record is
// in the database when Commit returns, without waiting for the flush
// interval, and commits that queue up while an insert runs share the next
// one (group commit).
func TestWriterCommitWaitsForTheDatabase(t *testing.T) {
	s := &gatedStore{flakyStore: newFlaky(t), open: make(chan struct{}), entered: make(chan struct{})}
	w := NewWriter(s, WriterOptions{FlushInterval: time.Hour})
	w.Start()
	defer w.Close(context.Background())
	const n = 64
	errs := make(chan error, n+1)
	go func() { errs <- w.Commit(context.Background(), sampleRecord(0)) }()
	<-s.entered // the first commit's insert is running, held
	for i := range n {
		go func() { errs <- w.Commit(context.Background(), sampleRecord(i+1)) }()
	}
	for deadline := time.Now().Add(10 * time.Second); w.Stats().QueueDepth < n; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("only %d commits queued", w.Stats().QueueDepth)
		}
	}
	close(s.open)
	for range n + 1 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if got := countRecords(t, s); got != n+1 {
		t.Fatalf("%d records stored when every Commit had returned, want %d", got, n+1)
	}
	s.mu.Lock()
	batches := s.batches
	s.mu.Unlock()
	if len(batches) != 2 || batches[1] != n {
		t.Fatalf("inserts of %v records, want the held one, then all %d queued commits in one", batches, n)
	}
}

// conflictStore loses a lock conflict on its first inserts, as a
// PostgreSQL writer does when another instance holds the rows.
type conflictStore struct{ *flakyStore }

func (c conflictStore) Conflicted(err error) bool {
	return err != nil && err.Error() == "database is locked"
}

// A batch that lost a lock conflict is retried at once, without a log
// line or a readiness failure (hostile review §11: a deadlock between two
// instances turned readiness to 503 for a moment).
func TestWriterRetriesConflictsQuietly(t *testing.T) {
	f := newFlaky(t)
	f.failures = 2
	var logs []string
	var mu sync.Mutex
	w := NewWriter(conflictStore{f}, WriterOptions{FlushInterval: time.Millisecond, RetryBackoff: time.Hour,
		Logger: func(msg string, err error) { mu.Lock(); logs = append(logs, msg); mu.Unlock() }})
	w.Enqueue(Record{Time: t0, RequestID: "r1", Status: 200, Outcome: "ok"})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := w.Close(ctx); err != nil {
		t.Fatalf("close: %v (a conflict waited out the hour's backoff)", err)
	}
	if n := countRecords(t, f.Store); n != 1 {
		t.Fatalf("%d records written, want 1", n)
	}
	if err := w.Health(context.Background()); err != nil || len(logs) != 0 {
		t.Fatalf("after two lost conflicts: health %v, logs %q; want healthy and quiet", err, logs)
	}
}

// TestWriterCommitHandsBackInAnOutage (hostile review N13): a Commit
// whose batch meets a failing database is answered at the first failed
// attempt, not after the outage's retries, with ErrHandedBack, and its
// record is out of the batch (its caller records what the request
// became); the batch's other records wait out the outage and are written.
func TestWriterCommitHandsBackInAnOutage(t *testing.T) {
	s := newFlaky(t)
	s.failures = 1 << 30 // down until the test says
	// The first retry comes a second after the first attempt fails.
	w := NewWriter(s, WriterOptions{FlushInterval: time.Hour, RetryBackoff: time.Second})
	w.Start()
	defer w.Close(context.Background())
	queued, waited := sampleRecord(1), sampleRecord(2)
	queued.RequestID, waited.RequestID = "queued", "waited"
	if !w.Enqueue(queued) {
		t.Fatal("enqueue refused")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	err := w.Commit(ctx, waited)
	if took := time.Since(start); took >= time.Second {
		t.Errorf("Commit answered after %v: it waited for the retries", took)
	}
	if !errors.Is(err, ErrHandedBack) || !strings.Contains(err.Error(), "database is locked") {
		t.Fatalf("Commit during the outage: %v, want ErrHandedBack with the database's error", err)
	}
	s.mu.Lock()
	s.failures = 0
	s.mu.Unlock()
	for deadline := time.Now().Add(10 * time.Second); countRecords(t, s) == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the queued record was not written after the outage")
		}
	}
	got, err := s.Query(context.Background(), Filter{From: t0.Add(-time.Hour), To: t0.Add(time.Hour)})
	if err != nil || len(got) != 1 || got[0].RequestID != "queued" {
		t.Fatalf("stored %+v (%v), want only the queued record: the handed-back one is its caller's", got, err)
	}
}

// TestWriterCommitDuringRetriesHandsBack: a Commit that arrives while the
// writer is retrying an earlier batch through an outage (hung or refusing
// database) is handed back at once; it used to wait in the queue behind
// the retries until its caller's deadline, whose error the gateway reads
// as "queued", answering a durable request unrecorded.
func TestWriterCommitDuringRetriesHandsBack(t *testing.T) {
	s := newFlaky(t)
	s.block = true // every insert hangs until its timeout
	w := NewWriter(s, WriterOptions{FlushInterval: time.Millisecond, WriteTimeout: 20 * time.Millisecond,
		RetryBackoff: time.Hour, Retries: -1})
	w.Start()
	defer func() {
		// The retries never end on their own: cut them short.
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		_ = w.Close(ctx)
	}()
	if !w.Enqueue(sampleRecord(1)) {
		t.Fatal("enqueue refused")
	}
	for deadline := time.Now().Add(10 * time.Second); !w.failing.Load(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the first insert never failed")
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	err := w.Commit(ctx, sampleRecord(2))
	if !errors.Is(err, ErrHandedBack) {
		t.Fatalf("Commit during the retries = %v after %v, want ErrHandedBack", err, time.Since(start))
	}
	if st := w.Stats(); st.QueueDepth != 0 {
		t.Errorf("Stats %+v: the handed-back record is still queued", st)
	}
}
