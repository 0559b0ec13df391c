package ledger

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// WriterOptions tune a Writer. Zero values take the defaults.
type WriterOptions struct {
	QueueSize     int           // records waiting for the database; default 10000
	BatchSize     int           // records per insert; default 256
	FlushInterval time.Duration // longest wait of a partial batch; default 200ms
	// Logger receives write failures. Messages carry counts and the
	// database error, never record contents.
	Logger func(msg string, err error)
	// RetryBackoff is the wait before the first retry of a failed batch,
	// doubled for each later one; default 100ms.
	RetryBackoff time.Duration
	// Retries is how many times a batch the database failed is retried
	// before it is given up. Default (0): until the database answers, the
	// wait doubling up to 5 s, so an outage loses nothing while the queue
	// holds what arrives meanwhile.
	Retries int
	// WriteTimeout bounds one insert: a database that stops answering (a
	// dead connection, a lock another session holds) then counts as
	// failing, for readiness and the retries, instead of holding the
	// writer, and every durable request waiting on it, indefinitely.
	// Default 5s.
	WriteTimeout time.Duration
	// Done, when set, hears each batch once the writer is through with
	// it (written, or given up after its retries), so that what counts
	// spend in memory can stop once the database counts it.
	Done func(batch []Record)
}

// WriterStats are the writer's counters, for metrics.
type WriterStats struct {
	QueueDepth  int64 // records queued now
	Dropped     int64 // records refused because the queue was full or closed
	Written     int64 // records the store accepted
	WriteErrors int64 // records lost after every retry failed
}

// Writer moves records from the request path to the store: Enqueue never
// waits on the database, and one background goroutine inserts in batches.
type Writer struct {
	s    Store
	opts WriterOptions
	q    chan queued

	closed   atomic.Bool
	inflight atomic.Int64 // Enqueue calls between their closed check and their send
	stop     chan struct{}
	done     chan struct{}
	start    sync.Once
	closing  sync.Once
	// abort cancels inserts when Close's context expires.
	abortCtx context.Context
	abort    context.CancelFunc

	dropped, written, writeErrors atomic.Int64
	// failing is set while the database refuses writes (the last insert
	// failed for a reason other than a row's data) and cleared by the
	// next insert that succeeds; readiness reports it.
	failing atomic.Bool
	// retrying is set while write waits out an outage between attempts:
	// a Commit then would wait in the queue behind the retries, so it is
	// handed back instead of queued.
	retrying atomic.Bool
}

// NewWriter returns a writer into s; call Start, then Close to flush.
func NewWriter(s Store, opts WriterOptions) *Writer {
	if opts.QueueSize <= 0 {
		opts.QueueSize = 10000
	}
	if opts.BatchSize <= 0 {
		opts.BatchSize = 256
	}
	if opts.FlushInterval <= 0 {
		opts.FlushInterval = 200 * time.Millisecond
	}
	if opts.RetryBackoff <= 0 {
		opts.RetryBackoff = 100 * time.Millisecond
	}
	if opts.Retries <= 0 {
		opts.Retries = -1 // until the database answers
	}
	if opts.WriteTimeout <= 0 {
		opts.WriteTimeout = 5 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = func(string, error) {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Writer{
		s: s, opts: opts,
		q:        make(chan queued, opts.QueueSize),
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
		abortCtx: ctx, abort: cancel,
	}
}

// queued is a record on its way to the store; done, when set, hears how
// the insert of its batch ended.
type queued struct {
	rec  Record
	done chan error
}

// ErrNotQueued is Commit's answer when the queue is full or the writer
// closed: the record was dropped and counted.
var ErrNotQueued = errors.New("ledger queue full or closed: record dropped")

// Enqueue queues r without blocking. It returns false, counting a drop,
// when the queue is full or the writer is closed.
func (w *Writer) Enqueue(r Record) bool {
	return w.enqueue(queued{rec: r})
}

// ErrHandedBack is Commit's answer when the database failed the insert
// of r's batch: the writer took r out of the batch it retries and gave it
// back, so it is not stored and will not be; the caller records what its
// request became instead (a durable request that could not be recorded is
// not answered as a success). Wrapped with the database's error.
var ErrHandedBack = errors.New("ledger write failed; the record was handed back")

// Commit queues r and waits until the batch holding it is in the database
// (durability sync): the writer flushes at once for a waiting record,
// taking along whatever else is queued, so concurrent requests share one
// insert (group commit). The wait ends at the first failed attempt, not
// after the retries an outage brings, and a Commit made while the writer
// retries an earlier batch is not queued at all: then the error wraps
// ErrHandedBack and r is not stored. Any other error (ctx's) means r is still queued
// and may be stored later.
func (w *Writer) Commit(ctx context.Context, r Record) error {
	if w.retrying.Load() {
		return fmt.Errorf("%w: %w", ErrHandedBack, ErrLedgerUnhealthy)
	}
	done := make(chan error, 1)
	if !w.enqueue(queued{rec: r, done: done}) {
		return ErrNotQueued
	}
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (w *Writer) enqueue(it queued) bool {
	it.rec.sanitize()
	w.inflight.Add(1)
	defer w.inflight.Add(-1)
	if w.closed.Load() {
		w.dropped.Add(1)
		return false
	}
	select {
	case w.q <- it:
		return true
	default:
		w.dropped.Add(1)
		return false
	}
}

// Start starts the background batching goroutine. Calling it again does
// nothing.
func (w *Writer) Start() {
	w.start.Do(func() { go w.run() })
}

// Close stops accepting records, writes everything queued and returns when
// done. If ctx expires first, pending inserts are cancelled, the records
// not written are counted as write errors, and ctx's error is returned.
func (w *Writer) Close(ctx context.Context) error {
	w.closing.Do(func() {
		w.closed.Store(true)
		// An Enqueue that saw closed == false may still be sending; wait for
		// it so its record is in the queue before the final drain.
		for w.inflight.Load() > 0 {
			runtime.Gosched()
		}
		close(w.stop)
	})
	w.Start()
	select {
	case <-w.done:
		w.abort()
		return nil
	case <-ctx.Done():
		w.abort()
		<-w.done
		return ctx.Err()
	}
}

// Stats returns the current counters.
func (w *Writer) Stats() WriterStats {
	return WriterStats{
		QueueDepth:  int64(len(w.q)),
		Dropped:     w.dropped.Load(),
		Written:     w.written.Load(),
		WriteErrors: w.writeErrors.Load(),
	}
}

func (w *Writer) run() {
	defer close(w.done)
	batch := make([]Record, 0, w.opts.BatchSize)
	var waiters []waiter
	t := time.NewTicker(w.opts.FlushInterval)
	defer t.Stop()
	flush := func() {
		if len(batch) > 0 {
			written, handedBack, err := w.write(batch, waiters)
			if w.opts.Done != nil {
				w.opts.Done(written)
			}
			clear(batch) // drop string references before reuse
			batch = batch[:0]
			if !handedBack {
				for _, wt := range waiters {
					wt.done <- err
				}
			}
			clear(waiters)
			waiters = waiters[:0]
		}
	}
	add := func(it queued) {
		if it.done != nil {
			waiters = append(waiters, waiter{at: len(batch), done: it.done})
		}
		batch = append(batch, it.rec)
		if len(batch) >= w.opts.BatchSize {
			flush()
		}
	}
	for {
		select {
		case it := <-w.q:
			add(it)
			if len(waiters) == 0 {
				continue
			}
			// Someone waits: take what else is queued now, then write.
		drain:
			for len(batch) > 0 && len(batch) < w.opts.BatchSize {
				select {
				case it := <-w.q:
					add(it)
				default:
					break drain
				}
			}
			flush()
		case <-t.C:
			flush()
		case <-w.stop:
			// Enqueue refuses new records now, so the queue only shrinks.
			for {
				select {
				case it := <-w.q:
					add(it)
				default:
					flush()
					return
				}
			}
		}
	}
}

// maxRetryBackoff bounds the wait between retries of a failing database.
const maxRetryBackoff = 5 * time.Second

// waiter is a Commit waiting on the record at index at of the batch.
type waiter struct {
	at   int
	done chan error
}

// write inserts one batch, retrying with backoff; a batch that still fails
// is counted and logged rather than dropped unnoticed. When the store says
// a row's data was refused, the batch is split until the bad rows are
// alone: the other records are written, and only those are lost. It
// returns the records it was through with (for WriterOptions.Done) and
// whether it answered the waiters itself.
//
// The first failure for any other reason (the database is down) answers
// every Commit waiting on the batch at once, with ErrHandedBack, and takes
// their records out of the batch it retries: a durable request must not
// hold its answer through an outage's retries and then deliver it
// unrecorded. The records of requests not waiting stay and are retried.
func (w *Writer) write(batch []Record, waiters []waiter) ([]Record, bool, error) {
	backoff := w.opts.RetryBackoff
	var err error
	conflicts := 0
	handedBack := false
	defer w.retrying.Store(false)
	for attempt := 0; ; attempt++ {
		err = w.insert(batch)
		if err == nil {
			w.written.Add(int64(len(batch)))
			w.failing.Store(false)
			return batch, handedBack, nil
		}
		if w.conflicted(err) && conflicts < maxConflictRetries {
			// Another writer held the rows: not an outage, so neither a
			// log line nor a readiness failure, just another go.
			conflicts++
			attempt--
			continue
		}
		if w.rejectsRow(err) {
			lost := w.isolate(batch)
			if lost == 0 {
				return batch, handedBack, nil
			}
			w.writeErrors.Add(int64(lost))
			w.opts.Logger(fmt.Sprintf("ledger: %d of %d usage records refused by the database and set aside; the rest were written", lost, len(batch)), err)
			return batch, handedBack, err
		}
		// retrying before failing: a Commit that sees the outage (as
		// readiness does) is handed back, not queued behind the wait.
		w.retrying.Store(true)
		w.failing.Store(true)
		if len(waiters) > 0 && !handedBack {
			batch = handBack(batch, waiters, err)
			handedBack = true
			if len(batch) == 0 {
				return batch, true, err
			}
		}
		if (w.opts.Retries >= 0 && attempt >= w.opts.Retries) || w.abortCtx.Err() != nil {
			break
		}
		if w.opts.Retries < 0 && (attempt == 0 || attempt%20 == 0) {
			w.opts.Logger(fmt.Sprintf("ledger: writing %d usage records failed; retrying until the database answers, new records wait in the queue", len(batch)), err)
		}
		select {
		case <-time.After(backoff):
		case <-w.abortCtx.Done():
		}
		backoff = min(backoff*2, maxRetryBackoff)
	}
	w.writeErrors.Add(int64(len(batch)))
	if errors.Is(err, context.Canceled) && w.abortCtx.Err() != nil {
		w.opts.Logger(fmt.Sprintf("ledger: shutdown deadline passed; %d usage records not written", len(batch)), err)
		return batch, handedBack, err
	}
	w.opts.Logger(fmt.Sprintf("ledger: %d usage records not written after %d retries", len(batch), w.opts.Retries), err)
	return batch, handedBack, err
}

// handBack answers each waiter that its record is handed back, and
// returns batch without those records, in order.
func handBack(batch []Record, waiters []waiter, err error) []Record {
	out := batch[:0]
	next := 0
	for i := range batch {
		if next < len(waiters) && waiters[next].at == i {
			waiters[next].done <- fmt.Errorf("%w: %w", ErrHandedBack, err)
			next++
			continue
		}
		out = append(out, batch[i])
	}
	clear(batch[len(out):])
	return out
}

// insert is one bounded insert attempt.
func (w *Writer) insert(recs []Record) error {
	ctx, cancel := context.WithTimeout(w.abortCtx, w.opts.WriteTimeout)
	defer cancel()
	return w.s.Insert(ctx, recs)
}

// maxConflictRetries bounds the immediate retries of a batch that lost a
// lock conflict (a deadlock or serialization failure between instances).
const maxConflictRetries = 3

func (w *Writer) conflicted(err error) bool {
	c, ok := w.s.(Conflicter)
	return ok && c.Conflicted(err)
}

func (w *Writer) rejectsRow(err error) bool {
	rr, ok := w.s.(RowRejecter)
	return ok && rr.RejectsRow(err)
}

// isolate writes batch, whose insert was refused for a row's data, in
// halves until each refused row stands alone, and returns how many rows
// were not written. k bad rows cost about 2k·log2(n) inserts.
func (w *Writer) isolate(batch []Record) (lost int) {
	if len(batch) == 1 {
		return 1
	}
	for _, half := range [2][]Record{batch[:len(batch)/2], batch[len(batch)/2:]} {
		err := w.insert(half)
		switch {
		case err == nil:
			w.written.Add(int64(len(half)))
			w.failing.Store(false)
		case w.rejectsRow(err):
			lost += w.isolate(half)
		default:
			// The database itself failed now: this half is lost like any
			// batch whose retries ran out.
			lost += len(half)
		}
	}
	return lost
}

// ErrLedgerUnhealthy is readiness's answer while records cannot be
// written. It names no database detail: readiness needs no key.
var ErrLedgerUnhealthy = errors.New("ledger writes are failing; the gateway's log says why")

// ErrLedgerQueueFull is readiness's answer while the queue is full and
// new records are being dropped.
var ErrLedgerQueueFull = errors.New("ledger queue is full; records are being dropped")

// Failing reports whether the last write failed and no write or probe has
// succeeded since: what the writer knows, without asking the database.
func (w *Writer) Failing() bool { return w.failing.Load() }

// Health reports whether records reach the database now. After a failed
// write it asks the store to prove it can take a row (an insert rolled
// back), so an idle gateway whose database came back is ready again
// without waiting for traffic that its unreadiness keeps away.
func (w *Writer) Health(ctx context.Context) error {
	if len(w.q) >= cap(w.q) {
		return ErrLedgerQueueFull
	}
	if !w.failing.Load() {
		return nil
	}
	if p, ok := w.s.(Prober); ok && p.Probe(ctx) == nil {
		w.failing.Store(false)
		return nil
	}
	return ErrLedgerUnhealthy
}
